<?php

declare(strict_types=1);

namespace Lagwatch\Router\Bench;

use Doctrine\DBAL\Connection;
use Doctrine\DBAL\Connections\PrimaryReadReplicaConnection;
use Doctrine\DBAL\DriverManager;
use Lagwatch\Router\Doctrine\RoutedConnection;
use Lagwatch\Router\Router;
use Lagwatch\Router\RouterDependencies;
use Lagwatch\Router\SeededRandom;
use Lagwatch\Router\Session\SymfonySessionStore;
use RuntimeException;
use Symfony\Component\HttpFoundation\Session\Session as SymfonySession;
use Symfony\Component\HttpFoundation\Session\Storage\MockArraySessionStorage;

require_once '/usr/share/php/Doctrine/DBAL/autoload.php';
require_once '/usr/share/php/Symfony/Component/HttpFoundation/autoload.php';

/**
 * Doctrine DBAL 3.6 as bench/stale_reads' PHP rows (stale_reads_worker.php --router MODE), each
 * write() and read() one request with a new connection object:
 *
 * - `doctrine-stock`: PrimaryReadReplicaConnection over pdo_mysql with both replicas, as an
 *   application configures it (no timeouts, no lagwatch): a read goes to a replica picked at random
 *   once per request; the server is the answer's @@port.
 * - `doctrine`: RoutedConnection (lagwatch's router, 2 s connect and read timeouts on replicas),
 *   the session's read-your-writes state carried between requests only in the user's Symfony
 *   session (a SymfonySessionStore over one MockArraySessionStorage, saved at each request's end);
 *   the server is the router's routeInfo().
 */
final class DoctrineClient implements BenchClient
{
    private MockArraySessionStorage $storage;
    private int $requests = 0;

    /** @param array<string, string> $o the worker's options */
    private function __construct(private readonly string $mode, private readonly array $o)
    {
        $this->storage = new MockArraySessionStorage();
    }

    /** @param array<string, string> $o */
    public static function create(string $mode, array $o): BenchClient
    {
        if ($mode !== 'doctrine' && $mode !== 'doctrine-stock') {
            throw new RuntimeException("no Doctrine mode $mode (doctrine, doctrine-stock)");
        }
        return new self($mode, $o);
    }

    public function write(int $id): void
    {
        $this->request(static function (Connection $c) use ($id): void {
            if ((int) $c->executeStatement(BenchClient::WRITE_SQL, [$id]) !== 1) {
                throw new RuntimeException("order $id does not exist");
            }
        });
    }

    public function read(int $id): array
    {
        return $this->request(function (Connection $c) use ($id): array {
            if ($c instanceof RoutedConnection) {
                $row = $c->fetchNumeric(BenchClient::READ_SQL, [$id]);
                $server = (string) $c->router()->routeInfo()?->selected;
            } else {
                $row = $c->fetchNumeric(BenchClient::READ_SQL_WITH_PORT, [$id]);
                $server = is_array($row) ? $this->server((int) $row[2]) : '';
            }
            if (!is_array($row)) {
                throw new RuntimeException("order $id: no row");
            }
            return [$server, (int) $row[0], (int) $row[1]];
        });
    }

    public function versionOnPrimary(int $id): int
    {
        return $this->request(static function (Connection $c) use ($id): int {
            assert($c instanceof PrimaryReadReplicaConnection);
            $c->ensureConnectedToPrimary();
            return (int) $c->fetchOne('SELECT version FROM lwbench.orders WHERE id = ?', [$id]);
        });
    }

    public function close(): void
    {
    }

    /**
     * Runs $body as one request: a new connection (and, routed, a new Symfony session object over
     * the user's storage, saved at the end); the connection is closed after it.
     *
     * @template T
     * @param callable(Connection): T $body
     * @return T
     */
    private function request(callable $body): mixed
    {
        ++$this->requests;
        if ($this->mode === 'doctrine-stock') {
            $c = DriverManager::getConnection($this->stockParams());
            try {
                return $body($c);
            } finally {
                $c->close();
            }
        }
        $session = new SymfonySession($this->storage);
        $c = DriverManager::getConnection(RoutedConnection::params(
            // Each request its own draw (a new router per request).
            new Router(
                $this->routerConfig(),
                new RouterDependencies(random: new SeededRandom((int) $this->o['seed'] * 1000003 + $this->requests)),
            ),
            new SymfonySessionStore($session),
            ['serverVersion' => 'mariadb-10.11.0'],
        ));
        try {
            return $body($c);
        } finally {
            $c->close();
            $c->router()->flush();
            $session->save();
        }
    }

    /** "primary" or "127.0.0.1:<port>" of the server whose @@port answered. */
    private function server(int $port): string
    {
        return $port === (int) $this->o['base-port'] ? 'primary' : '127.0.0.1:' . $port;
    }

    /** @return array<string, mixed> a stock PrimaryReadReplicaConnection with both replicas */
    private function stockParams(): array
    {
        $dir = $this->o['dir'];
        $server = static fn (string $name): array => [
            'unix_socket' => "$dir/$name/mysqld.sock",
            'user' => 'root',
            'password' => '',
        ];
        return [
            'wrapperClass' => PrimaryReadReplicaConnection::class,
            'driver' => 'pdo_mysql',
            'serverVersion' => 'mariadb-10.11.0',
            'primary' => $server('primary'),
            'replica' => [$server('replica1'), $server('replica2')],
        ];
    }

    /** @return array<string, mixed> the router's configuration, as the worker's lagwatch row */
    private function routerConfig(): array
    {
        $dir = $this->o['dir'];
        $port = (int) $this->o['base-port'];
        $server = static fn (string $name): array => [
            'dsn' => "mysql:unix_socket=$dir/$name/mysqld.sock",
            'user' => 'root',
            'password' => '',
        ];
        return [
            'app' => $this->o['app'],
            'primary' => ['host' => '127.0.0.1', 'port' => $port] + $server('primary'),
            'replicas' => [
                '127.0.0.1:' . ($port + 1) => $server('replica1'),
                '127.0.0.1:' . ($port + 2) => $server('replica2'),
            ],
            'redis' => SandboxRedis::config($dir, $port),
            'replica_timeout' => 2,
            'replica_read_timeout' => 2,
        ];
    }
}
