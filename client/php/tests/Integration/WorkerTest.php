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
    private const ORDERS = 4;

    /** @var array<string, array{resource, resource}> role => [process, stdout] */
    private array $workers = [];

    private function start(string $role, string $stop): void
    {
        $argv = [
            PHP_BINARY, __DIR__ . '/../../bench/stale_reads_worker.php', '--dir', Sandbox::dir(),
            '--base-port', (string) Sandbox::basePort(), '--role', $role, '--order-id', '1',
            '--orders', (string) self::ORDERS, '--seed', '7', '--stop-file', $stop, '--app', self::APP,
        ];
        $proc = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['file', Sandbox::dir() . "/worker-$role.err", 'w']], $pipes);
        self::assertIsResource($proc);
        stream_set_blocking($pipes[1], false);
        $this->workers[$role] = [$proc, $pipes[1]];
    }

    /** @return array<string, string> role => what it printed so far */
    private function drain(array &$out): void
    {
        foreach ($this->workers as $role => [, $stdout]) {
            $out[$role] = ($out[$role] ?? '') . stream_get_contents($stdout);
        }
    }

    public function testTheWorkerPrintsALinePerReadSurvivesAFrozenReplicaAndStopsOnTheStopFile(): void
    {
        $primary = $this->sandbox->admin('primary');
        $primary->exec('CREATE DATABASE IF NOT EXISTS lwbench');
        $primary->exec('DROP TABLE IF EXISTS lwbench.oracle, lwbench.orders');
        $primary->exec('CREATE TABLE lwbench.oracle (id INT PRIMARY KEY, seq BIGINT NOT NULL)');
        $primary->exec('INSERT INTO lwbench.oracle VALUES (1, 0)');
        $primary->exec('CREATE TABLE lwbench.orders (id INT PRIMARY KEY, version BIGINT NOT NULL)');
        $primary->exec('INSERT INTO lwbench.orders VALUES (1, 0), (2, 0), (3, 0), (4, 0)');
        $pos = $primary->query('SELECT @@gtid_binlog_pos')->fetchColumn();
        foreach (['replica1', 'replica2'] as $r) {
            self::assertSame(0, (int) $this->sandbox->adminQuery($r, "SELECT MASTER_GTID_WAIT('$pos', 10)"));
        }
        $this->sandbox->redis()->del('rw_stats:' . self::APP);
        $stop = Sandbox::dir() . '/worker.stop';
        @unlink($stop);

        $this->start('writer', $stop);
        $this->start('reader', $stop);
        $out = [];
        $pid = $this->sandbox->pid('replica1');
        $seq = 0;
        $frozen = false;
        $began = microtime(true);
        try {
            while (($t = microtime(true) - $began) < 7.0) {
                $primary->exec('UPDATE lwbench.oracle SET seq = ' . ++$seq . ' WHERE id = 1');
                if (!$frozen && $t > 1.5 && $t < 5.0) {
                    posix_kill($pid, SIGSTOP);
                    $frozen = true;
                } elseif ($frozen && $t >= 5.0) {
                    posix_kill($pid, SIGCONT);
                    $frozen = false;
                }
                $this->drain($out);
                usleep(5000);
            }
        } finally {
            if ($frozen) {
                posix_kill($pid, SIGCONT);
            }
            touch($stop);
        }
        foreach ($this->workers as $role => [$proc]) {
            // proc_get_status reports the exit code once, in the call that first sees the exit.
            $exit = null;
            self::assertTrue(Sandbox::waitFor(function () use ($proc, &$exit) {
                $status = proc_get_status($proc);
                $exit = $status['running'] ? null : $status['exitcode'];
                return !$status['running'];
            }, 5.0), "$role did not stop");
            self::assertSame(0, $exit, "$role: " . @file_get_contents(Sandbox::dir() . "/worker-$role.err"));
        }
        $this->drain($out);
        foreach ($this->workers as [$proc, $stdout]) {
            fclose($stdout);
            proc_close($proc);
        }
        $this->workers = [];

        $servers = ['primary', $this->sandbox->id('replica1'), $this->sandbox->id('replica2')];
        $served = 0;
        foreach (['writer', 'reader'] as $role) {
            $lines = array_map(
                static fn (string $l) => json_decode($l, true, 4, JSON_THROW_ON_ERROR),
                array_values(array_filter(explode("\n", $out[$role]), static fn ($l) => $l !== ''))
            );
            self::assertGreaterThan($role === 'reader' ? 150 : 8, count($lines), "$role printed " . count($lines) . ' lines');
            $previous = null;
            foreach ($lines as $i => $l) {
                self::assertSame(['own', 'think_ms', 'written', 'server', 'seq', 'version', 'start_us', 'answer_us'], array_keys($l));
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
