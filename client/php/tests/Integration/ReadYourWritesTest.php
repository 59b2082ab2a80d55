<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

use Lagwatch\Router\Router;
use Lagwatch\Router\Session;

/**
 * Read-your-writes right after a write: the read goes to the primary or to a replica proven to
 * have the session's token (published position, or asked without waiting), and returns the value
 * just written — every time.
 */
final class ReadYourWritesTest extends SandboxTestCase
{
    private const THINK_MS = [0, 0, 1, 5, 20, 50, 100, 300];

    public static function setUpBeforeClass(): void
    {
        $admin = Sandbox::get()->admin('primary');
        $admin->exec('CREATE TABLE IF NOT EXISTS lwtest.ryw (id INT PRIMARY KEY, v BIGINT NOT NULL)');
        $admin->exec('INSERT IGNORE INTO lwtest.ryw VALUES (1, 0), (2, 0)');
    }

    /**
     * Writes and reads back $n times, with think times between; fails on any stale read.
     *
     * @return array<string, int> reads by "where reason"
     */
    private function writeAndReadBack(Router $router, int $n, int $id, ?callable $between = null): array
    {
        $by = [];
        $base = (int) $this->sandbox->adminQuery('primary', "SELECT v FROM lwtest.ryw WHERE id = $id");
        for ($i = 1; $i <= $n; ++$i) {
            self::assertSame(1, $router->execute('UPDATE lwtest.ryw SET v = ? WHERE id = ?', [$base + $i, $id]));
            self::assertNotNull($router->session()->token(), 'a token after the write');
            usleep(1000 * self::THINK_MS[$i % count(self::THINK_MS)]);
            if ($between !== null) {
                $between();
            }
            $v = $router->query('SELECT v FROM lwtest.ryw WHERE id = ?', [$id])->fetchColumn();
            $where = $this->where($router) . ' ' . $router->routeInfo()->reason;
            self::assertSame($base + $i, (int) $v, "read $i ($where) missed the session's write");
            $by[$where] = ($by[$where] ?? 0) + 1;
        }
        return $by;
    }

    public function testEveryReadRightAfterAWriteReturnsTheNewValue(): void
    {
        $router = $this->router();
        $by = $this->writeAndReadBack($router, 160, 1);
        // The primary is always right (on a loaded machine also for no_healthy_replica or
        // redis_unavailable); a replica only when proven.
        $allowed = '/^(primary [a-z_]+|replica[12] (tier1_available|caught_up))$/';
        foreach (array_keys($by) as $where) {
            self::assertMatchesRegularExpression($allowed, $where, json_encode($by));
        }
        $onReplicas = array_sum(array_filter($by, static fn ($k) => str_starts_with($k, 'replica'), ARRAY_FILTER_USE_KEY));
        self::assertGreaterThan(20, $onReplicas, 'replicas proven to have the write served: ' . json_encode($by));
        self::assertGreaterThan(0, $router->stats()['tokens_taken']);
        self::assertSame(0, $router->stats()['untokened_writes']);
    }

    public function testAReplicaHeldBehindNeverServesTheSession(): void
    {
        $held = $this->sandbox->admin('replica2');
        $held->exec('FLUSH TABLES WITH READ LOCK');
        try {
            $router = $this->router();
            $by = $this->writeAndReadBack($router, 40, 2);
            self::assertArrayNotHasKey('replica2 tier1_available', $by, json_encode($by));
            self::assertArrayNotHasKey('replica2 caught_up', $by, json_encode($by));
        } finally {
            $held->exec('UNLOCK TABLES');
        }
    }

    public function testASessionKeptAcrossRequestsStillReadsItsWrite(): void
    {
        for ($i = 0; $i < 20; ++$i) {
            $first = $this->router();
            $first->execute('UPDATE lwtest.ryw SET v = v + 1 WHERE id = 1');
            $stored = $first->session()->toString();
            $expected = (int) $this->sandbox->adminQuery('primary', 'SELECT v FROM lwtest.ryw WHERE id = 1');
            unset($first);

            $next = $this->router();
            $next->useSession(Session::fromString($stored));
            $v = (int) $next->query('SELECT v FROM lwtest.ryw WHERE id = 1')->fetchColumn();
            self::assertSame($expected, $v, 'the next request missed the write (' . $next->routeInfo()->reason . ')');
        }
    }

    public function testWithoutATokenTheSessionReadsFromThePrimaryUntilARecordProvesTheWrite(): void
    {
        $router = $this->router(['position_kind' => 'none']);
        $router->execute('UPDATE lwtest.ryw SET v = v + 1 WHERE id = 1');
        $wrote = microtime(true);
        $expected = (int) $this->sandbox->adminQuery('primary', 'SELECT v FROM lwtest.ryw WHERE id = 1');
        self::assertNull($router->session()->token());
        self::assertNotNull($router->session()->untokenedWriteMs());
        $replicaAfter = null;
        while (microtime(true) - $wrote < 4.0) {
            $v = (int) $router->query('SELECT v FROM lwtest.ryw WHERE id = 1')->fetchColumn();
            self::assertSame($expected, $v);
            if ($this->where($router) !== 'primary') {
                $replicaAfter = microtime(true) - $wrote;
                break;
            }
            // On the primary for the session's write, or (a loaded machine) for no fresh replica.
            self::assertContains($router->routeInfo()->reason, ['read_your_writes', 'no_healthy_replica']);
            usleep(10000);
        }
        self::assertNotNull($replicaAfter, 'no replica served within 4 s');
        // fetched − ttl (1000 ms) − delay_ms ≥ the write: never sooner than the TTL.
        self::assertGreaterThanOrEqual(1.0, $replicaAfter);
        self::assertLessThan(3.0, $replicaAfter);
        self::assertSame(1, $router->stats()['untokened_writes']);
    }
}
