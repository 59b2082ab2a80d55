<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

use PHPUnit\Framework\Assert;

/**
 * bench/stale_reads' PHP workers (bench/stale_reads_worker.php) on the sandbox, for the tests of
 * its PHP rows: fresh lwbench tables, the workers started, the oracle advanced while they run,
 * stopped by the stop file, their exits checked and their lines decoded.
 */
final class BenchWorkers
{
    /** A line's fields, in the order the worker prints them. */
    public const FIELDS = ['own', 'think_ms', 'written', 'server', 'seq', 'version', 'start_us', 'answer_us'];
    /** Orders 1..ORDERS exist. */
    public const ORDERS = 4;

    /** Fresh lwbench.oracle (seq 0) and lwbench.orders (version 0), applied on both replicas. */
    public static function createTables(Sandbox $sandbox): void
    {
        $primary = $sandbox->admin('primary');
        $primary->exec('CREATE DATABASE IF NOT EXISTS lwbench');
        $primary->exec('DROP TABLE IF EXISTS lwbench.oracle, lwbench.orders');
        $primary->exec('CREATE TABLE lwbench.oracle (id INT PRIMARY KEY, seq BIGINT NOT NULL)');
        $primary->exec('INSERT INTO lwbench.oracle VALUES (1, 0)');
        $primary->exec('CREATE TABLE lwbench.orders (id INT PRIMARY KEY, version BIGINT NOT NULL)');
        $primary->exec('INSERT INTO lwbench.orders SELECT seq, 0 FROM lwbench.seq_1_to_' . self::ORDERS);
        $pos = $primary->query('SELECT @@gtid_binlog_pos')->fetchColumn();
        foreach (['replica1', 'replica2'] as $r) {
            Assert::assertSame(0, (int) $sandbox->adminQuery($r, "SELECT MASTER_GTID_WAIT('$pos', 10)"));
        }
    }

    /**
     * Runs workers for $seconds while the primary advances the oracle every 5 ms, then stops them
     * (stop file) and checks that each exited 0 within 5 s.
     *
     * @param array<string, array{string, string, int}> $workers name => [mode, role, order id]
     * @param ?callable(float): void $tick called every turn of the loop with the seconds since start
     * @return array<string, list<array<string, mixed>>> name => the lines it printed, decoded
     */
    public static function run(
        Sandbox $sandbox,
        array $workers,
        string $app,
        float $seconds,
        ?callable $tick = null,
    ): array {
        $stop = Sandbox::dir() . "/worker-$app.stop";
        @unlink($stop);
        $procs = [];
        $out = [];
        try {
            foreach ($workers as $name => [$mode, $role, $order]) {
                $argv = [
                    PHP_BINARY, __DIR__ . '/../../bench/stale_reads_worker.php', '--dir', Sandbox::dir(),
                    '--base-port', (string) Sandbox::basePort(), '--role', $role, '--order-id', (string) $order,
                    '--orders', (string) self::ORDERS, '--seed', '7', '--stop-file', $stop, '--app', $app,
                    '--router', $mode,
                ];
                $err = Sandbox::dir() . '/worker-' . str_replace(' ', '-', $name) . '.err';
                $proc = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['file', $err, 'w']], $pipes);
                Assert::assertIsResource($proc);
                stream_set_blocking($pipes[1], false);
                $procs[$name] = [$proc, $pipes[1], $err];
                $out[$name] = '';
            }
            $primary = $sandbox->admin('primary');
            $began = microtime(true);
            while (($t = microtime(true) - $began) < $seconds) {
                $primary->exec('UPDATE lwbench.oracle SET seq = seq + 1 WHERE id = 1');
                if ($tick !== null) {
                    $tick($t);
                }
                foreach ($procs as $name => [, $stdout]) {
                    $out[$name] .= stream_get_contents($stdout);
                }
                usleep(5000);
            }
        } finally {
            touch($stop);
        }
        foreach ($procs as $name => [$proc, $stdout, $err]) {
            // proc_get_status reports the exit code once, in the call that first sees the exit.
            $exit = null;
            Assert::assertTrue(Sandbox::waitFor(static function () use ($proc, &$exit) {
                $status = proc_get_status($proc);
                $exit = $status['running'] ? null : $status['exitcode'];
                return !$status['running'];
            }, 5.0), "$name did not stop");
            $out[$name] .= stream_get_contents($stdout);
            fclose($stdout);
            proc_close($proc);
            Assert::assertSame(0, $exit, "$name: " . @file_get_contents($err));
        }
        return array_map(
            static fn (string $text): array => array_map(
                static fn (string $l) => json_decode($l, true, 4, JSON_THROW_ON_ERROR),
                array_values(array_filter(explode("\n", $text), static fn ($l) => $l !== '')),
            ),
            $out,
        );
    }
}
