<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Lagwatch\Router\Exception\TlsException;
use Lagwatch\Router\Tests\Integration\Sandbox;
use Lagwatch\Router\Tls\TlsProbe;

/**
 * The router's MySQL connections over TLS: the servers refuse a plaintext TCP login
 * (require_secure_transport), so reads served by replicas and writes on the primary prove it, and
 * each session says so (Ssl_cipher). A replica whose TLS fails is a replica connect failure,
 * named and skipped; the primary's is the application's PDOException (a TlsException).
 */
final class MysqlTlsTest extends TlsTestCase
{
    protected function setUp(): void
    {
        parent::setUp();
        TlsProbe::forget();
    }

    public function testThePlaintextLoginIsRefusedAndTheRouterReadsOnReplicasAndWritesOnThePrimaryOverTls(): void
    {
        foreach (['primary', 'replica1', 'replica2'] as $name) {
            $plain = $this->server($name);
            try {
                new \PDO($plain['dsn'], $plain['user'], $plain['password']);
                self::fail("$name took a plaintext login");
            } catch (\PDOException $e) {
                self::assertStringContainsString('[1045]', $e->getMessage(), $name);
            }
        }

        $router = $this->router();
        $seen = [];
        self::assertTrue(Sandbox::waitFor(function () use ($router, &$seen): bool {
            [$port, $cipher, $version] = $this->readOnAReplica($router);
            self::assertNotSame('', $cipher);
            self::assertMatchesRegularExpression('/^TLSv1\.[23]$/', $version);
            $seen[$port] = true;
            return count($seen) === 2;
        }, 10.0), 'both replicas did not serve: ' . json_encode($seen));

        self::assertSame(1, $router->execute('UPDATE lwtest.tls_items SET v = v + 1 WHERE id = 1'));
        self::assertSame('write', $router->routeInfo()->reason);
        self::assertSame('primary', $router->routeInfo()->selected);
        self::assertSame(1, $router->stats()['tokens_taken'], 'the token, taken on the TLS connection');
        // Read-your-writes over TLS: the next read where the write is.
        $v = (int) $this->sandbox->adminQuery('primary', 'SELECT v FROM lwtest.tls_items WHERE id = 1');
        self::assertSame($v, (int) $router->query('SELECT v FROM lwtest.tls_items WHERE id = 1')->fetchColumn());
        $primary = $router->connectionFor('UPDATE lwtest.tls_items SET v = v WHERE id = 0');
        self::assertNotSame('', self::sessionTls($primary)['Ssl_cipher']);
        self::assertSame($this->sandbox->port('primary'), (int) $primary->query('SELECT @@port')->fetchColumn());
        self::assertSame(0, $router->stats()['replica_connect_errors']);
        self::assertSame([], $this->warnings());
    }

    /** @return iterable<string, array{string, string}> */
    public static function replicaFailures(): iterable
    {
        yield 'another CA in ca_file' => ['other_ca', 'unknown_ca'];
        yield 'a DSN host the certificate lacks (127.1)' => ['name', 'name_mismatch'];
        yield 'a server without TLS' => ['plain', 'not_tls'];
        yield 'TLS 1.2 with min_version 1.3' => ['tls12', 'handshake'];
        yield 'a cert_file that does not exist' => ['missing_cert', 'config'];
    }

    /** @dataProvider replicaFailures */
    public function testAReplicaWhoseTlsFailsIsAConnectFailureNamedAndSkipped(string $case, string $reason): void
    {
        $r1 = $this->sandbox->id('replica1');
        $replica = match ($case) {
            'other_ca' => $this->server('replica1') + ['tls' => ['ca_file' => Certs::otherCa()]],
            'name' => $this->server('replica1', '127.1'),
            'plain' => $this->server('replica1', '127.0.0.1', ExtraServers::mariadb('plain', self::USER, self::password())),
            'tls12' => $this->server('replica1', '127.0.0.1', ExtraServers::mariadb('tls12', self::USER, self::password()))
                + ['tls' => ['min_version' => '1.3']],
            'missing_cert' => $this->server('replica1') + ['tls' => [
                'cert_file' => ExtraServers::dir() . '/no-such.pem', 'key_file' => $this->sandbox->env('TLS_CLIENT_KEY'),
            ]],
        };
        $router = $this->router(['replicas' => [$r1 => $replica, $this->sandbox->id('replica2') => $this->server('replica2')]]);
        $ports = [];
        $began = microtime(true);
        // 30 reads at least, and until replica2 served one (it may be passed over for a moment).
        while (count($ports) < 30 || (!in_array($this->sandbox->port('replica2'), $ports, true) && microtime(true) - $began < 5.0)) {
            $ports[] = (int) $router->query(self::TLS_READ)->fetch(\PDO::FETCH_ASSOC)['port'];
        }
        self::assertNotContains($this->sandbox->port('replica1'), $ports);
        self::assertNotContains(ExtraServers::port(ExtraServers::MARIADB), $ports);
        self::assertContains($this->sandbox->port('replica2'), $ports);
        self::assertSame(1, $router->stats()['replica_connect_errors'], 'tried once, then skipped for the request');
        $warnings = $this->warningsWith("route: cannot connect to replica $r1 (TLS $reason with MySQL $r1: ");
        self::assertCount(1, $warnings, json_encode($this->logger->lines));
        self::assertStringEndsWith('); skipped for the rest of the request', $warnings[0]);
    }

    public function testTls12IsAcceptedAtMinVersion12(): void
    {
        $port = ExtraServers::mariadb('tls12', self::USER, self::password());
        $router = $this->router(['primary' => ['host' => '127.0.0.1', 'port' => $port] + $this->server('primary', '127.0.0.1', $port)]);
        $pdo = $router->connectionFor('UPDATE lwtest.t SET a = 1');
        self::assertSame('TLSv1.2', self::sessionTls($pdo)['Ssl_version']);
    }

    public function testAPrimaryWhoseTlsFailsGivesTheApplicationAPdoExceptionNamingTheReasonWhileReadsGoOn(): void
    {
        $router = $this->router([
            'primary' => ['host' => '127.0.0.1', 'port' => $this->sandbox->port('primary')] + $this->server('primary')
                + ['tls' => ['ca_file' => Certs::otherCa()]],
        ]);
        try {
            $router->execute('UPDATE lwtest.tls_items SET v = v + 1 WHERE id = 1');
            self::fail('the write ran');
        } catch (TlsException $e) {
            self::assertInstanceOf(\PDOException::class, $e);
            self::assertSame('unknown_ca', $e->reason);
            self::assertStringStartsWith('TLS unknown_ca with MySQL ' . $this->sandbox->id('primary') . ": the server's"
                . ' certificate (CN=localhost, issued by CN=lagwatch sandbox CA) does not chain to a CA of ca_file '
                . Certs::otherCa() . ' (PDO: SQLSTATE[HY000] [2002] Cannot connect to MySQL using SSL)', $e->getMessage());
        }
        // Reads go on on the replicas; one that falls back to the primary (no replica provably
        // fresh for a moment) fails as the write did.
        $served = Sandbox::waitFor(static function () use ($router): bool {
            try {
                $router->query(self::TLS_READ)->fetchAll();
            } catch (TlsException $e) {
                self::assertSame('primary', $router->routeInfo()->selected);
                self::assertSame('unknown_ca', $e->reason);
                return false;
            }
            return $router->routeInfo()->selected !== 'primary';
        }, 5.0);
        self::assertTrue($served, 'no read on a replica');
    }

    public function testWithVerificationOffAReplicaOfAnUnknownCaIsUsedWithAWarning(): void
    {
        $r1 = $this->sandbox->id('replica1');
        $router = $this->router(['replicas' => [
            $r1 => $this->server('replica1') + ['tls' => ['ca_file' => Certs::otherCa(), 'verify_server_cert' => false]],
            $this->sandbox->id('replica2') => $this->server('replica2'),
        ]]);
        self::assertTrue(Sandbox::waitFor(function () use ($router): bool {
            [$port, $cipher] = $this->readOnAReplica($router);
            self::assertNotSame('', $cipher);
            return $port === $this->sandbox->port('replica1');
        }, 10.0));
        self::assertSame(0, $router->stats()['replica_connect_errors']);
        self::assertSame(["route: TLS to MySQL $r1 does not verify its certificate (replicas.$r1.tls.verify_server_cert"
            . ' is false): anyone on the path can pose as the server'], $this->warnings());
    }
}
