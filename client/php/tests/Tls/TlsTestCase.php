<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Lagwatch\Router\Router;
use Lagwatch\Router\Tests\Integration\Sandbox;
use Lagwatch\Router\Tests\Integration\SandboxTestCase;
use PHPUnit\Framework\Assert;

/**
 * A test on the TLS sandbox (scripts/sandbox --tls, LW_PHP_SANDBOX_TLS=1): every mariadbd with
 * require_secure_transport=ON (a TCP login must be TLS; root by unix socket still works), Redis
 * on a TLS port only with client certificates required, lagwatch itself over TLS as its ACL
 * user. The router connects by TCP as an account of its own, with the sandbox's CA and client
 * certificate in its `tls` blocks.
 */
abstract class TlsTestCase extends SandboxTestCase
{
    protected const USER = 'lwtls';
    /** A plain read whose answer says where it ran and whether that session is encrypted. */
    protected const TLS_READ = "SELECT @@port AS port, (SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS"
        . " WHERE VARIABLE_NAME = 'SSL_CIPHER') AS cipher, (SELECT VARIABLE_VALUE FROM"
        . " information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_VERSION') AS version";

    private static ?string $password = null;

    public static function setUpBeforeClass(): void
    {
        ExtraServers::stopLeftovers();
        $s = Sandbox::get();
        Assert::assertSame('1', $s->env('TLS'), 'the tls suite needs a sandbox built with --tls (LW_PHP_SANDBOX_TLS=1)');
        self::$password ??= bin2hex(random_bytes(12));
        $admin = $s->admin('primary');
        $admin->exec("CREATE OR REPLACE USER '" . self::USER . "'@'127.0.0.1' IDENTIFIED BY '" . self::$password . "'");
        $admin->exec("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON lwtest.* TO '" . self::USER . "'@'127.0.0.1'");
        $admin->exec('CREATE TABLE IF NOT EXISTS lwtest.tls_items (id INT AUTO_INCREMENT PRIMARY KEY, v BIGINT NOT NULL)');
        $admin->exec('INSERT IGNORE INTO lwtest.tls_items VALUES (1, 0), (2, 0)');
        $pos = $admin->query('SELECT @@gtid_binlog_pos')->fetchColumn();
        foreach (['replica1', 'replica2'] as $r) {
            Assert::assertSame(0, (int) $s->adminQuery($r, "SELECT MASTER_GTID_WAIT('$pos', 10)"));
        }
    }

    public static function tearDownAfterClass(): void
    {
        ExtraServers::stopAll();
    }

    protected static function password(): string
    {
        return (string) self::$password;
    }

    /** A server's entry: by TCP, as the test's account, in lwtest. */
    protected function server(string $name, string $host = '127.0.0.1', ?int $port = null): array
    {
        $port ??= $this->sandbox->port($name);
        return ['dsn' => "mysql:host=$host;port=$port;dbname=lwtest", 'user' => self::USER, 'password' => self::password()];
    }

    /**
     * The router's configuration for the TLS sandbox: every server by TCP with TLS (the router's
     * `tls` block: the sandbox's CA, its client certificate), Redis over TLS as lagwatch-router.
     *
     * @param array<string, mixed> $changes merged over it (top-level keys replaced)
     * @return array<string, mixed>
     */
    protected function config(array $changes = []): array
    {
        $s = $this->sandbox;
        return array_replace([
            'app' => 'phptls',
            'primary' => ['host' => '127.0.0.1', 'port' => $s->port('primary')] + $this->server('primary'),
            'replicas' => [$s->id('replica1') => $this->server('replica1'), $s->id('replica2') => $this->server('replica2')],
            'tls' => $s->tlsBlock(),
            'redis' => $s->routerRedis(),
            'logger' => $this->logger,
        ], $changes);
    }

    /** The router's `redis` block with $tls merged over its `tls`. */
    protected function redisWith(array $tls, array $redis = []): array
    {
        $config = array_replace($this->sandbox->routerRedis(), $redis);
        $config['tls'] = array_replace($config['tls'], $tls);
        return $config;
    }

    /**
     * Runs TLS_READ through $router until a replica answers (bounded staleness may pass one over
     * for a moment): [port, cipher, version] of that answer.
     *
     * @return array{int, string, string}
     */
    protected function readOnAReplica(Router $router, float $timeoutS = 5.0): array
    {
        $row = null;
        $served = Sandbox::waitFor(function () use ($router, &$row): bool {
            $row = $router->query(self::TLS_READ)->fetch(\PDO::FETCH_ASSOC);
            return !in_array($router->routeInfo()?->selected, ['primary', null], true);
        }, $timeoutS);
        self::assertTrue($served, 'no read on a replica: ' . json_encode($router->routeInfo()) . ' '
            . json_encode($this->logger->lines));
        return [(int) $row['port'], (string) $row['cipher'], (string) $row['version']];
    }

    /** @return array<string, string> Ssl_cipher and Ssl_version of $pdo's session */
    protected static function sessionTls(\PDO $pdo): array
    {
        return $pdo->query("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_cipher', 'Ssl_version')")
            ->fetchAll(\PDO::FETCH_KEY_PAIR);
    }

    /**
     * The warnings logged but for a no-usable-replica episode's (a moment without a provably
     * fresh replica on a loaded 2-core host).
     *
     * @return list<string>
     */
    protected function warnings(): array
    {
        return array_values(array_filter(
            $this->logger->at('warning'),
            static fn ($l) => !str_starts_with($l, 'route: no usable replica ('),
        ));
    }

    /** @return list<string> the warnings logged that contain $text */
    protected function warningsWith(string $text): array
    {
        return array_values(array_filter($this->logger->at('warning'), static fn ($l) => str_contains($l, $text)));
    }
}
