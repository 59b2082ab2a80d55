<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Laravel;

use Illuminate\Database\MySqlConnection;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Laravel\LagwatchMySqlConnection;
use Lagwatch\Router\Session\Psr16Store;
use Lagwatch\Router\Tests\Integration\Sandbox;
use Illuminate\Cache\ArrayStore;
use Illuminate\Cache\Repository;

/** Where Laravel's statements go: reads to replicas, transactions, locks and writes to the primary. */
final class RoutingTest extends LaravelTestCase
{
    public function testQueryBuilderAndEloquentReadsGoToReplicasAsTheRouterSays(): void
    {
        $c = $this->lagwatch($this->capsule());
        self::assertTrue(Sandbox::waitFor(function () use ($c) {
            $c->select('SELECT 1');
            return $this->served($c) !== 'primary';
        }, 5.0), 'no replica usable');
        $seen = [];
        for ($i = 0; $i < 60; ++$i) {
            $port = (int) $c->table('lv_items')->where('id', 1)->value($c->raw('@@port'));
            $served = $this->nameOfPort($port);
            self::assertSame($served, $this->served($c), 'routeInfo names the server that answered');
            // A moment without a provably fresh replica (this 2-core machine is busy) degrades to the primary.
            self::assertSame($served === 'primary' ? 'no_healthy_replica' : 'tier1_available', $c->router()->routeInfo()->reason);
            $seen[$served] = ($seen[$served] ?? 0) + 1;
        }
        self::assertLessThan(12, $seen['primary'] ?? 0, json_encode($seen));
        self::assertGreaterThan(5, $seen['replica1'] ?? 0, json_encode($seen));
        self::assertGreaterThan(5, $seen['replica2'] ?? 0, json_encode($seen));

        // Eloquent's find, an aggregate and a cursor each reach a replica through the router (each is
        // asked until one does: a moment without a fresh replica sends one read to the primary).
        $reads = [
            'find' => function () {
                self::assertSame('two', Item::query()->find(2)->name);
            },
            'count' => function () {
                self::assertSame(2, Item::query()->whereIn('id', [1, 2])->count());
            },
            'cursor' => function () use ($c) {
                foreach ($c->cursor('SELECT @@port AS p') as $row) {
                    self::assertSame($this->served($c), $this->nameOfPort((int) $row->p));
                }
            },
        ];
        foreach ($reads as $what => $read) {
            $served = $this->untilAReplicaServes($c, $read);
            self::assertTrue($served, "$what never reached a replica: " . $c->router()->routeInfo()->reason);
        }
    }

    public function testTransactionsLockingReadsAndTheWriteConnectionGoToThePrimary(): void
    {
        $c = $this->lagwatch($this->capsule());
        $port = $c->transaction(function () use ($c) {
            $c->table('lv_items')->where('id', 1)->update(['version' => $c->raw('version + 1')]);
            return (int) $c->selectOne('SELECT @@port AS p')->p;
        });
        self::assertSame('primary', $this->nameOfPort($port));
        self::assertSame('in_transaction', $c->router()->routeInfo()->reason);

        $c->beginTransaction();
        try {
            self::assertSame('primary', $this->nameOfPort((int) $c->selectOne('SELECT @@port AS p')->p));
            self::assertSame('in_transaction', $c->router()->routeInfo()->reason);
        } finally {
            $c->rollBack();
        }

        $lock = (int) $c->table('lv_items')->where('id', 1)->lockForUpdate()->value($c->raw('@@port'));
        self::assertSame('primary', $this->nameOfPort($lock));
        self::assertSame('locking_read', $c->router()->routeInfo()->reason);
        $shared = (int) $c->table('lv_items')->where('id', 1)->sharedLock()->value($c->raw('@@port'));
        self::assertSame('primary', $this->nameOfPort($shared));
        self::assertSame('locking_read', $c->router()->routeInfo()->reason);
        $write = (int) $c->table('lv_items')->useWritePdo()->where('id', 1)->value($c->raw('@@port'));
        self::assertSame('primary', $this->nameOfPort($write));
        self::assertSame('forced', $c->router()->routeInfo()->reason);
        self::assertSame('primary', $this->nameOfPort((int) $c->selectFromWriteConnection('SELECT @@port AS p')[0]->p));

        // Out of the transaction and the lock: replicas again, once one has applied the update above
        // (the session's token) and is provably fresh; on a loaded machine that can take a moment.
        $served = $this->untilAReplicaServes($c, fn () => $c->select('SELECT 1'));
        self::assertTrue($served, 'no replica served after the transaction: ' . $c->router()->routeInfo()->reason);
    }

    public function testWritesTakeTheTokenRightAfterOrAtCommitAndSaveItToTheStore(): void
    {
        $store = new Psr16Store(new Repository(new ArrayStore()), 'routing-test');
        $c = $this->lagwatch($this->capsule(['token_store' => $store]));
        $c->select('SELECT 1');
        $tokens = $c->router()->stats()['tokens_taken'];

        $item = Item::query()->create(['name' => 'new']);
        self::assertGreaterThan(2, $item->id, 'insertGetId read lastInsertId on the connection that inserted');
        self::assertSame('write', $c->router()->routeInfo()->reason);
        self::assertSame($tokens + 1, $c->router()->stats()['tokens_taken'], 'the token right after the insert');
        self::assertSame($c->router()->session()->toString(), $store->load()?->toString());
        self::assertNotNull($store->load()?->token());

        $c->transaction(function () use ($c, $item, $tokens) {
            Item::query()->whereKey($item->id)->update(['version' => 5]);
            self::assertSame($tokens + 1, $c->router()->stats()['tokens_taken'], 'no token inside the transaction');
        });
        self::assertSame($tokens + 2, $c->router()->stats()['tokens_taken'], 'the token at commit');
        self::assertSame($c->router()->session()->toString(), $store->load()?->toString());
        self::assertSame(2, $c->stats()['tokens_saved']);

        // A read-only transaction owes no token.
        $c->transaction(fn () => $c->select('SELECT 1'));
        self::assertSame($tokens + 2, $c->router()->stats()['tokens_taken']);
        Item::query()->whereKey($item->id)->delete();
    }

    public function testReplicaConnectionsGetLaravelsSessionSettings(): void
    {
        $c = $this->lagwatch($this->capsule());
        $row = null;
        self::assertTrue($this->untilAReplicaServes($c, function () use ($c, &$row) {
            $row = $c->selectOne('SELECT @@session.sql_mode AS m, @@character_set_client AS cs, @@collation_connection AS co');
        }), 'a replica served');
        self::assertStringContainsString('STRICT_TRANS_TABLES', $row->m);
        self::assertStringContainsString('ONLY_FULL_GROUP_BY', $row->m);
        self::assertSame('utf8mb4', $row->cs);
        self::assertSame('utf8mb4_unicode_ci', $row->co);
    }

    public function testOnlyConnectionsWithALagwatchBlockAreRouted(): void
    {
        $capsule = $this->capsule();
        $plain = $this->connectionConfig();
        unset($plain['lagwatch']);
        $capsule->addConnection($plain, 'plain');
        $c = $capsule->getConnection('plain');
        self::assertInstanceOf(MySqlConnection::class, $c);
        self::assertNotInstanceOf(LagwatchMySqlConnection::class, $c);
        self::assertSame('primary', $this->nameOfPort((int) $c->selectOne('SELECT @@port AS p')->p));
    }

    public function testConfigurationMistakesNameTheKey(): void
    {
        foreach (
            [
                'lagwatch.replicas.127.0.0.1:1.sockt' => ['replicas' => ['127.0.0.1:1' => ['sockt' => '/x']]],
                'lagwatch.replica_read_timeout' => ['replica_read_timeout' => 0.5],
                'bogus' => ['bogus' => 1],
                'lagwatch.token_store' => ['token_store' => 'redis'],
            ] as $key => $block
        ) {
            try {
                $this->capsule($block)->getConnection();
                self::fail("no ConfigException for $key");
            } catch (ConfigException $e) {
                self::assertStringContainsString($key, $e->getMessage());
            }
        }
    }
}
