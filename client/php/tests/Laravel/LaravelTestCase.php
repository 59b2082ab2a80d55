<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Laravel;

use Illuminate\Container\Container;
use Illuminate\Database\Capsule\Manager as Capsule;
use Illuminate\Events\Dispatcher;
use Lagwatch\Router\Laravel\Lagwatch;
use Lagwatch\Router\Laravel\LagwatchMySqlConnection;
use Lagwatch\Router\Tests\Integration\Sandbox;
use Lagwatch\Router\Tests\Integration\SandboxTestCase;

/**
 * A Laravel test on the sandbox: Illuminate Database from Debian's package through Capsule, one
 * Capsule per "request", the connection a LagwatchMySqlConnection over the sandbox's servers.
 */
abstract class LaravelTestCase extends SandboxTestCase
{
    public static function setUpBeforeClass(): void
    {
        $admin = Sandbox::get()->admin('primary');
        $admin->exec('CREATE TABLE IF NOT EXISTS lwtest.lv_items (id INT AUTO_INCREMENT PRIMARY KEY,'
            . ' name VARCHAR(64) NOT NULL, version BIGINT NOT NULL DEFAULT 0)');
        $admin->exec("INSERT IGNORE INTO lwtest.lv_items (id, name) VALUES (1, 'one'), (2, 'two')");
        $pos = $admin->query('SELECT @@gtid_binlog_pos')->fetchColumn();
        foreach (['replica1', 'replica2'] as $r) {
            Sandbox::get()->adminQuery($r, "SELECT MASTER_GTID_WAIT('$pos', 10)");
        }
    }

    /**
     * The `mysql` connection's config: the primary by unix socket (its lagwatch id from host and
     * port), both replicas in the lagwatch block, 1 s replica timeouts.
     *
     * @param array<string, mixed> $lagwatch merged over the block
     * @return array<string, mixed>
     */
    protected function connectionConfig(array $lagwatch = []): array
    {
        $s = $this->sandbox;
        return [
            'driver' => 'mysql',
            'host' => '127.0.0.1',
            'port' => $s->port('primary'),
            'unix_socket' => $s->socket('primary'),
            'database' => 'lwtest',
            'username' => 'root',
            'password' => '',
            'charset' => 'utf8mb4',
            'collation' => 'utf8mb4_unicode_ci',
            'prefix' => '',
            'strict' => true,
            'sticky' => true,
            'lagwatch' => array_replace([
                'app' => 'lvtest',
                'redis' => $s->routerRedis(),
                'replicas' => [
                    $s->id('replica1') => ['unix_socket' => $s->socket('replica1')],
                    $s->id('replica2') => ['unix_socket' => $s->socket('replica2')],
                ],
                'replica_timeout' => 1,
                'replica_read_timeout' => 1,
                'logger' => $this->logger,
            ], $lagwatch),
        ];
    }

    /**
     * A new "request": a Capsule with the lagwatch connection as default, Eloquent booted on it.
     *
     * @param array<string, mixed> $lagwatch
     */
    protected function capsule(array $lagwatch = []): Capsule
    {
        Lagwatch::install();
        $capsule = new Capsule(new Container());
        $capsule->addConnection($this->connectionConfig($lagwatch));
        $capsule->setEventDispatcher(new Dispatcher(new Container()));
        $capsule->bootEloquent();
        return $capsule;
    }

    protected function lagwatch(Capsule $capsule): LagwatchMySqlConnection
    {
        $c = $capsule->getConnection();
        self::assertInstanceOf(LagwatchMySqlConnection::class, $c);
        return $c;
    }

    /** Where the connection's router sent the last statement: 'primary', 'replica1', 'replica2'. */
    protected function served(LagwatchMySqlConnection $c): ?string
    {
        return $this->where($c->router());
    }

    /**
     * Runs $read until a replica serves it, for up to 5 s: a loaded machine can leave no replica
     * provably fresh for a moment (the router then rightly reads the primary), and one sample
     * says nothing about where reads go. False if none did.
     */
    protected function untilAReplicaServes(LagwatchMySqlConnection $c, callable $read): bool
    {
        return Sandbox::waitFor(function () use ($c, $read) {
            $read();
            return in_array($this->served($c), ['replica1', 'replica2'], true);
        }, 5.0);
    }

    protected function nameOfPort(int $port): string
    {
        foreach (['primary', 'replica1', 'replica2'] as $n) {
            if ($this->sandbox->port($n) === $port) {
                return $n;
            }
        }
        return (string) $port;
    }
}
