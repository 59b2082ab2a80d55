<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Laravel;

use Lagwatch\Router\Tests\Integration\BenchWorkers;

/**
 * bench/stale_reads' Laravel rows: stale_reads_worker.php --router laravel-stock / laravel, a
 * writer and a reader for a few seconds each; their lines, their exit, and (laravel) the writer
 * always reading its own write back through a new request and rw_stats counted.
 */
final class WorkerTest extends LaravelTestCase
{
    /** @return array<string, array{string}> */
    public static function modes(): array
    {
        return ['stock' => ['laravel-stock'], 'lagwatch' => ['laravel']];
    }

    /** @dataProvider modes */
    public function testTheWorkerRunsTheModeOneRequestPerStatement(string $mode): void
    {
        $app = 'lvworker' . str_replace('-', '', $mode);
        BenchWorkers::createTables($this->sandbox);
        $this->sandbox->redis()->del('rw_stats:' . $app);
        $out = BenchWorkers::run(
            $this->sandbox,
            ['writer' => [$mode, 'writer', 1], 'reader' => [$mode, 'reader', 1]],
            $app,
            4.0,
        );
        $servers = ['primary', $this->sandbox->id('replica1'), $this->sandbox->id('replica2')];
        $onReplicas = 0;
        foreach ($out as $role => $lines) {
            self::assertGreaterThan($role === 'reader' ? 60 : 4, count($lines), "$role printed " . count($lines) . ' lines');
            foreach ($lines as $l) {
                self::assertContains($l['server'], $servers, json_encode($l));
                self::assertIsInt($l['version']);
                $onReplicas += $l['server'] === 'primary' ? 0 : 1;
                if ($role === 'writer' && $mode === 'laravel') {
                    self::assertSame($l['written'], $l['version'], 'the next request read the write: ' . json_encode($l));
                }
            }
        }
        self::assertGreaterThan(30, $onReplicas, 'replicas served');
        if ($mode === 'laravel') {
            $stats = $this->sandbox->redis()->hGetAll('rw_stats:' . $app);
            self::assertGreaterThan(30, (int) ($stats['reads_replica'] ?? 0), json_encode($stats));
        } else {
            self::assertSame([], $this->sandbox->redis()->hGetAll('rw_stats:' . $app), 'stock counts nothing');
        }
    }
}
