<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Cluster;

use Doctrine\DBAL\DriverManager;
use Illuminate\Container\Container;
use Illuminate\Database\Capsule\Manager as Capsule;
use Illuminate\Events\Dispatcher;
use Lagwatch\Router\Doctrine\RoutedConnection;
use Lagwatch\Router\Laravel\Lagwatch;
use Lagwatch\Router\Laravel\LagwatchMySqlConnection;
use Lagwatch\Router\Router;
use Lagwatch\Router\Tests\Integration\Sandbox;
use Lagwatch\Router\Tests\Unit\MemoryLogger;
use Lagwatch\Router\Tls\TlsReason;
use PHPUnit\Framework\TestCase;

require_once '/usr/share/php/Doctrine/DBAL/autoload.php';

/**
 * The router reading lagwatch's contract from a Redis Cluster through phpredis 5.3.7's
 * RedisCluster: a local cluster of three masters with a replica each (ClusterNodes), the
 * sandbox's ACL users made on every node, and the real lagwatch agent publishing there for the
 * sandbox's replicas (its configuration's redis.cluster). The cases run in order on one cluster
 * and one agent; a slot resharded, then a master killed, come last.
 */
final class ClusterTest extends TestCase
{
    private const PREFIX = 'slave_delay';
    private const SELECT = 'SELECT v FROM lwtest.pc WHERE id = 1';
    /** Routing is right again this soon after a master's death (2.2-2.7 s measured by the C++ test). */
    private const FOLLOWS_FAILOVER_WITHIN_S = 10.0;

    private static Sandbox $sandbox;
    private MemoryLogger $logger;
    /** @var list<string> why each read of the last routeReads() that went to the primary did */
    private array $toPrimary = [];

    public static function setUpBeforeClass(): void
    {
        self::$sandbox = $s = Sandbox::withoutLagwatch();
        $s->stopLagwatch();
        $s->admin('primary')->exec('CREATE TABLE IF NOT EXISTS lwtest.pc (id INT PRIMARY KEY, v BIGINT NOT NULL)');
        $s->admin('primary')->exec('INSERT IGNORE INTO lwtest.pc VALUES (1, 0)');
        ClusterNodes::startCluster();
        ClusterNodes::addUsers(ClusterNodes::sandboxUsers(), ClusterNodes::ports());
        // The sandbox's own configuration, its Redis replaced by the cluster.
        $config = $s->lagwatchConfig();
        unset($config['redis']['host'], $config['redis']['port']);
        $config['redis']['cluster'] = ClusterNodes::seeds();
        $s->startLagwatchWith($config);
    }

    public static function tearDownAfterClass(): void
    {
        self::$sandbox->stopLagwatch();
        ClusterNodes::stopAll();
    }

    protected function setUp(): void
    {
        $this->logger = new MemoryLogger();
        self::assertTrue(
            Sandbox::waitFor(fn (): bool => $this->healthy('replica1') && $this->healthy('replica2'), 20.0),
            "the agent's records in the cluster are not both healthy; its log:\n" . self::$sandbox->lagwatchLog(),
        );
    }

    public function testReadsGoToTheReplicasThatTheirRecordsOnTheClusterSayAreUsable(): void
    {
        // The keys a router reads are spread over the shards (no hash tag in the prefix): each
        // command goes to its own master.
        $masters = [];
        foreach ($this->contractKeys() as $key) {
            $masters[ClusterNodes::masterPortOf($key, ClusterNodes::aliveNode())] = true;
        }
        self::assertGreaterThanOrEqual(2, count($masters), 'the contract is on one master only');

        $router = $this->router();
        self::assertSame(['replica1', 'replica2'], array_keys($this->routeReads($router, 40)));
        self::assertSame(0, $router->stats()['redis_errors']);
        self::assertSame(40, $router->stats()['refreshes']);

        // A replica whose SQL thread stops leaves the choice as its record in the cluster says, and
        // comes back with it.
        $primary = self::$sandbox->admin('primary');
        self::$sandbox->admin('replica1')->exec('STOP SLAVE SQL_THREAD');
        try {
            self::assertTrue(Sandbox::waitFor(function () use ($primary): bool {
                $primary->exec('UPDATE lwtest.pc SET v = v + 1 WHERE id = 1');
                return !$this->healthy('replica1');
            }, 5.0), 'replica1 still healthy in the cluster with its SQL thread stopped');
            // Never replica1; replica2 takes the reads. The primary is the router's safe way out
            // when replica2's record is late or its verdict a probe's that answered late on a busy
            // host (1 of 20 reads went there once in CI, 3 of 20 another time): it may take a
            // few, at most a quarter.
            $routes = $this->routeReads($router, 20);
            self::assertArrayNotHasKey('replica1', $routes, json_encode($routes));
            self::assertSame(
                [],
                array_diff(array_keys($routes), ['replica2', 'primary']),
                json_encode($routes),
            );
            self::assertGreaterThanOrEqual(
                15,
                $routes['replica2'] ?? 0,
                json_encode($routes) . '; to the primary because: ' . json_encode($this->toPrimary),
            );
        } finally {
            self::$sandbox->admin('replica1')->exec('START SLAVE SQL_THREAD');
        }
        self::assertTrue(Sandbox::waitFor(function () use ($router): bool {
            $router->connectionFor(self::SELECT);
            return $this->where($router) === 'replica1';
        }, 5.0), 'replica1 not chosen again after its SQL thread started');
        self::assertSame(0, $router->stats()['redis_errors']);
    }

    public function testReadsAreCountedInTheAppsRwStatsOnTheClusterWhereTheAgentReadsThem(): void
    {
        $this->admin()->del('rw_stats:phpcluster');
        $router = $this->router(['app' => 'phpcluster']);
        $served = $this->routeReads($router, 25);
        $router->flush();
        $stats = $this->admin()->hGetAll('rw_stats:phpcluster');
        self::assertSame('25', $stats['reads_replica'] ?? null);
        foreach ($served as $where => $n) {
            self::assertSame((string) $n, $stats['reads_replica:' . self::$sandbox->id($where)] ?? null);
        }
        self::assertSame(50, $router->stats()['feedback_sent']);
        self::assertSame(0, $router->stats()['feedback_lost']);
        // The agent's feedback reader SCANs every master for rw_stats hashes (a round is 5 s).
        $series = 'lagwatch_router_reads_total{app="phpcluster",target="replica"}';
        self::assertTrue(
            Sandbox::waitFor(fn (): bool => $this->metric($series) >= 25.0, 15.0),
            "$series is " . $this->metric($series),
        );
    }

    public function testTheReadmesRouterUserForAClusterIsAllTheRouterNeedsThere(): void
    {
        $readme = (string) file_get_contents(__DIR__ . '/../../README.md');
        self::assertSame(
            1,
            preg_match('/^user lagwatch-php (on .+ \+cluster\|slots \+asking)$/m', $readme, $m),
            "no Redis Cluster ACL line in the README",
        );
        $password = bin2hex(random_bytes(12));
        $rules = preg_split('/\s+/', strtr($m[1], ['>PASSWORD' => '>' . $password, '<app>' => 'phpcluster-acl'])) ?: [];
        ClusterNodes::addUsers([['lagwatch-php-readme', 'reset', ...$rules]], ClusterNodes::ports());
        $this->admin()->del('rw_stats:phpcluster-acl');
        $as = ['username' => 'lagwatch-php-readme', 'password' => $password];

        $router = $this->router(['app' => 'phpcluster-acl', 'redis' => $this->redis($as)]);
        $served = $this->routeReads($router, 10);
        $router->flush();
        self::assertSame(['replica1', 'replica2'], array_keys($served));
        self::assertSame(0, $router->stats()['redis_errors']);
        self::assertSame(20, $router->stats()['feedback_sent']);
        self::assertSame('10', $this->admin()->hGet('rw_stats:phpcluster-acl', 'reads_replica'));

        // Without +cluster|slots phpredis cannot read the slot map: every read to the primary, and
        // the seeds asked why.
        $noSlots = array_values(array_diff($rules, ['+cluster|slots']));
        ClusterNodes::addUsers([['lagwatch-php-readme', 'reset', ...$noSlots]], ClusterNodes::ports());
        $router = $this->router(['app' => 'phpcluster-acl', 'redis' => $this->redis($as)]);
        self::assertSame(['primary'], array_keys($this->routeReads($router, 3)));
        self::assertSame('redis_unavailable', $router->routeInfo()?->reason);
        self::assertStringContainsString('no seed gave the slot map', $router->routeInfo()->detail);
        self::assertStringContainsString('CLUSTER SLOTS refused: NOPERM', $router->routeInfo()->detail);
    }

    public function testWithoutTheClusterEveryReadGoesToThePrimaryAndNothingIsThrown(): void
    {
        $nowhere = array_map(static fn (int $o): string => '127.0.0.1:' . ClusterNodes::port($o), ClusterNodes::NOWHERE);
        $router = $this->router(['redis' => $this->redis(['cluster' => $nowhere])]);
        $started = microtime(true);
        self::assertSame(['primary' => 5], $this->routeReads($router, 5));
        self::assertLessThan(1.0, microtime(true) - $started);
        self::assertSame('redis_unavailable', $router->routeInfo()?->reason);
        self::assertStringEndsWith('; cannot connect to ' . implode(', ', $nowhere), $router->routeInfo()->detail);
        // Logged once for the episode, not per read: Redis unreadable, reads degraded.
        $warnings = $this->logger->at('warning');
        self::assertCount(2, $warnings, implode("\n", $warnings));
        self::assertStringStartsWith("route: cannot read lagwatch's contract from Redis (Redis Cluster 127.0.0.1:", $warnings[0]);

        $router = $this->router(['redis' => $this->redis(['password' => 'not the password'])]);
        self::assertSame(['primary' => 3], $this->routeReads($router, 3));
        self::assertSame('redis_unavailable', $router->routeInfo()?->reason);
        self::assertMatchesRegularExpression('/: AUTH refused: WRONGPASS/', $router->routeInfo()->detail);
    }

    public function testTheLaravelAndDoctrineIntegrationsReadTheContractFromTheCluster(): void
    {
        $version = (string) self::$sandbox->adminQuery('primary', 'SELECT VERSION()');
        $config = $this->config(['app' => 'phpcluster-dc']);
        $config['primary']['dsn'] .= ';dbname=lwtest';
        foreach ($config['replicas'] as $id => $replica) {
            $config['replicas'][$id]['dsn'] .= ';dbname=lwtest';
        }
        $doctrine = DriverManager::getConnection(RoutedConnection::params($config, null, ['serverVersion' => $version]));
        self::assertInstanceOf(RoutedConnection::class, $doctrine);
        $served = [];
        $why = [];
        for ($i = 0; $i < 10; ++$i) {
            $doctrine->fetchOne('SELECT v FROM pc WHERE id = 1');
            $served[$this->where($doctrine->router())] = true;
            $why[] = $this->where($doctrine->router()) . ': ' . $doctrine->router()->routeInfo()?->reason;
        }
        ksort($served);
        self::assertSame(['replica1', 'replica2'], array_keys($served), "Doctrine\n" . implode("\n", $why));
        self::assertSame(0, $doctrine->router()->stats()['redis_errors']);

        Lagwatch::install();
        $s = self::$sandbox;
        $capsule = new Capsule(new Container());
        $capsule->addConnection([
            'driver' => 'mysql', 'host' => '127.0.0.1', 'port' => $s->port('primary'), 'unix_socket' => $s->socket('primary'),
            'database' => 'lwtest', 'username' => 'root', 'password' => '', 'charset' => 'utf8mb4',
            'collation' => 'utf8mb4_unicode_ci', 'prefix' => '',
            'lagwatch' => [
                'app' => 'phpcluster-lv',
                'redis' => $this->redis(),
                'replicas' => [
                    $s->id('replica1') => ['unix_socket' => $s->socket('replica1')],
                    $s->id('replica2') => ['unix_socket' => $s->socket('replica2')],
                ],
                'logger' => $this->logger,
            ],
        ]);
        $capsule->setEventDispatcher(new Dispatcher(new Container()));
        $laravel = $capsule->getConnection();
        self::assertInstanceOf(LagwatchMySqlConnection::class, $laravel);
        $served = [];
        $why = [];
        for ($i = 0; $i < 10; ++$i) {
            $laravel->select('SELECT v FROM pc WHERE id = 1');
            $served[$this->where($laravel->router())] = true;
            $why[] = $this->where($laravel->router()) . ': ' . $laravel->router()->routeInfo()?->reason;
        }
        ksort($served);
        self::assertSame(['replica1', 'replica2'], array_keys($served), "Laravel\n" . implode("\n", $why));
        self::assertSame(0, $laravel->router()->stats()['redis_errors']);
    }

    public function testOverTlsEachNodeIsCheckedAndAFailureIsNamed(): void
    {
        $certs = new TestCerts(ClusterNodes::dir() . '/certs');
        $port = ClusterNodes::port(ClusterNodes::TLS);
        // One node holding every slot, TLS only, wanting client certificates.
        ClusterNodes::startNode($port, [
            '--tls-cert-file', $certs->server['cert'], '--tls-key-file', $certs->server['key'],
            '--tls-ca-cert-file', $certs->ca, '--tls-cluster', 'yes',
            // A node that has met no other does not know its address: CLUSTER SLOTS would say "".
            '--cluster-announce-ip', '127.0.0.1',
        ], true);
        try {
            $node = new \Redis();
            $node->connect('tls://127.0.0.1', $port, 2.0, null, 0, 2.0, ['stream' => $certs->streamOptions()]);
            $node->rawCommand('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
            foreach (ClusterNodes::sandboxUsers() as $user) {
                self::assertTrue($node->rawCommand('ACL', 'SETUSER', ...$user));
            }
            self::assertTrue(Sandbox::waitFor(
                static fn (): bool => str_contains((string) $node->rawCommand('CLUSTER', 'INFO'), 'cluster_state:ok'),
                10.0,
            ));
            $tls = ['enabled' => true, 'ca_file' => $certs->ca, 'cert_file' => $certs->client['cert'], 'key_file' => $certs->client['key']];
            $over = fn (array $block): Router => $this->router(['redis' => $this->redis([
                'cluster' => ["127.0.0.1:$port"], 'timeout' => 0.5, 'tls' => $block,
            ])]);

            // The contract copied from the 3x2 cluster, where the agent writes it, just before use.
            $router = $over($tls);
            $this->copyContract($node);
            $served = $this->routeReads($router, 5);
            self::assertSame(0, $router->stats()['redis_errors'], $router->routeInfo()?->detail ?? '');
            self::assertArrayNotHasKey('primary', $served);

            $cases = [
                TlsReason::UNKNOWN_CA => ['ca_file' => $certs->otherCa],
                TlsReason::CLIENT_CERT => ['cert_file' => null, 'key_file' => null],
                TlsReason::NAME_MISMATCH => ['server_name' => 'redis.internal'],
                TlsReason::PLAINTEXT_REFUSED => ['enabled' => false],
            ];
            foreach ($cases as $reason => $changes) {
                $router = $over(array_filter($changes, static fn ($v): bool => $v !== null) + array_diff_key($tls, $changes));
                self::assertSame(['primary' => 1], $this->routeReads($router, 1), $reason);
                self::assertSame('redis_unavailable', $router->routeInfo()?->reason, $reason);
                self::assertStringContainsString("TLS $reason:", $router->routeInfo()->detail, $reason);
            }
        } finally {
            ClusterNodes::stop($port);
        }
    }

    public function testAReplicasSlotReshardedWhileTheAgentPublishesKeepsItsReadsOnReplicas(): void
    {
        $key = $this->replicaKey('replica1');
        $from = ClusterNodes::masterPortOf($key, ClusterNodes::aliveNode());
        $to = 0;
        foreach (ClusterNodes::ports() as $port) {
            if ($port !== $from && ClusterNodes::isMaster($port)) {
                $to = $port;
                break;
            }
        }
        self::assertNotSame(0, $to);
        $slot = trim(ClusterNodes::cli($from, 'CLUSTER', 'KEYSLOT', $key));
        $fromId = trim(ClusterNodes::cli($from, 'CLUSTER', 'MYID'));
        $toId = trim(ClusterNodes::cli($to, 'CLUSTER', 'MYID'));
        // A router kept across the move (a worker's) and one per request, reading all along.
        $worker = $this->router();
        $phase = function (string $name) use ($worker): void {
            $served = [];
            $until = microtime(true) + 0.5;
            while (microtime(true) < $until) {
                foreach ([$worker, $this->router()] as $router) {
                    $router->connectionFor(self::SELECT);
                    self::assertNotSame('redis_unavailable', $router->routeInfo()?->reason, "$name: " . $router->routeInfo()?->detail);
                    $served[$this->where($router)] = true;
                }
                usleep(10000);
            }
            self::assertArrayHasKey('replica1', $served, "$name: replica1 never chosen");
        };
        // The migration as redis-cli --cluster reshard makes it, one step at a time.
        ClusterNodes::cli($to, 'CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $fromId);
        ClusterNodes::cli($from, 'CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $toId);
        $phase('migrating, the key still on its source');
        self::assertStringContainsString('OK', ClusterNodes::cli($from, 'MIGRATE', '127.0.0.1', (string) $to, $key, '0', '5000'));
        $phase('migrated, the slot still the source\'s: the key reached by ASK only');
        // Nothing wrote the key back on the source: every read of it went to the target by ASK.
        self::assertSame('0', trim(ClusterNodes::cli($from, 'CLUSTER', 'COUNTKEYSINSLOT', $slot)));
        self::assertSame('1', trim(ClusterNodes::cli($to, 'CLUSTER', 'COUNTKEYSINSLOT', $slot)));
        foreach (ClusterNodes::ports() as $port) {
            ClusterNodes::cli($port, 'CLUSTER', 'SETSLOT', $slot, 'NODE', $toId);
        }
        $phase('moved: MOVED to the target');
        self::assertSame($to, ClusterNodes::masterPortOf($key, ClusterNodes::aliveNode()));
        self::assertSame(0, $worker->stats()['redis_errors']);
    }

    public function testAfterAMastersDeathRoutingFollowsItsPromotedReplica(): void
    {
        $key = $this->replicaKey('replica1');
        $victim = ClusterNodes::masterPortOf($key, ClusterNodes::aliveNode());
        self::assertStringContainsString('connected_slaves:1', ClusterNodes::cli($victim, 'INFO', 'replication'));
        $worker = $this->router();
        self::assertContains('replica1', array_keys($this->routeReads($worker, 10)));

        ClusterNodes::kill($victim);
        $killed = microtime(true);
        // Reads every 20 ms, by the worker's router and by one per request; none may throw.
        $back = null;
        $unavailable = 0;
        $reads = 0;
        while ($back === null && microtime(true) - $killed < self::FOLLOWS_FAILOVER_WITHIN_S) {
            $replica1 = true;
            foreach ([$worker, $this->router()] as $router) {
                $router->connectionFor(self::SELECT);
                ++$reads;
                $unavailable += $router->routeInfo()?->reason === 'redis_unavailable' ? 1 : 0;
                $replica1 = $replica1 && $this->where($router) === 'replica1';
            }
            if ($replica1 && ClusterNodes::masterPortOf($key, ClusterNodes::aliveNode()) !== $victim) {
                $back = microtime(true) - $killed;
            }
            usleep(20000);
        }
        self::assertNotNull($back, 'replica1 not chosen by both routers within '
            . self::FOLLOWS_FAILOVER_WITHIN_S . " s of its key's master's death:\n" . self::$sandbox->lagwatchLog());
        fwrite(STDERR, sprintf(
            "\nrouting back on replica1 %.2f s after its key's master was killed (cluster-node-timeout %d ms);"
            . " %d of %d reads meanwhile found Redis unavailable\n",
            $back,
            ClusterNodes::NODE_TIMEOUT_MS,
            $unavailable,
            $reads,
        ));
        self::assertGreaterThan(0, $unavailable, 'the failover went unseen');
        self::assertGreaterThan(0, $worker->stats()['redis_errors']);
        // Both routers read the promoted master: the worker's dropped its slot map and made a new one.
        $promoted = ClusterNodes::masterPortOf($key, ClusterNodes::aliveNode());
        self::assertNotSame($victim, $promoted);
        // Both routers back on both replicas within 5 s: right after the promotion a read may still
        // go to the primary (a key not yet written again, a node's map not yet updated; seen once).
        foreach ([$worker, $this->router()] as $router) {
            $seen = [];
            Sandbox::waitFor(function () use ($router, &$seen): bool {
                $seen = array_keys($this->routeReads($router, 40));
                return $seen === ['replica1', 'replica2'];
            }, 5.0);
            self::assertSame(['replica1', 'replica2'], $seen);
        }
    }

    /** Whether the agent's record of $server in the cluster says healthy. */
    private function healthy(string $server): bool
    {
        try {
            return $this->admin()->hGet($this->replicaKey($server), 'healthy') === '1';
        } catch (\RedisClusterException) {
            return false;
        }
    }

    /** The cluster as its default user (no password), from the nodes still running. */
    private function admin(): \RedisCluster
    {
        $alive = array_values(array_filter(
            ClusterNodes::seeds(),
            static fn (string $seed): bool => ClusterNodes::isRunning((int) substr($seed, strrpos($seed, ':') + 1)),
        ));
        return new \RedisCluster(null, $alive, 1.0, 1.0);
    }

    private function replicaKey(string $server): string
    {
        return self::PREFIX . ':' . self::$sandbox->id($server);
    }

    /** @return list<string> every key of the contract a router reads */
    private function contractKeys(): array
    {
        return [
            self::PREFIX . ':replicas', self::PREFIX . ':primary', $this->replicaKey('replica1'),
            $this->replicaKey('replica2'), 'lagwatch:primary:' . self::$sandbox->id('primary'),
        ];
    }

    /** Copies the contract's keys from the 3x2 cluster to $node, each with its expiry. */
    private function copyContract(\Redis $node): void
    {
        $admin = $this->admin();
        foreach ($this->contractKeys() as $key) {
            $node->del($key);
            if ($key === self::PREFIX . ':replicas') {
                $node->sAddArray($key, $admin->sMembers($key));
                continue;
            }
            $node->hMSet($key, $admin->hGetAll($key));
            $ttl = $admin->pttl($key);
            if ($ttl > 0) {
                $node->pExpire($key, $ttl);
            }
        }
    }

    /**
     * The router's `redis`: the cluster's seeds, the sandbox's lagwatch-router user, with $changes.
     *
     * @param array<string, mixed> $changes
     * @return array<string, mixed>
     */
    private function redis(array $changes = []): array
    {
        return array_replace([
            'cluster' => ClusterNodes::seeds(),
            'username' => self::$sandbox->env('REDIS_ROUTER_USER'),
            'password' => self::$sandbox->secret('REDIS_ROUTER_PASSWORD_FILE'),
        ], $changes);
    }

    /**
     * The router's configuration: the sandbox's primary and replicas by unix socket as root under
     * their lagwatch ids, the contract on the cluster; app "phpcluster".
     *
     * @param array<string, mixed> $changes merged over it
     * @return array<string, mixed>
     */
    private function config(array $changes = []): array
    {
        $s = self::$sandbox;
        $server = static fn (string $name): array => ['dsn' => 'mysql:unix_socket=' . $s->socket($name), 'user' => 'root', 'password' => ''];
        return array_replace([
            'app' => 'phpcluster',
            'primary' => ['host' => '127.0.0.1', 'port' => $s->port('primary')] + $server('primary'),
            'replicas' => [$s->id('replica1') => $server('replica1'), $s->id('replica2') => $server('replica2')],
            'redis' => $this->redis(),
            'logger' => $this->logger,
        ], $changes);
    }

    /** @param array<string, mixed> $changes */
    private function router(array $changes = []): Router
    {
        return new Router($this->config($changes));
    }

    /** Where $router sent its last statement: 'primary', 'replica1', 'replica2' or null. */
    private function where(Router $router): ?string
    {
        $selected = $router->routeInfo()?->selected;
        return match ($selected) {
            self::$sandbox->id('replica1') => 'replica1',
            self::$sandbox->id('replica2') => 'replica2',
            default => $selected,
        };
    }

    /**
     * Routes $n reads with $router: how many went where, by name, sorted.
     *
     * @return array<string, int>
     */
    private function routeReads(Router $router, int $n): array
    {
        $served = [];
        $this->toPrimary = [];
        for ($i = 0; $i < $n; ++$i) {
            $router->connectionFor(self::SELECT);
            $where = (string) $this->where($router);
            $served[$where] = ($served[$where] ?? 0) + 1;
            $info = $router->routeInfo();
            if ($where === 'primary' && $info !== null) {
                $this->toPrimary[] = trim($info->reason . ' ' . $info->detail);
            }
        }
        ksort($served);
        return $served;
    }

    /**
     * A sample of the agent's /metrics, or -1 when absent: the first of the metric named by
     * $series that has every label $series gives (it may have more, the agent's `cluster` first).
     */
    private function metric(string $series): float
    {
        [$name, $wanted] = self::splitSeries($series);
        $text = @file_get_contents('http://127.0.0.1:' . self::$sandbox->port('http') . '/metrics');
        foreach (explode("\n", (string) $text) as $line) {
            if ($line === '' || $line[0] === '#' || !str_starts_with($line, $name)) {
                continue;
            }
            $space = strrpos($line, ' ');
            [$lineName, $labels] = self::splitSeries(substr($line, 0, (int) $space));
            if ($lineName === $name && array_intersect_assoc($wanted, $labels) == $wanted) {
                return (float) substr($line, (int) $space + 1);
            }
        }
        return -1.0;
    }

    /** @return array{string, array<string, string>} a series' name and labels */
    private static function splitSeries(string $series): array
    {
        $brace = strpos($series, '{');
        if ($brace === false) {
            return [$series, []];
        }
        preg_match_all('/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\\\]|\\\\.)*)"/', substr($series, $brace), $m, PREG_SET_ORDER);
        $labels = [];
        foreach ($m as [, $key, $value]) {
            $labels[$key] = stripcslashes($value);
        }
        return [substr($series, 0, $brace), $labels];
    }
}
