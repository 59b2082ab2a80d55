<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

/** Redis stopped and restarted: reads go to the primary meanwhile, counted, and nothing throws. */
final class RedisOutageTest extends SandboxTestCase
{
    private function redisListens(): bool
    {
        $s = @fsockopen('127.0.0.1', $this->sandbox->port('redis'), $errno, $error, 0.2);
        if ($s === false) {
            return false;
        }
        fclose($s);
        return true;
    }

    public function testWhileRedisIsDownEveryReadGoesToThePrimaryAndRoutingResumesWhenItReturns(): void
    {
        $admin = $this->sandbox->admin('primary');
        $admin->exec('CREATE TABLE IF NOT EXISTS lwtest.outage (id INT PRIMARY KEY, v INT NOT NULL)');
        $admin->exec('INSERT IGNORE INTO lwtest.outage VALUES (1, 0)');
        $router = $this->router();
        self::assertTrue(Sandbox::waitFor(function () use ($router) {
            $router->connectionFor('SELECT 1');
            return $this->where($router) !== 'primary';
        }, 2.0));

        $pid = $this->sandbox->pid('redis');
        self::assertGreaterThan(0, $pid);
        posix_kill($pid, SIGKILL);
        try {
            self::assertTrue(Sandbox::waitFor(fn () => !$this->redisListens(), 5.0), 'Redis still listens');
            $before = $router->stats();
            for ($i = 0; $i < 50; ++$i) {
                $port = (int) $router->query('SELECT @@port')->fetchColumn();
                self::assertSame($this->sandbox->port('primary'), $port);
                self::assertSame('redis_unavailable', $router->routeInfo()->reason);
                self::assertTrue($router->routeInfo()->degraded);
            }
            self::assertSame(1, $router->execute('UPDATE lwtest.outage SET v = v + 1 WHERE id = 1'));
            $router->flush();
            $stats = $router->stats();
            self::assertSame(50, $stats['redis_unavailable_reads'] - $before['redis_unavailable_reads']);
            self::assertSame(50, $stats['degrade_attempts'] - $before['degrade_attempts']);
            self::assertSame(50, $stats['degrade_successes'] - $before['degrade_successes']);
            self::assertSame(50, $stats['reads_master'] - $before['reads_master']);
            self::assertGreaterThan($before['redis_errors'], $stats['redis_errors']);
            self::assertGreaterThan($before['feedback_lost'], $stats['feedback_lost']);
            $warnings = array_filter($this->logger->at('warning'), static fn ($l) => str_contains($l, "cannot read lagwatch's contract from Redis"));
            self::assertCount(1, $warnings, 'one warning per episode: ' . json_encode($this->logger->at('warning')));
        } finally {
            $this->sandbox->up();
        }
        $resumed = Sandbox::waitFor(function () use ($router) {
            $router->connectionFor('SELECT 1');
            return $this->where($router) !== 'primary';
        }, 5.0);
        self::assertTrue($resumed, 'routing to replicas did not resume: ' . $router->routeInfo()->reason);
        self::assertContains("route: lagwatch's contract is readable from Redis again", $this->logger->at('info'));
        self::assertNotEmpty(array_filter($this->logger->at('info'), static fn ($l) => str_starts_with($l, 'route: a replica is usable again after')));
    }
}
