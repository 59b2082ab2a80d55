<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Doctrine;

use Lagwatch\Router\Tests\Integration\Sandbox;
use Lagwatch\Router\Session\SymfonySessionStore;
use Symfony\Component\HttpFoundation\Session\Session as SymfonySession;
use Symfony\Component\HttpFoundation\Session\Storage\MockArraySessionStorage;

/**
 * Read-your-writes through Doctrine: within one request (one RoutedConnection), and across two
 * requests that share only the user's Symfony session (a SymfonySessionStore over one
 * MockArraySessionStorage), with both replicas' SQL threads stopped so that a read that lost the
 * token would be served stale by a replica that is still healthy.
 */
final class ReadYourWritesTest extends DoctrineTestCase
{
    private const THINK_MS = [0, 0, 1, 5, 20, 50, 100];

    public function testEveryReadRightAfterAWriteInTheSameRequestSeesIt(): void
    {
        $conn = $this->connection();
        $base = (int) $this->sandbox->adminQuery('primary', 'SELECT v FROM lwtest.dc WHERE id = 1');
        $by = [];
        for ($i = 1; $i <= 80; ++$i) {
            self::assertSame(1, $conn->update('dc', ['v' => $base + $i], ['id' => 1]));
            usleep(1000 * self::THINK_MS[$i % count(self::THINK_MS)]);
            $v = (int) $conn->fetchOne('SELECT v FROM dc WHERE id = ?', [1]);
            $where = $this->whereDc($conn) . ' ' . $conn->router()->routeInfo()->reason;
            self::assertSame($base + $i, $v, "read $i ($where) missed the write");
            $by[$where] = ($by[$where] ?? 0) + 1;
        }
        foreach (array_keys($by) as $where) {
            self::assertMatchesRegularExpression('/^(primary (read_your_writes|late_answer|no_healthy_replica)|replica[12] (tier1_available|caught_up))$/', $where);
        }
        self::assertGreaterThan(10, array_sum(array_filter($by, static fn ($k) => str_starts_with($k, 'replica'), ARRAY_FILTER_USE_KEY)), json_encode($by));
        self::assertSame(80, $conn->router()->stats()['tokens_taken']);
    }

    public function testTheNextRequestOfTheSameSessionSeesTheWriteThroughSymfonysSession(): void
    {
        $storage = new MockArraySessionStorage();
        $requests = 0;
        // One HTTP request: a new Symfony session object over the user's storage, saved at the end.
        $request = function (callable $body) use ($storage, &$requests): void {
            ++$requests;
            $session = new SymfonySession($storage);
            try {
                $body($this->connection([], new SymfonySessionStore($session)));
            } finally {
                $session->save();
            }
        };
        $stopped = [];
        try {
            foreach (['replica1', 'replica2'] as $r) {
                $this->sandbox->admin($r)->exec('STOP SLAVE SQL_THREAD');
                $stopped[] = $r;
            }
            for ($i = 0; $i < 6; ++$i) {
                $written = null;
                $request(function ($conn) use (&$written): void {
                    $conn->executeStatement('UPDATE dc SET v = v + 1 WHERE id = 2');
                    $written = (int) $this->sandbox->adminQuery('primary', 'SELECT v FROM lwtest.dc WHERE id = 2');
                });
                usleep(1000 * self::THINK_MS[$i % count(self::THINK_MS)]);
                $request(function ($conn) use ($written, $i): void {
                    self::assertNotNull($conn->router()->session()->token(), "request pair $i: no token carried");
                    $v = (int) $conn->fetchOne('SELECT v FROM dc WHERE id = 2');
                    self::assertSame($written, $v, "request pair $i: the reload missed the write (" . $conn->router()->routeInfo()->reason . ')');
                    // No replica can have it (their SQL threads are stopped): read_your_writes while
                    // they are still healthy, no_healthy_replica once lagwatch says they are behind.
                    self::assertSame('primary', $this->whereDc($conn));
                });
            }
        } finally {
            foreach ($stopped as $r) {
                $this->sandbox->admin($r)->exec('START SLAVE SQL_THREAD');
            }
        }
        self::assertSame(12, $requests);
    }

    public function testTheTokenCarriedAcrossRequestsLetsACaughtUpReplicaServe(): void
    {
        $storage = new MockArraySessionStorage();
        $first = new SymfonySession($storage);
        $conn = $this->connection([], new SymfonySessionStore($first));
        $conn->update('dc', ['v' => 5], ['id' => 1]);
        $conn->close();
        $first->save();
        $next = new SymfonySession($storage);
        $conn = $this->connection([], new SymfonySessionStore($next));
        // Every read sees the write; once a replica has applied it (on a loaded machine, a moment), one serves.
        self::assertTrue(Sandbox::waitFor(function () use ($conn) {
            self::assertSame(5, (int) $conn->fetchOne('SELECT v FROM dc WHERE id = 1'));
            return in_array($this->whereDc($conn), ['replica1', 'replica2'], true);
        }, 5.0), 'no caught-up replica served: ' . $conn->router()->routeInfo()->reason);
    }
}
