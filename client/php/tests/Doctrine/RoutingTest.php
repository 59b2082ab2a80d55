<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Doctrine;

use Doctrine\DBAL\Connection;

/**
 * Where RoutedConnection sends Doctrine's statements: reads to replicas, the rest by
 * PrimaryReadReplicaConnection's rules (writes, transactions, locking reads, prepare,
 * ensureConnectedToPrimary on the primary), and the server that answered is the one the router names.
 */
final class RoutingTest extends DoctrineTestCase
{
    public function testReadsGoToBothReplicasAndTheServerThatAnswersIsTheRoutersChoice(): void
    {
        $conn = $this->connection();
        $seen = [];
        for ($i = 0; $i < 40; ++$i) {
            $port = (int) $conn->fetchOne('SELECT @@port');
            $where = $this->whereDc($conn);
            self::assertSame($this->sandbox->port($where), $port);
            $seen[$where] = ($seen[$where] ?? 0) + 1;
            if ($where === 'primary') {
                // Only when no replica was provably within its limit (a loaded 2-core machine).
                self::assertContains($conn->router()->routeInfo()->reason, ['no_healthy_replica', 'late_answer']);
            }
            usleep(10000);  // over two probe intervals: a moment without a fresh record is not all
        }
        self::assertGreaterThan(0, $seen['replica1'] ?? 0, json_encode($seen));
        self::assertGreaterThan(0, $seen['replica2'] ?? 0, json_encode($seen));
        self::assertGreaterThanOrEqual(20, ($seen['replica1'] ?? 0) + ($seen['replica2'] ?? 0), json_encode($seen));
        self::assertSame(40 - ($seen['primary'] ?? 0), $conn->router()->stats()['reads_replica']);
    }

    public function testAClosedConnectionLeavesNoServerConnectionOpen(): void
    {
        // As a request ends: a write (the primary, a token) and reads (replicas), then close().
        $idle = fn (): int => array_sum(array_map(
            fn (string $server): int => (int) $this->sandbox->adminQuery(
                $server,
                "SELECT COUNT(*) FROM information_schema.processlist WHERE command = 'Sleep'",
            ),
            ['primary', 'replica1', 'replica2'],
        ));
        $before = $idle();
        for ($i = 0; $i < 30; ++$i) {
            $conn = $this->connection();
            $conn->executeStatement('UPDATE dc SET v = v + 1 WHERE id = 3');
            $conn->fetchOne('SELECT v FROM dc WHERE id = 3');
            $conn->fetchOne('SELECT v FROM dc WHERE id = 3');
            $conn->close();
        }
        unset($conn);
        // Thirty requests of up to three connections each: a leak would leave dozens open.
        self::assertLessThanOrEqual($before + 3, $idle(), 'connections left open by closed requests');
    }

    public function testWritesTransactionsAndLockingReadsGoToThePrimary(): void
    {
        $conn = $this->connection();
        $primary = $this->sandbox->port('primary');
        self::assertSame(1, $conn->executeStatement('UPDATE dc SET v = v + 1 WHERE id = 3'));
        self::assertSame('write', $conn->router()->routeInfo()->reason);
        self::assertTrue($conn->isConnectedToPrimary());
        self::assertSame(1, $conn->update('dc', ['v' => 7], ['id' => 3]));
        self::assertSame('primary', $this->whereDc($conn));

        // A locking read through executeQuery (stock Doctrine would send it to its replica).
        $conn->beginTransaction();
        try {
            self::assertSame($primary, (int) $conn->fetchOne('SELECT @@port FROM dc WHERE id = 3 FOR UPDATE'));
            self::assertSame('in_transaction', $conn->router()->routeInfo()->reason);
            self::assertSame($primary, (int) $conn->fetchOne('SELECT @@port'));
            self::assertSame('in_transaction', $conn->router()->routeInfo()->reason);
            $conn->update('dc', ['v' => 8], ['id' => 3]);
        } finally {
            $conn->commit();
        }
        self::assertSame($primary, (int) $conn->fetchOne('SELECT @@port FROM dc WHERE id = 3 LOCK IN SHARE MODE'));
        self::assertSame('locking_read', $conn->router()->routeInfo()->reason);

        // transactional(), nested with savepoints, reads inside on the primary.
        $conn->setNestTransactionsWithSavepoints(true);
        $conn->transactional(function (Connection $c) use ($primary): void {
            $c->update('dc', ['v' => 9], ['id' => 3]);
            $c->transactional(function (Connection $inner) use ($primary): void {
                self::assertSame($primary, (int) $inner->fetchOne('SELECT @@port'));
                self::assertSame(9, (int) $inner->fetchOne('SELECT v FROM dc WHERE id = 3'));
            });
        });
        // After the commit: the session's token, and the read (wherever it goes) sees the write.
        self::assertNotNull($conn->router()->session()->token());
        self::assertSame(9, (int) $conn->fetchOne('SELECT v FROM dc WHERE id = 3'));

        // A write sent through executeQuery still goes to the primary.
        $conn->executeQuery('UPDATE dc SET v = 10 WHERE id = 3');
        self::assertSame('write', $conn->router()->routeInfo()->reason);
        self::assertSame(10, (int) $this->sandbox->adminQuery('primary', 'SELECT v FROM lwtest.dc WHERE id = 3'));

        // A rollback leaves nothing; reads afterwards are routed again.
        $conn->beginTransaction();
        $conn->update('dc', ['v' => 11], ['id' => 3]);
        $conn->rollBack();
        self::assertSame(10, (int) $conn->fetchOne('SELECT v FROM dc WHERE id = 3'));
        self::assertFalse($conn->isTransactionActive());
    }

    public function testPreparedStatementsAndLastInsertIdUseThePrimaryAndEnsureConnectedToPrimaryPins(): void
    {
        $conn = $this->connection();
        $stmt = $conn->prepare('SELECT @@port');
        self::assertSame($this->sandbox->port('primary'), (int) $stmt->executeQuery()->fetchOne());
        $conn->insert('dc_auto', ['v' => 1]);
        $id = (int) $this->sandbox->adminQuery('primary', 'SELECT MAX(id) FROM lwtest.dc_auto');
        $conn->fetchOne('SELECT 1');  // a read in between, perhaps on a replica
        self::assertSame($id, (int) $conn->lastInsertId());

        $conn = $this->connection();
        $conn->fetchOne('SELECT 1');
        $conn->ensureConnectedToPrimary();
        for ($i = 0; $i < 10; ++$i) {
            self::assertSame($this->sandbox->port('primary'), (int) $conn->fetchOne('SELECT @@port'));
            self::assertSame('forced', $conn->router()->routeInfo()->reason);
        }
    }
}
