<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

use Lagwatch\Router\Router;

/**
 * A replica made to lag leaves the router's choice within the contract's budget and comes back
 * once the fault ends (generous bounds: this is a 2-core machine).
 */
final class LagTest extends SandboxTestCase
{
    private const LEAVES_WITHIN_S = 1.5;
    private const RETURNS_WITHIN_S = 3.0;

    public static function setUpBeforeClass(): void
    {
        $admin = Sandbox::get()->admin('primary');
        $admin->exec('CREATE TABLE IF NOT EXISTS lwtest.lag (id INT PRIMARY KEY, v BIGINT NOT NULL)');
        $admin->exec('INSERT IGNORE INTO lwtest.lag VALUES (1, 0)');
    }

    /**
     * Routes reads for $seconds while the primary keeps writing; returns the last time (since
     * $since) a read went to $replica, or null if none did, and whether the other replica served.
     *
     * @return array{?float, int}
     */
    private function watch(Router $router, \PDO $primary, string $replica, float $since, float $seconds): array
    {
        $last = null;
        $other = 0;
        $until = microtime(true) + $seconds;
        while (microtime(true) < $until) {
            $primary->exec('UPDATE lwtest.lag SET v = v + 1 WHERE id = 1');
            $router->connectionFor('SELECT v FROM lwtest.lag WHERE id = 1');
            $where = $this->where($router);
            if ($where === $replica) {
                $last = microtime(true) - $since;
            } elseif ($where !== 'primary') {
                ++$other;
            }
            usleep(5000);
        }
        return [$last, $other];
    }

    /** Routes reads until one goes to $replica; the seconds it took, or null after $timeoutS. */
    private function returns(Router $router, \PDO $primary, string $replica, float $timeoutS): ?float
    {
        $since = microtime(true);
        while (microtime(true) - $since < $timeoutS) {
            $primary->exec('UPDATE lwtest.lag SET v = v + 1 WHERE id = 1');
            $router->connectionFor('SELECT v FROM lwtest.lag WHERE id = 1');
            if ($this->where($router) === $replica) {
                return microtime(true) - $since;
            }
            usleep(5000);
        }
        return null;
    }

    public function testAReplicaWithItsSqlThreadStoppedLeavesTheChoiceAndComesBack(): void
    {
        $router = $this->router();
        $primary = $this->sandbox->admin('primary');
        self::assertNotNull($this->returns($router, $primary, 'replica1', 2.0), 'replica1 serves before the fault');
        $replica = $this->sandbox->admin('replica1');
        $replica->exec('STOP SLAVE SQL_THREAD');
        try {
            $stopped = microtime(true);
            [$last, $other] = $this->watch($router, $primary, 'replica1', $stopped, 3.0);
            self::assertTrue($last === null || $last < self::LEAVES_WITHIN_S, sprintf('replica1 still chosen %.2f s into the fault', $last ?? 0));
            self::assertGreaterThan(0, $other, 'replica2 kept serving');
            self::assertSame('0', $this->sandbox->replicaHash('replica1')['healthy'] ?? null);
        } finally {
            $replica->exec('START SLAVE SQL_THREAD');
        }
        $back = $this->returns($router, $primary, 'replica1', 10.0);
        self::assertNotNull($back, 'replica1 never came back');
        self::assertLessThan(self::RETURNS_WITHIN_S, $back);
    }

    public function testAReplicaHeldByFlushTablesWithReadLockLeavesTheChoiceAndComesBack(): void
    {
        $router = $this->router();
        $primary = $this->sandbox->admin('primary');
        self::assertNotNull($this->returns($router, $primary, 'replica2', 2.0), 'replica2 serves before the fault');
        $held = $this->sandbox->admin('replica2');
        $held->exec('FLUSH TABLES WITH READ LOCK');
        try {
            $since = microtime(true);
            [$last, $other] = $this->watch($router, $primary, 'replica2', $since, 3.0);
            self::assertTrue($last === null || $last < self::LEAVES_WITHIN_S, sprintf('replica2 still chosen %.2f s into the fault', $last ?? 0));
            self::assertGreaterThan(0, $other, 'replica1 kept serving');
            self::assertSame('0', $this->sandbox->replicaHash('replica2')['healthy'] ?? null);
        } finally {
            $held->exec('UNLOCK TABLES');
        }
        $back = $this->returns($router, $primary, 'replica2', 10.0);
        self::assertNotNull($back, 'replica2 never came back');
        self::assertLessThan(self::RETURNS_WITHIN_S, $back);
    }
}
