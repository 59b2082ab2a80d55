<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Lagwatch\Router\Clock;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Exception\PrimaryUnavailableException;
use Lagwatch\Router\Router;
use Lagwatch\Router\RouterConfig;
use Lagwatch\Router\RouterDependencies;
use Lagwatch\Router\SeededRandom;
use Lagwatch\Router\ServerConfig;
use PHPUnit\Framework\TestCase;

/**
 * The router's parts that need no server: its configuration, and failing fast (nothing is
 * connected: the servers' DSNs point where nothing listens, so a connect attempt would show as a
 * PDOException). Routing to real servers is tested on the sandbox (tests/Integration).
 */
final class RouterTest extends TestCase
{
    private const NOWHERE = 'mysql:host=127.0.0.1;port=1';

    private FakeRedis $redis;
    private MemoryLogger $logger;

    protected function setUp(): void
    {
        $this->redis = new FakeRedis();
        $this->logger = new MemoryLogger();
    }

    /** @param array<string, mixed> $changes */
    private function config(array $changes = []): array
    {
        return array_merge([
            'app' => 'shop',
            'primary' => ['host' => '10.0.0.1', 'port' => 3306, 'dsn' => self::NOWHERE],
            'replicas' => ['10.0.0.11:3306' => ['dsn' => self::NOWHERE]],
            'logger' => $this->logger,
        ], $changes);
    }

    /** The test's clock and Redis. */
    private function deps(): RouterDependencies
    {
        $clock = new class () implements Clock {
            public function nowMs(): int
            {
                return 1796004314440;
            }
        };
        return new RouterDependencies(clock: $clock, redis: $this->redis);
    }

    /** @return iterable<string, array{array<string, mixed>, string}> */
    public static function badConfigs(): iterable
    {
        yield 'no app' => [['app' => null], 'app: missing'];
        yield 'a bad app' => [['app' => 'shop stats'], 'app: not 1..64'];
        yield 'an unknown key' => [['replica' => []], 'replica: unknown key'];
        yield 'no primary port' => [['primary' => ['host' => 'db']], 'primary.port: not an integer'];
        yield 'a bad replica id' => [['replicas' => ['db' => []]], "replicas.db: not a lagwatch id host:port: 'db'"];
        yield 'a replica id unlike its host' => [['replicas' => ['db:3306' => ['host' => 'db', 'port' => 3307]]], 'replicas.db:3306.host: host:port differs'];
        yield 'an unknown server key' => [['primary' => ['host' => 'db', 'port' => 1, 'pasword' => 'x']], 'primary.pasword: unknown key'];
        yield 'a cache too long' => [['cache_ms' => 26], 'cache_ms: not an integer in [0, 25]'];
        yield 'a bad prefix' => [['redis' => ['key_prefix' => 'a b']], 'redis.key_prefix'];
        yield 'a bad kind' => [['position_kind' => 'gtid'], 'position_kind: not auto'];
        yield 'a bad flag' => [['bounded_staleness' => 'yes'], 'bounded_staleness: not true or false'];
        yield 'a bad logger' => [['logger' => 'syslog'], 'logger: not a Psr\Log\LoggerInterface'];
        yield 'bad tags' => [['force_primary' => ['reports', 3]], 'force_primary: not a list'];
        foreach (['clock', 'random', 'connect'] as $hook) {
            yield "the test hook $hook in the array" => [[$hook => null], "$hook: not a configuration key; a test hook"
                . " goes in the Router's second argument: new Router(\$config, new RouterDependencies($hook: ...))"];
        }
    }

    /**
     * @dataProvider badConfigs
     * @param array<string, mixed> $changes
     */
    public function testABadConfigurationFailsAtConstructionNamingTheKey(array $changes, string $message): void
    {
        $config = $this->config($changes);
        if (array_key_exists('app', $changes) && $changes['app'] === null) {
            unset($config['app']);
        }
        $this->expectException(ConfigException::class);
        $this->expectExceptionMessage($message);
        new Router($config, $this->deps());
    }

    public function testWhileThePrimaryIsDownWritesFailFastWithoutConnecting(): void
    {
        $this->redis->pointer('10.0.0.1:3306', 'down');
        $router = new Router($this->config(), $this->deps());
        foreach (['UPDATE t SET a = 1', 'SELECT * FROM t FOR UPDATE', 'BEGIN'] as $sql) {
            try {
                $router->connectionFor($sql);
                self::fail($sql . ' was routed');
            } catch (PrimaryUnavailableException $e) {
                self::assertSame('down', $e->circuit);
                self::assertSame('primary_circuit_open', $e->reason);
                self::assertSame('10.0.0.1:3306', $e->primary);
                self::assertStringContainsString('cannot take this statement (circuit down): not sent', $e->getMessage());
            }
        }
        $info = $router->routeInfo();
        self::assertNull($info?->selected);
        self::assertSame('primary_circuit_open', $info->reason);
        self::assertContains('route: SQL fingerprint=BEGIN selected=none delay_ms=- reason=primary_circuit_open', $this->logger->at('debug'));
        self::assertSame(3, $router->stats()['fail_fast']);
        self::assertSame(0, $router->stats()['degrade_attempts']);  // writes count nothing in rw_stats
    }

    public function testARouterDestroyedWhileRedisFailsThrowsNothing(): void
    {
        // Counters queued (a read failed fast as a degradation), then the flush in the
        // destructor meets an Error: PHP's cycle collector can run a destructor anywhere.
        $this->redis->pointer('10.0.0.1:3306', 'down');
        $this->redis->replica('10.0.0.11:3306', ['healthy' => '0', 'state' => 'stopped']);
        $router = new Router($this->config(), $this->deps());
        try {
            $router->connectionFor('SELECT 1');
            self::fail('routed');
        } catch (PrimaryUnavailableException) {
        }
        $this->redis->fail = new \Error('Class "TransportException" not found');
        $attempts = $this->redis->attempts;
        unset($router);
        self::assertSame($attempts + 1, $this->redis->attempts);  // the flush was tried, and failed
        self::assertArrayNotHasKey('rw_stats:shop', $this->redis->hashes);
    }

    public function testWithThePrimaryDownAndNoReplicaAReadFailsFastAsADegradation(): void
    {
        $this->redis->pointer('10.0.0.1:3306', 'down');
        $this->redis->replica('10.0.0.11:3306', ['healthy' => '0', 'state' => 'stopped']);
        $router = new Router($this->config(), $this->deps());
        $this->expectException(PrimaryUnavailableException::class);
        try {
            $router->connectionFor('SELECT 1', ['tag' => 'list']);
        } finally {
            self::assertSame(1, $router->stats()['degrade_attempts']);
            self::assertSame(0, $router->stats()['degrade_successes']);
            $router->flush();
            self::assertSame(['degrade_attempts' => '1'], $this->redis->hashes['rw_stats:shop']);
            self::assertCount(1, $this->logger->at('warning'));
        }
    }

    public function testASplitBrainFailsWritesAndSaysSo(): void
    {
        $this->redis->pointer('10.0.0.1:3306', 'ambiguous', 'ambiguous');
        $router = new Router($this->config(), $this->deps());
        try {
            $router->connectionFor('INSERT INTO t VALUES (1)');
            self::fail('routed');
        } catch (PrimaryUnavailableException $e) {
            self::assertSame('ambiguous', $e->circuit);
            self::assertSame('primary_ambiguous', $e->reason);
        }
    }

    public function testForcedClassesAndTagsAreWritesToTheCircuit(): void
    {
        $this->redis->pointer('10.0.0.1:3306', 'down');
        $this->redis->replica('10.0.0.11:3306', ['measured_at_ms' => '1796004314440']);
        $router = new Router($this->config(['force_primary' => ['billing']]), $this->deps());
        foreach ([['tag' => 'billing'], ['class' => 'billing'], ['force_primary' => true], ['in_transaction' => true]] as $context) {
            try {
                $router->connectionFor('SELECT 1', $context);
                self::fail(json_encode($context) . ' routed');
            } catch (PrimaryUnavailableException $e) {
                self::assertSame('primary_circuit_open', $e->reason);
            }
        }
    }

    public function testAReplicaThatRefusesConnectionsIsSkippedForTheRequestAndRoutingDoesNotThrowForIt(): void
    {
        $this->redis->pointer('10.0.0.1:3306');
        $this->redis->replica('10.0.0.11:3306', ['measured_at_ms' => '1796004314440', 'position' => '']);
        $router = new Router($this->config(), $this->deps());
        for ($i = 0; $i < 3; ++$i) {
            try {
                $router->connectionFor('SELECT 1');
                self::fail('connected to ' . self::NOWHERE);
            } catch (\PDOException) {
                // The primary's connection (nothing listens there either) is the application's error.
                self::assertSame('no_healthy_replica', $router->routeInfo()?->reason);
                self::assertSame('primary', $router->routeInfo()->selected);
            }
        }
        // Tried once, then skipped for the rest of the request (replica_retry_ms 0: until reset()).
        self::assertSame(1, $router->stats()['replica_connect_errors']);
        $warnings = $this->logger->at('warning');
        self::assertStringStartsWith('route: cannot connect to replica 10.0.0.11:3306 (', $warnings[0]);
        self::assertStringEndsWith('); skipped for the rest of the request', $warnings[0]);
        self::assertSame(3, $router->stats()['degrade_attempts']);
        self::assertSame(0, $router->stats()['degrade_successes']);
    }

    public function testARouterConfigAndDependenciesAreTheTypedWayIn(): void
    {
        $this->redis->pointer('10.0.0.1:3306', 'down');
        $config = RouterConfig::from($this->config());
        $opened = [];
        $deps = new RouterDependencies(
            random: new SeededRandom(1),
            connect: static function (ServerConfig $s) use (&$opened): \PDO {
                $opened[] = $s->id;
                throw new \PDOException('not here');
            },
            redis: $this->redis,
        );
        $router = new Router($config, $deps);
        try {
            $router->connectionFor('SELECT 1');
            self::fail('routed');
        } catch (PrimaryUnavailableException) {
            // The replica has no record: the read fails fast with the primary down.
        }
        $this->redis->pointer('10.0.0.1:3306');
        try {
            $router->connectionFor('UPDATE t SET a = 1');
            self::fail('connected');
        } catch (\PDOException $e) {
            self::assertSame('not here', $e->getMessage());
        }
        self::assertSame(['10.0.0.1:3306'], $opened, 'the injected connector opened the primary');
        self::assertSame(0, RouterConfig::DEFAULT_REPLICA_RETRY_MS);
        self::assertSame(0, $config->replicaRetryMs);
    }
}
