<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Laravel;

use Lagwatch\Router\Laravel\LagwatchMySqlConnection;
use Lagwatch\Router\Tests\Integration\Sandbox;
use Lagwatch\Router\Tests\Unit\MemoryLogger;
use Psr\Log\AbstractLogger;

/**
 * Laravel's reads under faults: a lagging replica leaves the choice and comes back, Redis stopped,
 * malformed hashes, a replica that hangs after it was chosen. Every fault is undone in finally.
 */
final class FaultsTest extends LaravelTestCase
{
    /** Reads (with the primary writing) until one is served by $replica; the seconds it took, or null. */
    private function until(LagwatchMySqlConnection $c, string $replica, float $timeoutS): ?float
    {
        $since = microtime(true);
        while (microtime(true) - $since < $timeoutS) {
            $c->table('lv_items')->where('id', 1)->increment('version');
            Item::query()->find(1);
            if ($this->served($c) === $replica) {
                return microtime(true) - $since;
            }
            usleep(5000);
        }
        return null;
    }

    /** @return array<string, array{string, string, string}> */
    public static function lags(): array
    {
        return [
            'SQL thread stopped' => ['replica1', 'STOP SLAVE SQL_THREAD', 'START SLAVE SQL_THREAD'],
            'FLUSH TABLES WITH READ LOCK' => ['replica2', 'FLUSH TABLES WITH READ LOCK', 'UNLOCK TABLES'],
        ];
    }

    /** @dataProvider lags */
    public function testALaggingReplicaLeavesTheChoiceAndComesBack(string $replica, string $fault, string $undo): void
    {
        $c = $this->lagwatch($this->capsule());
        self::assertNotNull($this->until($c, $replica, 3.0), "$replica serves before the fault");
        $admin = $this->sandbox->admin($replica);
        $admin->exec($fault);
        try {
            $since = microtime(true);
            $last = null;
            $other = 0;
            while (microtime(true) - $since < 3.0) {
                // Writes continue (through Laravel: each takes the session's token, so read without one).
                $this->sandbox->adminQuery('primary', 'UPDATE lwtest.lv_items SET version = version + 1 WHERE id = 2');
                $fresh = $this->lagwatch($this->capsule());
                $fresh->select('SELECT name FROM lv_items WHERE id = 2');
                $served = $this->served($fresh);
                if ($served === $replica) {
                    $last = microtime(true) - $since;
                } elseif ($served !== 'primary') {
                    ++$other;
                }
                usleep(5000);
            }
            self::assertTrue($last === null || $last < 1.5, sprintf('%s still chosen %.2f s into the fault', $replica, $last ?? 0));
            self::assertGreaterThan(0, $other, 'the other replica kept serving');
        } finally {
            $admin->exec($undo);
        }
        $back = $this->until($this->lagwatch($this->capsule()), $replica, 10.0);
        self::assertNotNull($back, "$replica never came back");
        self::assertLessThan(4.0, $back);
    }

    public function testWithRedisStoppedReadsGoToThePrimaryWithoutAnException(): void
    {
        $c = $this->lagwatch($this->capsule());
        $pid = $this->sandbox->pid('redis');
        self::assertGreaterThan(0, $pid);
        posix_kill($pid, SIGKILL);
        try {
            self::assertTrue(Sandbox::waitFor(fn () => @fsockopen('127.0.0.1', $this->sandbox->port('redis'), $e, $m, 0.2) === false, 5.0));
            for ($i = 0; $i < 20; ++$i) {
                self::assertSame('primary', $this->nameOfPort((int) $c->selectOne('SELECT @@port AS p')->p));
                self::assertSame('redis_unavailable', $c->router()->routeInfo()->reason);
                self::assertSame('one', Item::query()->find(1)->name);
            }
            self::assertSame(1, $c->table('lv_items')->where('id', 1)->increment('version'));
            self::assertGreaterThanOrEqual(21, $c->router()->stats()['redis_unavailable_reads']);
        } finally {
            $this->sandbox->up();
        }
        self::assertTrue(Sandbox::waitFor(function () {
            $c = $this->lagwatch($this->capsule());
            $c->select('SELECT 1');
            return $this->served($c) !== 'primary';
        }, 10.0), 'routing to replicas resumed');
    }

    public function testMalformedHashesAreSkippedAndReadsGoToThePrimary(): void
    {
        $fields = ['delay_ms' => 'ten', 'healthy' => '1', 'tier' => 'tier1', 'weight' => '50'];
        $this->sandbox->withReplicaKeys($fields, function (): void {
            $c = $this->lagwatch($this->capsule());
            for ($i = 0; $i < 10; ++$i) {
                self::assertSame('two', Item::query()->find(2)->name);
                self::assertSame('primary', $this->served($c));
                self::assertSame('no_healthy_replica', $c->router()->routeInfo()->reason);
            }
            self::assertGreaterThanOrEqual(20, $c->router()->stats()['malformed']);
            self::assertNotEmpty(array_filter($this->logger->at('warning'), static fn ($l) => str_contains($l, 'malformed')));
        });
    }

    public function testAReplicaThatHangsAfterItWasChosenCostsAtMostItsReadTimeout(): void
    {
        $c = $this->lagwatch($this->capsule(['replica_read_timeout' => 1]));
        self::assertTrue(Sandbox::waitFor(function () use ($c) {
            $c->select('SELECT 1');
            return $this->served($c) === 'replica1';
        }, 5.0), 'replica1 chosen (its connection open)');
        $pid = $this->sandbox->pid('replica1');
        self::assertGreaterThan(0, $pid);
        Sandbox::freeze($pid);
        try {
            // Read until the router picks replica1 (before lagwatch marks it unhealthy): that read
            // waits out the read timeout, then runs on the primary.
            $hit = null;
            $since = microtime(true);
            while ($hit === null && microtime(true) - $since < 0.8) {
                $start = microtime(true);
                $name = Item::query()->find(2)->name;
                $took = microtime(true) - $start;
                self::assertSame('two', $name);
                if ($c->stats()['replica_read_errors'] > 0) {
                    $hit = $took;
                }
            }
            self::assertNotNull($hit, 'no read went to the hung replica before lagwatch dropped it');
            self::assertLessThan(1.6, $hit, 'the hung read cost more than its 1 s read timeout');
            self::assertGreaterThan(0.9, $hit, 'it did wait for the timeout (the replica was hung)');
            self::assertNotSame('replica1', $this->served($c), 'the read again elsewhere');
            // The rest of the request: the hung replica is passed over at no cost.
            for ($i = 0; $i < 20; ++$i) {
                $start = microtime(true);
                self::assertSame('two', Item::query()->find(2)->name);
                self::assertLessThan(0.5, microtime(true) - $start);
            }
            self::assertSame(1, $c->stats()['replica_read_errors']);
            self::assertNotEmpty(array_filter($this->logger->at('warning'), static fn ($l) => str_contains($l, 'the read again elsewhere')));
        } finally {
            posix_kill($pid, SIGCONT);
        }
        $this->sandbox->waitBothHealthy(20.0);
    }

    /**
     * docs/routing.md, "Bounded staleness": a replica chosen for a read and hung (SIGSTOP) right
     * after — between the router's choice and the query — while the primary takes a write. It
     * wakes 1.5 s later, within its read timeout (3 s), and answers; that answer is past the
     * deadline (measured_at_ms + max_delay_ms − delay_ms − clock_skew_ms, tier1's 200 ms limit)
     * and lacks the write. The read must come back fresh, from the primary: late_answers 1,
     * reason late_answer, never the replica's row.
     */
    public function testAReplicaThatHangsRightAfterItWasChosenIsNotServedLate(): void
    {
        $admin = $this->sandbox->admin('primary');
        $pids = [];
        foreach (['replica1', 'replica2'] as $r) {
            $pids[$this->sandbox->id($r)] = [$r, $this->sandbox->pid($r)];
        }
        $hang = null;  // [replica, pid, deadline ms, the write's commit time] once the hook fired
        $armed = false;
        $waker = null;
        $logger = new class ($this->logger, function (string $line) use (&$armed, &$hang, &$waker, $pids, $admin): void {
            if (!$armed || preg_match('/^route: SQL .* selected=(\S+) /', $line, $m) !== 1 || !isset($pids[$m[1]])) {
                return;
            }
            $armed = false;
            [$name, $pid] = $pids[$m[1]];
            $record = $this->sandbox->replicaHash($name);
            posix_kill($pid, SIGSTOP);
            $waker = proc_open(['sh', '-c', "sleep 1.5; kill -CONT $pid"], [], $pipes);
            $admin->exec('UPDATE lwtest.lv_items SET version = version + 1 WHERE id = 2');
            $hang = [$name, $pid, (int) $record['measured_at_ms'] + (int) $record['max_delay_ms'] - (int) $record['delay_ms'],
                microtime(true)];
        }) extends AbstractLogger {
            /** @param \Closure(string): void $hook */
            public function __construct(private readonly MemoryLogger $inner, private readonly \Closure $hook)
            {
            }

            /** @param array<string, mixed> $context */
            public function log($level, $message, array $context = []): void
            {
                $this->inner->log($level, $message, $context);
                if ($level === 'debug') {
                    ($this->hook)(end($this->inner->lines)[1]);
                }
            }
        };
        $c = $this->lagwatch($this->capsule(['replica_read_timeout' => 3, 'logger' => $logger]));
        try {
            $since = microtime(true);
            while ($hang === null && microtime(true) - $since < 5.0) {
                $before = (int) $admin->query('SELECT version FROM lwtest.lv_items WHERE id = 2')->fetchColumn();
                $armed = true;
                $version = Item::query()->whereKey(2)->value('version');
                $answeredMs = microtime(true) * 1000;
                $armed = false;
            }
            self::assertNotNull($hang, 'no read was sent to a replica');
            [$name, $pid, $deadlineMs, $wroteAt] = $hang;
            $fresh = (int) $admin->query('SELECT version FROM lwtest.lv_items WHERE id = 2')->fetchColumn();
            self::assertSame($before + 1, $fresh, 'the write during the hang');
            self::assertGreaterThan($deadlineMs, $answeredMs, 'the answer came after the deadline (the case under test)');
            self::assertSame($fresh, (int) $version, sprintf(
                'a stale row: version %d from %s (the primary had %d for %.2f s, the answer %.2f s past its deadline)',
                (int) $version,
                $this->served($c),
                $fresh,
                $answeredMs / 1000 - $wroteAt,
                ($answeredMs - $deadlineMs) / 1000,
            ));
            self::assertSame('primary', $this->served($c));
            self::assertSame('late_answer', $c->router()->routeInfo()->reason);
            self::assertSame(1, $c->stats()['late_answers']);
            self::assertSame(0, $c->stats()['replica_read_errors'], 'it answered: no timeout');
            self::assertNotEmpty(array_filter($this->logger->at('debug'), static fn ($l) => str_contains($l, 'after its deadline: discarded')));
        } finally {
            if ($hang !== null) {
                posix_kill($hang[1], SIGCONT);
            }
            if (is_resource($waker)) {
                proc_close($waker);
            }
        }
        $this->sandbox->waitBothHealthy(20.0);
    }
}
