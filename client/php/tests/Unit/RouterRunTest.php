<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Lagwatch\Router\Clock;
use Lagwatch\Router\Exception\PrimaryUnavailableException;
use Lagwatch\Router\Router;
use Lagwatch\Router\RouterConfig;
use Lagwatch\Router\RouterDependencies;
use Lagwatch\Router\ServerConfig;
use PHPUnit\Framework\TestCase;

/**
 * Router::run() (and so query()) without servers: connections are stand-in PDO objects that
 * only say which server they are, the clock is the test's. Late answers under bounded staleness
 * (docs/routing.md: an answer after measured_at_ms + max_delay_ms − delay_ms − clock_skew_ms is
 * discarded, the read goes to the primary) and replicas whose reads time out.
 */
final class RouterRunTest extends TestCase
{
    /** The replicas' measured_at_ms; their records: delay_ms 12, max_delay_ms 200 (deadline +188). */
    private const MEASURED_MS = 1796004314440;
    private const PRIMARY = '10.0.0.1:3306';
    private const R1 = '10.0.0.11:3306';
    private const R2 = '10.0.0.12:3306';

    private FakeRedis $redis;
    private MemoryLogger $logger;
    /** @var object{now: int} */
    private object $clock;
    /** How long FakePdo::query() takes on the clock. */
    private int $queryTakesMs = 0;
    /** @var list<string> the servers connected to, in order */
    private array $connected = [];

    protected function setUp(): void
    {
        $this->redis = new FakeRedis();
        $this->logger = new MemoryLogger();
        $this->clock = new class () implements Clock {
            public int $now = 0;

            public function nowMs(): int
            {
                return $this->now;
            }
        };
        $this->clock->now = self::MEASURED_MS + 100;
        $this->redis->pointer(self::PRIMARY);
    }

    /** @param array<string, mixed> $changes */
    private function router(array $replicas, array $changes = []): Router
    {
        foreach ($replicas as $id) {
            $this->redis->replica($id, ['measured_at_ms' => (string) self::MEASURED_MS]);
        }
        $connect = function (ServerConfig $server): \PDO {
            $this->connected[] = $server->id;
            return new FakePdo($server->id, fn () => $this->clock->now += $this->queryTakesMs);
        };
        return new Router(array_merge([
            'app' => 'shop',
            'primary' => ['host' => '10.0.0.1', 'port' => 3306],
            'replicas' => array_fill_keys($replicas, []),
            'logger' => $this->logger,
        ], $changes), new RouterDependencies(clock: $this->clock, connect: $connect, redis: $this->redis));
    }

    /** A run() callable answering with its server's id, after $takesMs on the clock. */
    private function answer(int $takesMs): \Closure
    {
        return function (\PDO $pdo) use ($takesMs): string {
            $this->clock->now += $takesMs;
            return $pdo instanceof FakePdo ? $pdo->server : '?';
        };
    }

    public function testAnAnswerBeforeTheDeadlineIsUsed(): void
    {
        $router = $this->router([self::R1]);
        // Routed at +100, the deadline is +188: an answer at +187 is in time.
        self::assertSame(self::R1, $router->run('SELECT 1', $this->answer(87)));
        self::assertSame('tier1_available', $router->routeInfo()->reason);
        self::assertSame(0, $router->stats()['late_answers']);
        self::assertSame(1, $router->stats()['reads_replica']);
    }

    public function testAnAnswerAfterTheDeadlineIsDiscardedAndTheReadRunsOnThePrimary(): void
    {
        $router = $this->router([self::R1]);
        $calls = [];
        $result = $router->run('SELECT v FROM t WHERE id = 1', function (\PDO $pdo) use (&$calls): string {
            $calls[] = $pdo->server;
            $this->clock->now += 89;  // +189 on the replica: one ms late
            return $pdo->server;
        });
        self::assertSame(self::PRIMARY, $result);
        self::assertSame([self::R1, self::PRIMARY], $calls);
        $info = $router->routeInfo();
        self::assertSame('primary', $info->selected);
        self::assertSame('late_answer', $info->reason);
        self::assertFalse($info->degraded);
        $stats = $router->stats();
        self::assertSame(1, $stats['late_answers']);
        // One read, counted once: where it was finally answered.
        self::assertSame(0, $stats['reads_replica']);
        self::assertSame(1, $stats['reads_master']);
        $router->flush();
        self::assertSame(['reads_master' => '1'], $this->redis->hashes['rw_stats:shop']);
        self::assertNotEmpty(array_filter(
            $this->logger->at('debug'),
            static fn (string $l) => str_contains($l, 'came 1 ms after its deadline'),
        ));
    }

    public function testTheClockSkewMovesTheDeadlineEarlier(): void
    {
        $router = $this->router([self::R1], ['clock_skew_ms' => 30]);
        // Deadline +158 with 30 ms of skew: an answer at +160 is late.
        self::assertSame(self::PRIMARY, $router->run('SELECT 1', $this->answer(60)));
        self::assertSame(1, $router->stats()['late_answers']);
    }

    public function testWithoutBoundedStalenessOrALimitThereIsNoDeadline(): void
    {
        $router = $this->router([self::R1], ['bounded_staleness' => false]);
        self::assertSame(self::R1, $router->run('SELECT 1', $this->answer(5000)));
        $this->redis->replica(self::R2, ['measured_at_ms' => (string) self::MEASURED_MS, 'max_delay_ms' => '-1', 'tier' => 'tier2']);
        $this->clock->now = self::MEASURED_MS + 100;
        $router = $this->router([], ['replicas' => [self::R2 => []]]);
        self::assertSame(self::R2, $router->run('SELECT 1', $this->answer(5000)));
        self::assertSame(0, $router->stats()['late_answers']);
    }

    public function testQueryDiscardsALateAnswerToo(): void
    {
        $router = $this->router([self::R1]);
        $this->queryTakesMs = 100;
        $stmt = $router->query('SELECT 1');
        self::assertSame(self::PRIMARY, $stmt->queryString);
        self::assertSame(1, $router->stats()['late_answers']);
    }

    public function testALateAnswerWhileThePrimaryIsDownFailsFast(): void
    {
        $router = $this->router([self::R1]);
        $this->redis->pointer(self::PRIMARY, 'down');
        try {
            $router->run('SELECT 1', $this->answer(200));
            self::fail('a late answer was used, or the read sent to a primary that is down');
        } catch (PrimaryUnavailableException $e) {
            self::assertSame('down', $e->circuit);
        }
        self::assertSame([self::R1], $this->connected);
        self::assertSame(1, $router->stats()['late_answers']);
        self::assertSame(1, $router->stats()['degrade_attempts']);
        self::assertSame(0, $router->stats()['degrade_successes']);
    }

    public function testAReplicaWhoseReadTimesOutIsSkippedForTheRestOfTheRequestAndCounted(): void
    {
        $router = $this->router([self::R1]);
        $result = $router->run('SELECT 1', static function (\PDO $pdo): string {
            if ($pdo->server === self::R1) {
                // What PDO throws when mysqlnd.net_read_timeout expires, wrapped as a framework would.
                $e = new \PDOException('SQLSTATE[HY000]: General error: 2006 MySQL server has gone away');
                $e->errorInfo = ['HY000', 2006, 'MySQL server has gone away'];
                throw new \RuntimeException('the framework says: query failed', 0, $e);
            }
            return $pdo->server;
        });
        self::assertSame(self::PRIMARY, $result);
        self::assertSame('no_healthy_replica', $router->routeInfo()->reason);
        self::assertSame(1, $router->stats()['replica_read_errors']);
        $warnings = $this->logger->at('warning');
        self::assertStringStartsWith('route: a read on replica 10.0.0.11:3306 failed (the framework says: query failed)', $warnings[0]);

        // Skipped from then on, however much later, without a connect attempt.
        $this->clock->now += 60000;
        $this->redis->replica(self::R1, ['measured_at_ms' => (string) ($this->clock->now - 10)]);
        self::assertSame(self::PRIMARY, $router->run('SELECT 1', $this->answer(0)));
        self::assertSame([self::R1, self::PRIMARY], $this->connected);

        // A new request: tried again (a new connection: the broken one was dropped).
        $router->reset();
        self::assertSame(self::R1, $router->run('SELECT 1', $this->answer(0)));
        self::assertSame([self::R1, self::PRIMARY, self::R1], $this->connected);
    }

    public function testWithReplicaRetryMsAFailedReplicaComesBackAfterThatLong(): void
    {
        $router = $this->router([self::R1], ['replica_retry_ms' => 1000]);
        $fails = true;
        $run = function (\PDO $pdo) use (&$fails): string {
            if ($pdo->server === self::R1 && $fails) {
                $e = new \PDOException('SQLSTATE[HY000]: General error: 2013 Lost connection to MySQL server during query');
                $e->errorInfo = ['HY000', 2013, 'Lost connection to MySQL server during query'];
                throw $e;
            }
            return $pdo->server;
        };
        self::assertSame(self::PRIMARY, $router->run('SELECT 1', $run));
        $fails = false;
        $this->clock->now += 999;
        $this->redis->replica(self::R1, ['measured_at_ms' => (string) ($this->clock->now - 10)]);
        self::assertSame(self::PRIMARY, $router->run('SELECT 1', $run));
        $this->clock->now += 1;
        $this->redis->replica(self::R1, ['measured_at_ms' => (string) ($this->clock->now - 10)]);
        self::assertSame(self::R1, $router->run('SELECT 1', $run));
    }

    public function testAnErrorOfTheStatementItselfIsTheApplicationsAndNotRetried(): void
    {
        $router = $this->router([self::R1]);
        $calls = 0;
        try {
            $router->run('SELECT nope', static function () use (&$calls): never {
                ++$calls;
                $e = new \PDOException("SQLSTATE[42S22]: Column not found: 1054 Unknown column 'nope'");
                $e->errorInfo = ['42S22', 1054, "Unknown column 'nope'"];
                throw $e;
            });
            self::fail('no exception');
        } catch (\PDOException $e) {
            self::assertSame(1054, $e->errorInfo[1]);
        }
        self::assertSame(1, $calls);
        self::assertSame(0, $router->stats()['replica_read_errors']);
        self::assertSame(0, $router->stats()['reads_replica']);
    }

    public function testReplicaTimeoutsDefaultToTwoSecondsAndAReplicaMaySetItsOwn(): void
    {
        $config = RouterConfig::from([
            'app' => 'shop',
            'primary' => ['host' => '10.0.0.1', 'port' => 3306],
            'replicas' => [self::R1 => [], self::R2 => ['timeout' => 1, 'read_timeout' => 7]],
        ]);
        self::assertSame([2, 2], [$config->replicas[self::R1]->timeoutSeconds, $config->replicas[self::R1]->readTimeoutSeconds]);
        self::assertSame([1, 7], [$config->replicas[self::R2]->timeoutSeconds, $config->replicas[self::R2]->readTimeoutSeconds]);
        self::assertSame([null, null], [$config->primary->timeoutSeconds, $config->primary->readTimeoutSeconds]);
        $none = RouterConfig::from([
            'app' => 'shop',
            'primary' => ['host' => '10.0.0.1', 'port' => 3306],
            'replicas' => [self::R1 => []],
            'replica_read_timeout' => 0,
        ]);
        self::assertNull($none->replicas[self::R1]->readTimeoutSeconds);
        self::assertSame(0, $none->replicaRetryMs);
    }
}
