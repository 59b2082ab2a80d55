<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

/**
 * bench/stale_reads' PHP worker (client/php/bench/stale_reads_worker.php) on the sandbox: a writer
 * and a reader for a few seconds, one replica frozen for a while in the middle; their lines, their
 * exit, and the rw_stats they leave.
 */
final class WorkerTest extends SandboxTestCase
{
    private const APP = 'phpworker';

    public function testTheWorkerPrintsALinePerReadSurvivesAFrozenReplicaAndStopsOnTheStopFile(): void
    {
        BenchWorkers::createTables($this->sandbox);
        $this->sandbox->redis()->del('rw_stats:' . self::APP);
        $pid = $this->sandbox->pid('replica1');
        $frozen = false;
        $began = microtime(true);
        try {
            // replica1 frozen from 1.5 s to 5 s.
            $out = BenchWorkers::run(
                $this->sandbox,
                ['writer' => ['lagwatch', 'writer', 1], 'reader' => ['lagwatch', 'reader', 1]],
                self::APP,
                7.0,
                static function (float $t) use ($pid, &$frozen): void {
                    if (!$frozen && $t > 1.5 && $t < 5.0) {
                        posix_kill($pid, SIGSTOP);
                        $frozen = true;
                    } elseif ($frozen && $t >= 5.0) {
                        posix_kill($pid, SIGCONT);
                        $frozen = false;
                    }
                },
            );
        } finally {
            if ($frozen) {
                posix_kill($pid, SIGCONT);
            }
        }

        $servers = ['primary', $this->sandbox->id('replica1'), $this->sandbox->id('replica2')];
        $served = 0;
        foreach ($out as $role => $lines) {
            self::assertGreaterThan($role === 'reader' ? 150 : 8, count($lines), "$role printed " . count($lines) . ' lines');
            $previous = null;
            foreach ($lines as $i => $l) {
                self::assertSame(BenchWorkers::FIELDS, array_keys($l));
                self::assertSame($role === 'writer', $l['own']);
                self::assertLessThanOrEqual($l['answer_us'], $l['start_us']);
                // Bounded by the replicas' 2 s read timeout, even while one is frozen for 3.5 s.
                self::assertLessThan(2_600_000, $l['answer_us'] - $l['start_us'], json_encode($l));
                if ($l['server'] === null) {
                    self::assertNull($l['seq']);
                    self::assertNull($l['version']);
                } else {
                    ++$served;
                    self::assertContains($l['server'], $servers);
                    self::assertIsInt($l['seq']);
                    self::assertIsInt($l['version']);
                }
                if ($role === 'writer') {
                    self::assertSame([0, 5, 20, 50, 100, 200, 500, 1000][$i % 8], $l['think_ms']);
                    self::assertIsInt($l['written']);
                    if ($l['server'] !== null) {
                        self::assertSame($l['written'], $l['version'], 'the writer read its own write: ' . json_encode($l));
                    }
                } else {
                    self::assertSame(0, $l['think_ms']);
                    self::assertNull($l['written']);
                    if ($previous !== null) {
                        // On the next multiple of 25 ms: at most one read per period, never a burst.
                        self::assertGreaterThan(intdiv($previous['start_us'], 25000), intdiv($l['start_us'], 25000), json_encode([$previous, $l]));
                        self::assertGreaterThan(intdiv($previous['answer_us'], 25000), intdiv($l['start_us'], 25000), json_encode([$previous, $l]));
                    }
                }
                $previous = $l;
            }
            $after = array_filter($lines, fn ($l) => $l['start_us'] > (int) (($began + 5.5) * 1e6) && $l['server'] !== null);
            self::assertNotEmpty($after, "$role: no good read after the replica was thawed");
        }
        // Each worker flushed its counters at exit: every read served is counted once.
        $stats = $this->sandbox->redis()->hGetAll('rw_stats:' . self::APP);
        self::assertSame($served, (int) ($stats['reads_replica'] ?? 0) + (int) ($stats['reads_master'] ?? 0), json_encode($stats));
    }
}
