<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Lagwatch\Router\Tests\Integration\BenchWorkers;

/**
 * bench/stale_reads' PHP worker on the TLS sandbox: its routers reach Redis over TLS with the
 * sandbox's client certificate (SandboxRedis reads TLS_* from DIR/env; the servers by unix socket
 * as root), the library's row and the frameworks' rows alike.
 */
final class BenchWorkerTlsTest extends TlsTestCase
{
    private const APP = 'phptlsworker';

    public function testTheWorkersRouteOverTlsRedisAndCountTheirReads(): void
    {
        BenchWorkers::createTables($this->sandbox);
        $this->sandbox->redis()->del('rw_stats:' . self::APP);
        $out = BenchWorkers::run($this->sandbox, [
            'writer' => ['lagwatch', 'writer', 1],
            'reader' => ['lagwatch', 'reader', 2],
            'laravel reader' => ['laravel', 'reader', 3],
            'doctrine reader' => ['doctrine', 'reader', 4],
        ], self::APP, 3.0);
        $replicas = [$this->sandbox->id('replica1'), $this->sandbox->id('replica2')];
        $served = 0;
        foreach ($out as $name => $lines) {
            self::assertGreaterThan($name === 'writer' ? 3 : 20, count($lines), "$name printed " . count($lines) . ' lines');
            $onReplicas = 0;
            foreach ($lines as $l) {
                self::assertNotNull($l['server'], "$name: a read failed: " . json_encode($l));
                $onReplicas += in_array($l['server'], $replicas, true) ? 1 : 0;
                ++$served;
            }
            self::assertGreaterThan(count($lines) / 2, $onReplicas, "$name: the replicas served too few reads");
        }
        $stats = $this->sandbox->redis()->hGetAll('rw_stats:' . self::APP);
        self::assertSame($served, (int) ($stats['reads_replica'] ?? 0) + (int) ($stats['reads_master'] ?? 0), json_encode($stats));
    }
}
