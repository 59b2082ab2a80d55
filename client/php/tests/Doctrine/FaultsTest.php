<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Doctrine;

use Lagwatch\Router\Tests\Integration\Sandbox;

/**
 * Doctrine through RoutedConnection under faults: a lagging replica (SQL thread stopped, a read
 * lock) leaves the choice and comes back; Redis stopped; malformed hashes; a hung replica
 * (SIGSTOP) costs no more than the configured timeout, once per request.
 */
final class FaultsTest extends DoctrineTestCase
{
    /** Reads for $seconds while the primary writes; the last time (since the start) $replica served. */
    private function watch(string $replica, float $seconds, int &$other): ?float
    {
        $conn = $this->connection();
        $primary = $this->sandbox->admin('primary');
        $last = null;
        $since = microtime(true);
        while (microtime(true) - $since < $seconds) {
            $primary->exec('UPDATE lwtest.dc SET v = v + 1 WHERE id = 3');
            $conn->fetchOne('SELECT v FROM dc WHERE id = 3');
            $where = $this->whereDc($conn);
            if ($where === $replica) {
                $last = microtime(true) - $since;
            } elseif ($where !== 'primary') {
                ++$other;
            }
            usleep(5000);
        }
        return $last;
    }

    private function comesBack(string $replica, float $timeoutS): bool
    {
        $conn = $this->connection();
        return Sandbox::waitFor(function () use ($conn, $replica) {
            $conn->fetchOne('SELECT 1');
            return $this->whereDc($conn) === $replica;
        }, $timeoutS);
    }

    public function testALaggingReplicaLeavesTheChoiceAndComesBack(): void
    {
        foreach (['replica1' => 'STOP SLAVE SQL_THREAD', 'replica2' => 'FLUSH TABLES WITH READ LOCK'] as $r => $fault) {
            self::assertTrue($this->comesBack($r, 2.0), "$r serves before the fault");
            $admin = $this->sandbox->admin($r);
            $admin->exec($fault);
            try {
                $other = 0;
                $last = $this->watch($r, 2.5, $other);
                self::assertTrue($last === null || $last < 1.5, sprintf('%s (%s) still chosen %.2f s into the fault', $r, $fault, $last ?? 0));
                self::assertGreaterThan(0, $other, 'the other replica kept serving');
                self::assertSame('0', $this->sandbox->replicaHash($r)['healthy'] ?? null);
            } finally {
                $admin->exec($r === 'replica1' ? 'START SLAVE SQL_THREAD' : 'UNLOCK TABLES');
            }
            self::assertTrue($this->comesBack($r, 5.0), "$r came back");
        }
    }

    public function testWhileRedisIsDownReadsGoToThePrimaryAndWritesWork(): void
    {
        $pid = $this->sandbox->pid('redis');
        self::assertGreaterThan(0, $pid);
        posix_kill($pid, SIGKILL);
        try {
            self::assertTrue(Sandbox::waitFor(fn () => @fsockopen('127.0.0.1', $this->sandbox->port('redis'), $e, $m, 0.2) === false, 5.0));
            $conn = $this->connection();
            for ($i = 0; $i < 20; ++$i) {
                self::assertSame($this->sandbox->port('primary'), (int) $conn->fetchOne('SELECT @@port'));
                self::assertSame('redis_unavailable', $conn->router()->routeInfo()->reason);
            }
            self::assertSame(1, $conn->update('dc', ['v' => 1], ['id' => 3]));
            self::assertSame(20, $conn->router()->stats()['redis_unavailable_reads']);
        } finally {
            $this->sandbox->up();
        }
        self::assertTrue($this->comesBack('replica1', 5.0) || $this->comesBack('replica2', 1.0), 'routing resumed');
    }

    public function testMalformedHashesSendReadsToThePrimary(): void
    {
        $fields = ['delay_ms' => 'ten', 'healthy' => '1', 'state' => 'ok', 'tier' => 'tier1'];
        $this->sandbox->withReplicaKeys($fields, function (): void {
            $conn = $this->connection();
            self::assertSame($this->sandbox->port('primary'), (int) $conn->fetchOne('SELECT @@port'));
            self::assertSame('no_healthy_replica', $conn->router()->routeInfo()->reason);
            self::assertSame(2, $conn->router()->stats()['malformed']);
        });
    }

    /**
     * replica1 hung (SIGSTOP) while lagwatch's record still says it is healthy (written by hand,
     * lagwatch stopped, no limit so that it stays usable): a read that chose it costs the read
     * timeout (1 s) once, then goes elsewhere; the rest of the request skips it.
     */
    public function testAHungReplicaCostsNoMoreThanTheTimeoutOncePerRequest(): void
    {
        $this->sandbox->stopLagwatch();
        $redis = $this->sandbox->redis();
        $pid = $this->sandbox->pid('replica1');
        $record = [
            'delay_ms' => '0', 'delay_lower_ms' => '0', 'state' => 'ok', 'healthy' => '1', 'tier' => 'tier1',
            'weight' => '100', 'max_delay_ms' => '-1', 'seq' => '1', 'measured_at_ms' => (string) (int) (microtime(true) * 1000),
            'agent' => '1', 'position' => '', 'position_kind' => 'none',
        ];
        $stopped = false;
        try {
            $key = 'slave_delay:' . $this->sandbox->id('replica1');
            $redis->del($key, 'slave_delay:' . $this->sandbox->id('replica2'));
            $redis->hMSet($key, $record);
            $redis->pExpire($key, 60000);
            $config = ['replica_timeout' => 1, 'replica_read_timeout' => 1];

            // Connected before the hang: the read times out on the open connection.
            $conn = $this->connection($config);
            self::assertSame($this->sandbox->port('replica1'), (int) $conn->fetchOne('SELECT @@port'));
            Sandbox::freeze($pid);
            $stopped = true;
            $t = microtime(true);
            self::assertSame($this->sandbox->port('primary'), (int) $conn->fetchOne('SELECT @@port'));
            $cost = microtime(true) - $t;
            self::assertGreaterThan(0.9, $cost, 'the read waited for the timeout');
            self::assertLessThan(1.8, $cost, 'bounded by the 1 s read timeout');
            self::assertSame(1, $conn->router()->stats()['replica_read_errors']);
            $t = microtime(true);
            for ($i = 0; $i < 5; ++$i) {
                self::assertSame($this->sandbox->port('primary'), (int) $conn->fetchOne('SELECT @@port'));
            }
            self::assertLessThan(0.5, microtime(true) - $t, 'skipped for the rest of the request');

            // A new request connecting to the hung replica: the connect (handshake) times out.
            $conn = $this->connection($config);
            $t = microtime(true);
            self::assertSame($this->sandbox->port('primary'), (int) $conn->fetchOne('SELECT @@port'));
            $cost = microtime(true) - $t;
            self::assertLessThan(1.8, $cost, 'bounded by the 1 s timeout');
            self::assertSame(1, $conn->router()->stats()['replica_connect_errors'] + $conn->router()->stats()['replica_read_errors']);
            $t = microtime(true);
            $conn->fetchOne('SELECT 1');
            self::assertLessThan(0.3, microtime(true) - $t);
        } finally {
            if ($stopped) {
                posix_kill($pid, SIGCONT);
            }
            $redis->del('slave_delay:' . $this->sandbox->id('replica1'));
            $this->sandbox->startLagwatch();
        }
    }
}
