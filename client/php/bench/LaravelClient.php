<?php

declare(strict_types=1);

namespace Lagwatch\Router\Bench;

use Illuminate\Cache\ArrayStore;
use Illuminate\Cache\Repository;
use Illuminate\Container\Container;
use Illuminate\Database\Capsule\Manager as Capsule;
use Illuminate\Database\Connection;
use Lagwatch\Router\Laravel\Lagwatch;
use Lagwatch\Router\Laravel\LagwatchMySqlConnection;
use Lagwatch\Router\RouterDependencies;
use Lagwatch\Router\SeededRandom;
use Lagwatch\Router\Session\Psr16Store;
use RuntimeException;

/**
 * bench/stale_reads' Laravel rows (Illuminate Database 8.83 from Debian's package): each write()
 * and read() is one request with a Capsule and connection of its own, as PHP-FPM would make them.
 *
 *   laravel-stock  Laravel's own read/write split as a typical app configures it: `read` (both
 *                  replicas, one picked per request), `write` (the primary), `sticky` => true, no
 *                  timeouts, no lagwatch. The serving server from @@port.
 *   laravel        the integration (LagwatchMySqlConnection): the session's token carried to the
 *                  next request by a Psr16Store (an in-process cache standing in for the app's),
 *                  replica connect and read timeouts of 2 s. The serving server from routeInfo().
 */
final class LaravelClient implements BenchClient
{
    /** The last request's Capsule, freed when the next request starts. */
    private ?Capsule $capsule = null;

    /** @param array<string, mixed> $config the connection's config */
    private function __construct(private readonly array $config, private readonly bool $lagwatch, private readonly int $basePort)
    {
    }

    /** @param array<string, string> $o the worker's options */
    public static function create(string $mode, array $o): BenchClient
    {
        foreach (['Illuminate/Container', 'Illuminate/Events', 'Illuminate/Database', 'Illuminate/Cache', 'Psr/SimpleCache'] as $p) {
            require_once $p . '/autoload.php';
        }
        $dir = $o['dir'];
        $port = (int) $o['base-port'];
        $socket = static fn (string $name): string => "$dir/$name/mysqld.sock";
        $base = [
            'driver' => 'mysql',
            'database' => 'lwbench',
            'username' => 'root',
            'password' => '',
            'charset' => 'utf8mb4',
            'collation' => 'utf8mb4_unicode_ci',
            'prefix' => '',
        ];
        if ($mode === 'laravel-stock') {
            return new self($base + [
                'read' => [['unix_socket' => $socket('replica1')], ['unix_socket' => $socket('replica2')]],
                'write' => ['unix_socket' => $socket('primary')],
                'sticky' => true,
            ], false, $port);
        }
        if ($mode !== 'laravel') {
            throw new RuntimeException("LaravelClient: no mode $mode (laravel-stock, laravel)");
        }
        // The routers' draws from one seeded source across the run's requests.
        Lagwatch::install(null, new RouterDependencies(random: new SeededRandom((int) $o['seed'])));
        $cache = new Repository(new ArrayStore());
        $client = 'bench-' . $o['role'] . '-' . $o['order-id'] . '-' . $o['seed'];
        return new self($base + [
            'host' => '127.0.0.1',
            'port' => $port,
            'unix_socket' => $socket('primary'),
            'lagwatch' => [
                'app' => $o['app'],
                'redis' => SandboxRedis::config($o['dir'], $port),
                'replicas' => [
                    '127.0.0.1:' . ($port + 1) => ['unix_socket' => $socket('replica1')],
                    '127.0.0.1:' . ($port + 2) => ['unix_socket' => $socket('replica2')],
                ],
                'replica_timeout' => 2,
                'replica_read_timeout' => 2,
                'token_store' => new Psr16Store($cache, $client),
            ],
        ], true, $port);
    }

    public function write(int $id): void
    {
        if ($this->request()->update(BenchClient::WRITE_SQL, [$id]) !== 1) {
            throw new RuntimeException("order $id does not exist");
        }
    }

    public function read(int $id): array
    {
        $c = $this->request();
        if ($c instanceof LagwatchMySqlConnection) {
            $row = $c->selectOne(BenchClient::READ_SQL, [$id]);
            $server = (string) $c->router()->routeInfo()?->selected;
        } else {
            $row = $c->selectOne(BenchClient::READ_SQL_WITH_PORT, [$id]);
            $port = is_object($row) ? (int) $row->{'@@port'} : 0;
            $server = $port === $this->basePort ? 'primary' : '127.0.0.1:' . $port;
        }
        if (!is_object($row)) {
            throw new RuntimeException("order $id: no row");
        }
        return [$server, (int) $row->seq, (int) $row->version];
    }

    public function versionOnPrimary(int $id): int
    {
        $rows = $this->request()->selectFromWriteConnection('SELECT version FROM orders WHERE id = ?', [$id]);
        if (!isset($rows[0])) {
            throw new RuntimeException("order $id: no row");
        }
        return (int) $rows[0]->version;
    }

    public function close(): void
    {
        // Each request's router flushed its rw_stats when its connection went away.
        $this->capsule?->getDatabaseManager()->purge();
        $this->capsule = null;
        gc_collect_cycles();
    }

    /**
     * A new request: a new Capsule and connection (the last one's router flushes as it goes). The
     * last request's objects are freed first, as the end of a PHP-FPM request would: the Capsule,
     * its container and the connection refer to each other, so without a cycle collection their
     * server connections would pile up until PHP's collector happens to run.
     */
    private function request(): Connection
    {
        if ($this->capsule !== null) {
            $this->capsule->getDatabaseManager()->purge();
            $this->capsule = null;
            gc_collect_cycles();
        }
        $capsule = $this->capsule = new Capsule(new Container());
        $capsule->addConnection($this->config);
        $c = $capsule->getConnection();
        if ($this->lagwatch !== $c instanceof LagwatchMySqlConnection) {
            throw new RuntimeException('LaravelClient: the connection is not what the mode says');
        }
        return $c;
    }
}
