<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Doctrine;

use Lagwatch\Router\Tests\Integration\BenchWorkers;

/**
 * bench/stale_reads' Doctrine rows: stale_reads_worker.php --router doctrine and doctrine-stock
 * (bench/DoctrineClient.php), a writer and a reader of each for a few seconds side by side, each
 * write and read its own request; their lines, their exit, and that the routed writer always reads
 * its own write back across requests.
 */
final class WorkerTest extends DoctrineTestCase
{
    private const APP = 'phpdoctrinebench';

    public function testBothDoctrineModesRunAsBenchRowsAndTheRoutedWriterReadsItsOwnWrites(): void
    {
        BenchWorkers::createTables($this->sandbox);
        $out = BenchWorkers::run(
            $this->sandbox,
            [
                'doctrine writer' => ['doctrine', 'writer', 1],
                'doctrine reader' => ['doctrine', 'reader', 0],
                'doctrine-stock writer' => ['doctrine-stock', 'writer', 2],
            ],
            self::APP,
            5.0,
        );
        $servers = ['primary', $this->sandbox->id('replica1'), $this->sandbox->id('replica2')];
        foreach ($out as $k => $lines) {
            self::assertGreaterThan(str_ends_with($k, 'reader') ? 40 : 5, count($lines), "$k printed " . count($lines));
            $byServer = [];
            foreach ($lines as $l) {
                self::assertSame(BenchWorkers::FIELDS, array_keys($l));
                self::assertNotNull($l['server'], "$k: a failed read: " . json_encode($l));
                self::assertContains($l['server'], $servers, $k);
                $byServer[$l['server']] = ($byServer[$l['server']] ?? 0) + 1;
                if ($k === 'doctrine writer') {
                    self::assertSame($l['written'], $l['version'], 'the routed writer missed its own write: ' . json_encode($l));
                }
            }
            // Reads went to replicas, by the router's choice or Doctrine's.
            self::assertGreaterThan(0, count($lines) - ($byServer['primary'] ?? 0), "$k: " . json_encode($byServer));
        }
    }
}
