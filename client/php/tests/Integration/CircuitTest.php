<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

use Lagwatch\Router\Exception\PrimaryUnavailableException;

/**
 * The primary's circuit made real: the primary frozen (SIGSTOP) until lagwatch opens the circuit
 * (`down`). Writes then fail fast without touching the primary, and reads keep going to the
 * replicas (primary_unknown, healthy: they had everything the primary had).
 */
final class CircuitTest extends SandboxTestCase
{
    public function testWhileThePrimaryIsDownWritesFailFastAndReadsKeepGoingToReplicas(): void
    {
        $admin = $this->sandbox->admin('primary');
        $admin->exec('CREATE TABLE IF NOT EXISTS lwtest.circuit (id INT PRIMARY KEY, v INT NOT NULL)');
        $admin->exec('INSERT IGNORE INTO lwtest.circuit VALUES (1, 0)');
        // A read timeout on the primary, so that a router that sent a statement there would fail
        // this test rather than hang it.
        $config = $this->config();
        $config['primary']['read_timeout'] = 5;
        $router = new \Lagwatch\Router\Router($config);
        $router->execute('UPDATE lwtest.circuit SET v = v + 1 WHERE id = 1');  // the primary connection is open
        $primaryKey = 'lagwatch:primary:' . $this->sandbox->id('primary');

        $pid = $this->sandbox->pid('primary');
        self::assertGreaterThan(0, $pid);
        posix_kill($pid, SIGSTOP);
        try {
            $down = Sandbox::waitFor(fn () => $this->sandbox->redis()->hGet($primaryKey, 'state') === 'down', 10.0);
            self::assertTrue($down, 'the circuit did not open: ' . json_encode($this->sandbox->redis()->hGetAll($primaryKey)));

            foreach (['UPDATE lwtest.circuit SET v = v + 1 WHERE id = 1', 'SELECT v FROM lwtest.circuit WHERE id = 1 FOR UPDATE'] as $sql) {
                $t = microtime(true);
                try {
                    $router->query($sql);
                    self::fail("$sql was sent to a frozen primary");
                } catch (PrimaryUnavailableException $e) {
                    self::assertLessThan(0.1, microtime(true) - $t, 'it failed fast');
                    self::assertSame('down', $e->circuit);
                    self::assertSame('primary_circuit_open', $e->reason);
                }
            }
            $replicaReads = 0;
            for ($i = 0; $i < 30; ++$i) {
                $port = (int) $router->query('SELECT @@port')->fetchColumn();
                if ($this->where($router) === 'primary') {
                    self::fail('a read went to the frozen primary');
                }
                self::assertContains($port, [$this->sandbox->port('replica1'), $this->sandbox->port('replica2')]);
                self::assertSame('down', $router->routeInfo()->circuit);
                ++$replicaReads;
                usleep(10000);
            }
            self::assertSame(30, $replicaReads);
            self::assertSame(2, $router->stats()['fail_fast']);
        } finally {
            posix_kill($pid, SIGCONT);
        }
        self::assertTrue(Sandbox::waitFor(fn () => $this->sandbox->redis()->hGet($primaryKey, 'state') === 'up', 15.0));
        self::assertSame(1, $router->execute('UPDATE lwtest.circuit SET v = v + 1 WHERE id = 1'));
    }
}
