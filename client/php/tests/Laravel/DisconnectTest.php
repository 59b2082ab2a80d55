<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Laravel;

use Lagwatch\Router\Laravel\LagwatchMySqlConnection;
use Lagwatch\Router\Tests\Integration\Sandbox;

/**
 * A long-lived worker (a queue worker, Octane) keeps one LagwatchMySqlConnection and disconnects
 * it between jobs (DB::disconnect()): every server's connection closes, the replicas' too, as the
 * servers' process lists show; the next job connects again.
 */
final class DisconnectTest extends LaravelTestCase
{
    /**
     * One job: a write and reads until both replicas have served; the session id of this
     * connection on each server that served.
     *
     * @return array<string, int> server name => CONNECTION_ID() there
     */
    private function job(LagwatchMySqlConnection $c): array
    {
        $c->resetRequest();
        $c->table('lv_items')->where('id', 1)->increment('version');
        $ids = ['primary' => (int) $c->selectFromWriteConnection('SELECT CONNECTION_ID() AS id')[0]->id];
        self::assertTrue(Sandbox::waitFor(function () use ($c, &$ids): bool {
            $row = $c->selectOne('SELECT CONNECTION_ID() AS id, @@port AS p');
            $ids[$this->nameOfPort((int) $row->p)] = (int) $row->id;
            return isset($ids['replica1'], $ids['replica2']);
        }, 10.0), 'both replicas served a read: ' . json_encode($ids));
        return $ids;
    }

    /** @param array<string, int> $ids */
    private function open(array $ids): array
    {
        $open = [];
        foreach ($ids as $server => $id) {
            if ((int) $this->sandbox->adminQuery($server, "SELECT COUNT(*) FROM information_schema.processlist WHERE id = $id") > 0) {
                $open[] = "$server#$id";
            }
        }
        return $open;
    }

    /** The sessions of root over the socket (the tests' and the integration's) on each server. */
    private function rootSessions(): int
    {
        $n = 0;
        foreach (['primary', 'replica1', 'replica2'] as $server) {
            $n += (int) $this->sandbox->adminQuery($server, "SELECT COUNT(*) FROM information_schema.processlist"
                . " WHERE user = 'root' AND id <> CONNECTION_ID()");
        }
        return $n;
    }

    public function testDisconnectClosesThePrimaryAndTheReplicaConnections(): void
    {
        $capsule = $this->capsule();
        $c = $this->lagwatch($capsule);
        $ids = $this->job($c);
        self::assertSame(['primary', 'replica1', 'replica2'], array_keys($this->sorted($ids)));
        self::assertCount(3, $this->open($ids), 'connected to all three');

        $capsule->getDatabaseManager()->disconnect();  // DB::disconnect()
        self::assertTrue(Sandbox::waitFor(fn (): bool => $this->open($ids) === [], 3.0), 'still open after disconnect(): '
            . implode(', ', $this->open($ids)));

        // The worker's next jobs connect again and leave nothing behind.
        $before = $this->rootSessions();
        for ($i = 0; $i < 10; ++$i) {
            $next = $this->job($c);
            self::assertNotSame($ids['replica1'], $next['replica1'], 'a new replica connection');
            $c->disconnect();
            $ids = $next;
        }
        self::assertTrue(Sandbox::waitFor(fn (): bool => $this->open($ids) === [], 3.0));
        self::assertTrue(Sandbox::waitFor(fn (): bool => $this->rootSessions() <= $before, 3.0), sprintf(
            'root sessions: %d before ten jobs, %d after',
            $before,
            $this->rootSessions(),
        ));
        self::assertSame('one', Item::query()->find(1)->name, 'usable after a disconnect');
    }

    /**
     * @param array<string, int> $ids
     * @return array<string, int>
     */
    private function sorted(array $ids): array
    {
        ksort($ids);
        return $ids;
    }
}
