<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Doctrine;

use Lagwatch\Router\Tests\Integration\Sandbox;

/**
 * bench/stale_reads' Doctrine rows: stale_reads_worker.php --router doctrine and doctrine-stock
 * (bench/DoctrineClient.php), a writer and a reader of each for a few seconds side by side, each
 * write and read its own request; their lines, their exit, and that the routed writer always reads
 * its own write back across requests.
 */
final class WorkerTest extends DoctrineTestCase
{
    private const APP = 'phpdoctrinebench';

    /** @var array<string, array{resource, resource}> "mode role" => [process, stdout] */
    private array $workers = [];

    private function start(string $mode, string $role, int $order, string $stop): void
    {
        $argv = [
            PHP_BINARY, __DIR__ . '/../../bench/stale_reads_worker.php', '--dir', Sandbox::dir(),
            '--base-port', (string) Sandbox::basePort(), '--role', $role, '--order-id', (string) $order,
            '--orders', '4', '--seed', '7', '--stop-file', $stop, '--app', self::APP, '--router', $mode,
        ];
        $err = Sandbox::dir() . "/worker-$mode-$role.err";
        $proc = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['file', $err, 'w']], $pipes);
        self::assertIsResource($proc);
        stream_set_blocking($pipes[1], false);
        $this->workers["$mode $role"] = [$proc, $pipes[1]];
    }

    public function testBothDoctrineModesRunAsBenchRowsAndTheRoutedWriterReadsItsOwnWrites(): void
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
        $stop = Sandbox::dir() . '/worker-doctrine.stop';
        @unlink($stop);
        $this->start('doctrine', 'writer', 1, $stop);
        $this->start('doctrine', 'reader', 0, $stop);
        $this->start('doctrine-stock', 'writer', 2, $stop);
        $out = [];
        $began = microtime(true);
        try {
            while (microtime(true) - $began < 5.0) {
                $primary->exec('UPDATE lwbench.oracle SET seq = seq + 1 WHERE id = 1');
                foreach ($this->workers as $k => [, $stdout]) {
                    $out[$k] = ($out[$k] ?? '') . stream_get_contents($stdout);
                }
                usleep(5000);
            }
        } finally {
            touch($stop);
        }
        foreach ($this->workers as $k => [$proc, $stdout]) {
            $exit = null;
            self::assertTrue(Sandbox::waitFor(function () use ($proc, &$exit) {
                $status = proc_get_status($proc);
                $exit = $status['running'] ? null : $status['exitcode'];
                return !$status['running'];
            }, 5.0), "$k did not stop");
            $out[$k] = ($out[$k] ?? '') . stream_get_contents($stdout);
            fclose($stdout);
            proc_close($proc);
            [$mode, $role] = explode(' ', $k);
            self::assertSame(0, $exit, "$k: " . @file_get_contents(Sandbox::dir() . "/worker-$mode-$role.err"));
        }
        $this->workers = [];

        $servers = ['primary', $this->sandbox->id('replica1'), $this->sandbox->id('replica2')];
        foreach ($out as $k => $text) {
            $lines = array_map(
                static fn (string $l) => json_decode($l, true, 4, JSON_THROW_ON_ERROR),
                array_values(array_filter(explode("\n", $text), static fn ($l) => $l !== '')),
            );
            self::assertGreaterThan(str_ends_with($k, 'reader') ? 40 : 5, count($lines), "$k printed " . count($lines));
            $byServer = [];
            foreach ($lines as $l) {
                self::assertSame(['own', 'think_ms', 'written', 'server', 'seq', 'version', 'start_us', 'answer_us'], array_keys($l));
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
