<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

use Lagwatch\Router\RouterDependencies;
use Lagwatch\Router\SeededRandom;

/** Each force-primary rule and the replica choice, with real servers, Redis and lagwatch. */
final class RoutingRulesTest extends SandboxTestCase
{
    public static function setUpBeforeClass(): void
    {
        $admin = Sandbox::get()->admin('primary');
        $admin->exec('CREATE TABLE IF NOT EXISTS lwtest.rules (id INT PRIMARY KEY, v INT NOT NULL)');
        $admin->exec('INSERT IGNORE INTO lwtest.rules VALUES (1, 0)');
    }

    public function testReadsGoToReplicasAndTheServerThatAnsweredIsTheOneNamed(): void
    {
        $router = $this->router();
        $seen = [];
        for ($i = 0; $i < 200; ++$i) {
            $id = $router->query('SELECT @@port')->fetchColumn();
            $where = $this->where($router);
            $seen[$where] = ($seen[$where] ?? 0) + 1;
            $expected = $where === 'primary' ? $this->sandbox->port('primary') : $this->sandbox->port($where);
            self::assertSame($expected, (int) $id, 'the connection is to the server routeInfo names');
            $info = $router->routeInfo();
            if ($where !== 'primary') {
                self::assertSame('tier1_available', $info->reason);
                self::assertSame('tier1', $info->tier);
                self::assertIsInt($info->delayMs);
                self::assertMatchesRegularExpression('/^route: SQL fingerprint=SELECT @@port selected=127\.0\.0\.1:2970[78] delay_ms=\d+ reason=tier1_available$/', $info->logLine());
            }
        }
        self::assertGreaterThan(20, $seen['replica1'] ?? 0, json_encode($seen));
        self::assertGreaterThan(20, $seen['replica2'] ?? 0, json_encode($seen));
        self::assertCount(200, array_filter($this->logger->at('debug'), static fn ($l) => str_starts_with($l, 'route: SQL fingerprint=')));
    }

    public function testWritesLockingReadsTransactionsAndForcedStatementsGoToThePrimary(): void
    {
        $router = $this->router(['force_primary' => ['billing']]);
        $expect = function (string $sql, string $reason, array $context = []) use ($router): void {
            $port = null;
            if (str_starts_with($sql, 'SELECT v')) {
                $port = (int) $router->query(str_replace('SELECT v', 'SELECT @@port', $sql), [], $context)->fetchColumn();
            } else {
                $router->query($sql, [], $context);
            }
            self::assertSame('primary', $router->routeInfo()?->selected, $sql);
            self::assertSame($reason, $router->routeInfo()->reason, $sql);
            if ($port !== null) {
                self::assertSame($this->sandbox->port('primary'), $port, $sql);
            }
        };
        $expect('UPDATE lwtest.rules SET v = v + 1 WHERE id = 1', 'write');
        $expect('SELECT v FROM lwtest.rules WHERE id = 1 FOR UPDATE', 'locking_read');
        $expect('SELECT v FROM lwtest.rules WHERE id = 1 LOCK IN SHARE MODE', 'locking_read');
        $expect('SELECT v FROM lwtest.rules WHERE id = 1', 'forced', ['force_primary' => true]);
        $expect('SELECT v FROM lwtest.rules WHERE id = 1', 'forced', ['tag' => 'billing']);
        $expect('SELECT v FROM lwtest.rules WHERE id = 1', 'forced', ['class' => 'billing']);
        $expect('SELECT LAST_INSERT_ID()', 'write');

        // A transaction: everything inside goes to the primary, until COMMIT.
        $expect('BEGIN', 'write');
        $expect('SELECT v FROM lwtest.rules WHERE id = 1', 'in_transaction');
        $expect('UPDATE lwtest.rules SET v = v + 1 WHERE id = 1', 'in_transaction');
        $expect('COMMIT', 'in_transaction');
        $router->query('SELECT 1');
        self::assertNotSame('in_transaction', $router->routeInfo()->reason);

        // PDO's own transactions, through the router or on the connection it gave.
        $router->beginTransaction();
        $expect('SELECT v FROM lwtest.rules WHERE id = 1', 'in_transaction');
        $router->commit();
        $router->connectionFor('SELECT 1', ['force_primary' => true])->beginTransaction();
        $expect('SELECT v FROM lwtest.rules WHERE id = 1', 'in_transaction');
        $router->connectionFor('SELECT 1', ['force_primary' => true])->rollBack();

        // Autocommit off: a transaction is always open, until it is on again.
        $expect('SET autocommit = 0', 'write');
        $expect('SELECT v FROM lwtest.rules WHERE id = 1', 'in_transaction');
        $expect('SET autocommit = 1', 'in_transaction');
        $router->query('SELECT 1');
        self::assertNotSame('in_transaction', $router->routeInfo()->reason);

        // The application's own flag.
        $expect('SELECT v FROM lwtest.rules WHERE id = 1', 'in_transaction', ['in_transaction' => true]);
        // A literal that says "for update" is still a read.
        $router->query("SELECT 'for update' AS note");
        self::assertNotSame('locking_read', $router->routeInfo()->reason);
    }

    public function testTheWeightsSpreadAsLagwatchPublishesThem(): void
    {
        // 75 and 25 instead of the sandbox's 50 and 50, so that the spread proves the weights.
        $this->sandbox->stopLagwatch();
        $this->sandbox->startLagwatch(['replicas' => [['weight' => 75], ['weight' => 25]]]);
        self::assertTrue(Sandbox::waitFor(
            fn () => ($this->sandbox->replicaHash('replica1')['weight'] ?? '') === '75'
                && ($this->sandbox->replicaHash('replica2')['weight'] ?? '') === '25',
            5.0
        ));
        $router = $this->router(['bounded_staleness' => false], new RouterDependencies(random: new SeededRandom(18)));
        $seen = ['replica1' => 0, 'replica2' => 0, 'primary' => 0];
        for ($i = 0; $i < 2000; ++$i) {
            $router->connectionFor('SELECT 1');
            ++$seen[$this->where($router)];
        }
        $onReplicas = $seen['replica1'] + $seen['replica2'];
        self::assertGreaterThan(1900, $onReplicas, json_encode($seen));
        // Binomial(n, 0.75): sd about 19.4 at n = 2000; 6 sd either side.
        $share = $seen['replica1'] / $onReplicas;
        self::assertGreaterThan(0.75 - 6 * sqrt(0.75 * 0.25 / $onReplicas), $share, json_encode($seen));
        self::assertLessThan(0.75 + 6 * sqrt(0.75 * 0.25 / $onReplicas), $share, json_encode($seen));
    }

    public function testRwStatsCountersAreIncrementedInRedis(): void
    {
        $redis = $this->sandbox->redis();
        $redis->del('rw_stats:phptest');
        $router = $this->router();
        for ($i = 0; $i < 50; ++$i) {
            $router->query('SELECT 1');
        }
        $router->query('UPDATE lwtest.rules SET v = v + 1 WHERE id = 1');
        $router->query('SELECT 1', [], ['force_primary' => true]);
        $router->flush();
        $stats = $router->stats();
        $hash = $redis->hGetAll('rw_stats:phptest');
        self::assertSame(50, $stats['reads_replica'] + $stats['reads_master']);
        self::assertSame((string) $stats['reads_replica'], $hash['reads_replica'] ?? '0');
        self::assertSame((string) $stats['reads_master'], $hash['reads_master'] ?? '0');
        $perReplica = 0;
        foreach (['replica1', 'replica2'] as $r) {
            $field = 'reads_replica:' . $this->sandbox->id($r);
            self::assertSame((string) ($stats[$field] ?? 0), $hash[$field] ?? '0');
            $perReplica += (int) ($hash[$field] ?? 0);
        }
        self::assertSame($stats['reads_replica'], $perReplica);
        self::assertSame(0, $stats['feedback_lost']);
        // Replicas served reads (not all 50 on a busy host: a bound past its limit, or a record
        // too old for bounded staleness, sends a read to the primary).
        self::assertGreaterThan(0, $stats['reads_replica']);
    }
}
