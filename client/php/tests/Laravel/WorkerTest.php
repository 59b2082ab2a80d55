<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Laravel;

use Lagwatch\Router\Tests\Integration\Sandbox;

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
        $primary = $this->sandbox->admin('primary');
        $primary->exec('CREATE DATABASE IF NOT EXISTS lwbench');
        $primary->exec('CREATE TABLE IF NOT EXISTS lwbench.oracle (id INT PRIMARY KEY, seq BIGINT NOT NULL)');
        $primary->exec('INSERT IGNORE INTO lwbench.oracle VALUES (1, 0)');
        $primary->exec('CREATE TABLE IF NOT EXISTS lwbench.orders (id INT PRIMARY KEY, version BIGINT NOT NULL)');
        $primary->exec('INSERT IGNORE INTO lwbench.orders VALUES (1, 0), (2, 0), (3, 0), (4, 0)');
        $this->sandbox->redis()->del('rw_stats:' . $app);
        $stop = Sandbox::dir() . "/worker-$mode.stop";
        @unlink($stop);
        $workers = [];
        foreach (['writer', 'reader'] as $role) {
            $argv = [
                PHP_BINARY, __DIR__ . '/../../bench/stale_reads_worker.php', '--dir', Sandbox::dir(),
                '--base-port', (string) Sandbox::basePort(), '--role', $role, '--order-id', '1', '--orders', '4',
                '--seed', '7', '--stop-file', $stop, '--app', $app, '--router', $mode,
            ];
            $err = Sandbox::dir() . "/worker-$mode-$role.err";
            $proc = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['file', $err, 'w']], $pipes);
            self::assertIsResource($proc);
            stream_set_blocking($pipes[1], false);
            $workers[$role] = [$proc, $pipes[1], $err];
        }
        $out = ['writer' => '', 'reader' => ''];
        $began = microtime(true);
        $seq = 0;
        try {
            while (microtime(true) - $began < 4.0) {
                $primary->exec('UPDATE lwbench.oracle SET seq = ' . ++$seq . ' WHERE id = 1');
                foreach ($workers as $role => [, $stdout]) {
                    $out[$role] .= stream_get_contents($stdout);
                }
                usleep(5000);
            }
        } finally {
            touch($stop);
        }
        foreach ($workers as $role => [$proc, $stdout, $err]) {
            $exit = null;
            self::assertTrue(Sandbox::waitFor(function () use ($proc, &$exit) {
                $status = proc_get_status($proc);
                $exit = $status['running'] ? null : $status['exitcode'];
                return !$status['running'];
            }, 5.0), "$role did not stop");
            $out[$role] .= stream_get_contents($stdout);
            fclose($stdout);
            proc_close($proc);
            self::assertSame(0, $exit, "$role: " . @file_get_contents($err));
        }
        $servers = ['primary', $this->sandbox->id('replica1'), $this->sandbox->id('replica2')];
        $onReplicas = 0;
        foreach (['writer', 'reader'] as $role) {
            $lines = array_map(
                static fn (string $l) => json_decode($l, true, 4, JSON_THROW_ON_ERROR),
                array_values(array_filter(explode("\n", $out[$role]), static fn ($l) => $l !== ''))
            );
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
