<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

/**
 * Malformed hashes written into Redis by the test (with lagwatch stopped, since it rewrites its
 * own keys every probe) are skipped and counted; a well-formed one written the same way is used.
 */
final class MalformedTest extends SandboxTestCase
{
    private \Redis $redis;

    /** @param array<string, string> $fields */
    private function write(string $server, array $fields, bool $expire = true): void
    {
        $key = 'slave_delay:' . $this->sandbox->id($server);
        $this->redis->del($key);
        $this->redis->hMSet($key, $fields);
        if ($expire) {
            $this->redis->pExpire($key, 30000);
        }
    }

    /** @return array<string, string> a healthy record as the agent writes it, measured now */
    private static function healthy(): array
    {
        return [
            'delay_ms' => '10', 'delay_lower_ms' => '0', 'state' => 'ok', 'healthy' => '1', 'tier' => 'tier1',
            'weight' => '50', 'max_delay_ms' => '200', 'seq' => '1', 'measured_at_ms' => (string) (int) (microtime(true) * 1000),
            'agent' => '1', 'position' => '', 'position_kind' => 'none',
        ];
    }

    public function testMalformedHashesAreSkippedAndCountedAndAWellFormedOneIsUsed(): void
    {
        $this->sandbox->stopLagwatch();
        $this->redis = $this->sandbox->redis();
        try {
            $this->redis->del('slave_delay:replicas');
            $this->redis->sAdd('slave_delay:replicas', $this->sandbox->id('replica1'), $this->sandbox->id('replica2'), 'not a replica');
            $this->redis->hMSet('slave_delay:primary', ['primary' => $this->sandbox->id('primary'), 'state' => 'up', 'topology' => 'ok']);
            $this->redis->pExpire('slave_delay:primary', 30000);
            $router = $this->router();

            $cases = [
                'weight out of range' => [['weight' => '1001'], true, 'weight: not an integer in [0, 1000]'],
                'healthy with a state never healthy' => [['state' => 'stopped'], true, 'healthy: 1 with a state that is never healthy'],
                'healthy over its limit' => [['delay_ms' => '250'], true, "healthy: 1 over the tier's limit"],
                'a position of the wrong syntax' => [['position' => 'garbage', 'position_kind' => 'mariadb_gtid'], true, 'position: malformed GTID position'],
                'a missing field' => [['tier' => null], true, 'tier: not 1..64'],
                'no expiry' => [[], false, 'no expiry'],
            ];
            foreach ($cases as $name => [$changes, $expire, $message]) {
                $fields = array_filter(array_merge(self::healthy(), $changes), static fn ($v) => $v !== null);
                $this->write('replica1', $fields, $expire);
                $this->write('replica2', $fields, $expire);
                $before = $router->stats()['malformed'];
                $port = (int) $router->query('SELECT @@port')->fetchColumn();
                self::assertSame($this->sandbox->port('primary'), $port, $name);
                self::assertSame('no_healthy_replica', $router->routeInfo()->reason, $name);
                // Both keys, and the member that is not host:port.
                self::assertSame(3, $router->stats()['malformed'] - $before, $name);
                $logged = array_filter($this->logger->at('warning'), static fn ($l) => str_contains($l, $message));
                self::assertNotEmpty($logged, "$name: nothing logged with \"$message\"");
            }

            // Written by hand the same way but well formed: used.
            $this->write('replica1', self::healthy());
            $this->redis->del('slave_delay:' . $this->sandbox->id('replica2'));
            $missing = $router->stats()['missing'];
            $port = (int) $router->query('SELECT @@port')->fetchColumn();
            self::assertSame($this->sandbox->port('replica1'), $port);
            self::assertSame('tier1_available', $router->routeInfo()->reason);
            self::assertSame(1, $router->stats()['missing'] - $missing);
        } finally {
            foreach (['replica1', 'replica2'] as $r) {
                $this->redis->del('slave_delay:' . $this->sandbox->id($r));
            }
            $this->redis->sRem('slave_delay:replicas', 'not a replica');
            $this->sandbox->startLagwatch();
        }
    }
}
