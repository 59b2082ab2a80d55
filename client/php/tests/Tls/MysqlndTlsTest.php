<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Lagwatch\Router\Tests\Integration\Sandbox;

/**
 * What mysqlnd (PHP 8.2's pdo_mysql) does with each PDO::MYSQL_ATTR_SSL_* attribute, as
 * client/php/README.md ("TLS to MySQL") says and the router relies on: plain PDO against the TLS
 * sandbox (require_secure_transport=ON: a plaintext login is refused with 1045) and a MariaDB
 * without TLS. A PHP whose mysqlnd behaves otherwise fails here.
 */
final class MysqlndTlsTest extends TlsTestCase
{
    /**
     * @param array<int, mixed> $options
     * @return array<string, string>|string the session's Ssl_cipher/Ssl_version, or the connect error
     */
    private function connect(string $host, int $port, array $options): array|string
    {
        try {
            $pdo = new \PDO("mysql:host=$host;port=$port", self::USER, self::password(), $options + [
                \PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION,
                \PDO::ATTR_TIMEOUT => 2,
            ]);
        } catch (\PDOException $e) {
            return $e->getMessage();
        }
        return self::sessionTls($pdo);
    }

    private function ca(): string
    {
        return $this->sandbox->env('TLS_CA');
    }

    public function testSslCaAloneTurnsTlsOnAndVerifiesTheChainAndTheDsnHost(): void
    {
        $port = $this->sandbox->port('replica1');
        $tls = $this->connect('127.0.0.1', $port, [\PDO::MYSQL_ATTR_SSL_CA => $this->ca()]);
        self::assertIsArray($tls);
        self::assertNotSame('', $tls['Ssl_cipher']);
        // The chain: another CA is refused, with nothing more said than this.
        self::assertSame(
            'SQLSTATE[HY000] [2002] Cannot connect to MySQL using SSL',
            $this->connect('127.0.0.1', $port, [\PDO::MYSQL_ATTR_SSL_CA => Certs::otherCa()]),
        );
        // The name: the certificate is for 127.0.0.1 and localhost; 127.1 reaches the same server.
        self::assertSame(
            'SQLSTATE[HY000] [2002] Cannot connect to MySQL using SSL',
            $this->connect('127.1', $port, [\PDO::MYSQL_ATTR_SSL_CA => $this->ca()]),
        );
        self::assertSame(
            'SQLSTATE[HY000] [2002] Cannot connect to MySQL using SSL',
            $this->connect('127.1', $port, [\PDO::MYSQL_ATTR_SSL_CA => $this->ca(), \PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => true]),
        );
    }

    public function testVerifyServerCertFalseTurnsOffBothChainAndNameChecks(): void
    {
        $port = $this->sandbox->port('replica1');
        $off = [\PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => false];
        self::assertIsArray($this->connect('127.0.0.1', $port, [\PDO::MYSQL_ATTR_SSL_CA => Certs::otherCa()] + $off));
        self::assertIsArray($this->connect('127.1', $port, [\PDO::MYSQL_ATTR_SSL_CA => $this->ca()] + $off));
    }

    public function testVerifyServerCertAloneDoesNotTurnTlsOn(): void
    {
        $port = $this->sandbox->port('replica1');
        foreach ([true, false] as $verify) {
            $said = $this->connect('127.0.0.1', $port, [\PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => $verify]);
            self::assertIsString($said);
            self::assertStringContainsString('[1045] Access denied', $said, 'a plaintext login, refused by require_secure_transport');
        }
    }

    public function testACertificateWithoutSslCaIsVerifiedAgainstTheSystemsStore(): void
    {
        $port = $this->sandbox->port('replica1');
        $cert = [
            \PDO::MYSQL_ATTR_SSL_CERT => $this->sandbox->env('TLS_CLIENT_CERT'),
            \PDO::MYSQL_ATTR_SSL_KEY => $this->sandbox->env('TLS_CLIENT_KEY'),
        ];
        self::assertSame('SQLSTATE[HY000] [2002] Cannot connect to MySQL using SSL', $this->connect('127.0.0.1', $port, $cert));
        self::assertIsArray($this->connect('127.0.0.1', $port, $cert + [\PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => false]));
    }

    public function testAskedForTlsMysqlndRefusesAServerWithoutItBeforeLoggingIn(): void
    {
        $port = ExtraServers::mariadb('plain', self::USER, self::password());
        $admin = ExtraServers::mariadbAdmin();
        self::assertSame('DISABLED', $admin->query('SELECT @@have_ssl')->fetchColumn());
        $plain = $this->connect('127.0.0.1', $port, []);
        self::assertSame(['Ssl_cipher' => '', 'Ssl_version' => ''], $plain, 'the account logs in without TLS');
        $preauth = static fn (): int => (int) $admin->query("SHOW GLOBAL STATUS LIKE 'Aborted_connects_preauth'")
            ->fetch(\PDO::FETCH_NUM)[1];
        $before = $preauth();
        foreach ([[], [\PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => false]] as $more) {
            self::assertSame(
                'SQLSTATE[HY000] [2006] MySQL server has gone away',
                $this->connect('127.0.0.1', $port, [\PDO::MYSQL_ATTR_SSL_CA => $this->ca()] + $more),
            );
        }
        // The client left before its login: no password sent, nothing run in plaintext (the server
        // counts the aborted connection once its thread sees the close).
        self::assertTrue(Sandbox::waitFor(static fn () => $preauth() === $before + 2, 2.0), (string) $preauth());
    }

    public function testTlsOverAUnixSocketFails(): void
    {
        try {
            new \PDO('mysql:unix_socket=' . $this->sandbox->socket('primary'), 'root', '', [
                \PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION,
                \PDO::MYSQL_ATTR_SSL_CA => $this->ca(),
                \PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => false,
            ]);
            self::fail('connected');
        } catch (\PDOException $e) {
            self::assertSame('SQLSTATE[HY000] [2002] Cannot connect to MySQL using SSL', $e->getMessage());
        }
    }
}
