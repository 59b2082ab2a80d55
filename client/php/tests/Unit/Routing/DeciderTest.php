<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Routing;

use Lagwatch\Router\Contract\Circuit;
use Lagwatch\Router\Contract\Contract;
use Lagwatch\Router\Contract\PrimaryInfo;
use Lagwatch\Router\Contract\ReplicaRecord;
use Lagwatch\Router\Contract\ReplicaState;
use Lagwatch\Router\Position\Position;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Position\Positions;
use Lagwatch\Router\Routing\Decider;
use Lagwatch\Router\Routing\Decision;
use Lagwatch\Router\Routing\Reason;
use Lagwatch\Router\Routing\Statement;
use Lagwatch\Router\Routing\Target;
use Lagwatch\Router\SeededRandom;
use Lagwatch\Router\Session;
use PHPUnit\Framework\TestCase;

/** The cases of client/route_test.cc, and bounded staleness. */
final class DeciderTest extends TestCase
{
    private const NOW = 1796004314440;

    private static function replica(
        string $id,
        string $tier,
        int $weight,
        ?int $limit,
        bool $healthy = true,
        ?Position $position = null,
        int $delayMs = 10,
        int $measuredAtMs = self::NOW,
        int $fetchedAtMs = self::NOW,
    ): ReplicaRecord {
        return new ReplicaRecord(
            $id,
            $delayMs,
            0,
            $healthy ? ReplicaState::Ok : ReplicaState::Lagging,
            $healthy,
            $tier,
            $weight,
            $limit,
            1,
            $measuredAtMs,
            '1',
            $position?->kind() ?? PositionKind::None,
            $position,
            $fetchedAtMs,
            $fetchedAtMs + 1000,
        );
    }

    /** @param list<ReplicaRecord> $replicas */
    private static function contract(array $replicas, Circuit $circuit = Circuit::Up, bool $readable = true): Contract
    {
        $byId = [];
        foreach ($replicas as $r) {
            $byId[$r->id] = $r;
        }
        return new Contract(array_keys($byId), $byId, new PrimaryInfo('10.0.0.1:3306', $circuit, 'ok'), $readable, self::NOW);
    }

    private static function gtid(string $s): Position
    {
        return Positions::parse(PositionKind::MariaDbGtid, $s);
    }

    private static function read(): Statement
    {
        return new Statement(read: true);
    }

    private static function decide(Contract $c, ?Session $s = null, ?Statement $st = null, int $seed = 1, ?Decider $decider = null): Decision
    {
        return ($decider ?? new Decider())->decide($st ?? self::read(), $s ?? new Session(), $c, new SeededRandom($seed), self::NOW);
    }

    /** @return array<string, int> where $n reads go, by replica id ('primary', 'fail_fast') */
    private static function spread(Contract $c, ?Session $s, int $n, int $seed = 1, ?Decider $decider = null): array
    {
        $decider ??= new Decider();
        $random = new SeededRandom($seed);
        $out = [];
        for ($i = 0; $i < $n; ++$i) {
            $d = $decider->decide(self::read(), $s ?? new Session(), $c, $random, self::NOW);
            $k = $d->target === Target::Replica ? $d->replica->id : $d->target->value;
            $out[$k] = ($out[$k] ?? 0) + 1;
        }
        ksort($out);
        return $out;
    }

    public function testWritesLockingReadsTransactionsAndTheCallersFlagGoToThePrimary(): void
    {
        $c = self::contract([self::replica('r1:3306', 'tier1', 100, 200)]);
        self::assertSame(Reason::Write, self::decide($c, null, new Statement())->reason);
        self::assertSame(Reason::LockingRead, self::decide($c, null, new Statement(read: true, locking: true))->reason);
        self::assertSame(Reason::InTransaction, self::decide($c, null, new Statement(read: true, inTransaction: true))->reason);
        self::assertSame(Reason::Forced, self::decide($c, null, new Statement(read: true, forced: true))->reason);
        foreach ([new Statement(), new Statement(read: true, forced: true)] as $st) {
            $d = self::decide($c, null, $st);
            self::assertSame(Target::Primary, $d->target);
            self::assertSame('10.0.0.1:3306', $d->primary);
            self::assertFalse($d->degraded);
            self::assertFalse($d->isRead());
        }
        $read = self::decide($c);
        self::assertSame(Target::Replica, $read->target);
        self::assertSame('r1:3306', $read->replica->id);
        self::assertSame('tier1_available', $read->reasonLabel());
    }

    public function testTiersAreTriedInTheOrderOfTheirLimitsNoLimitLastEachFallingThrough(): void
    {
        $t3 = self::replica('t3:3306', 'tier3', 100, null);
        $t2 = self::replica('t2:3306', 'tier2', 100, 1000);
        $t1 = self::replica('t1:3306', 'tier1', 100, 200);
        self::assertSame(['t1:3306' => 50], self::spread(self::contract([$t3, $t2, $t1]), null, 50));
        $down1 = self::replica('t1:3306', 'tier1', 100, 200, false);
        self::assertSame(['t2:3306' => 50], self::spread(self::contract([$t3, $t2, $down1]), null, 50));
        self::assertSame('tier2_fallback', self::decide(self::contract([$t3, $t2, $down1]))->reasonLabel());
        $down2 = self::replica('t2:3306', 'tier2', 100, 1000, false);
        self::assertSame(['t3:3306' => 50], self::spread(self::contract([$t3, $down2, $down1]), null, 50));
        $down3 = self::replica('t3:3306', 'tier3', 100, null, false);
        $d = self::decide(self::contract([$down3, $down2, $down1]));
        self::assertSame(Target::Primary, $d->target);
        self::assertSame('no_healthy_replica', $d->reasonLabel());
        self::assertTrue($d->degraded);
        // A missing key is simply no record: the same.
        self::assertSame(Reason::NoHealthyReplica, self::decide(self::contract([]))->reason);
        // Without Redis: the same, said so.
        $d = self::decide(self::contract([], Circuit::Unknown, false));
        self::assertSame(Reason::RedisUnavailable, $d->reason);
        self::assertTrue($d->degraded);
        // The first tier among the records read is "available", whatever its name.
        self::assertSame('tier2_available', self::decide(self::contract([$t2]))->reasonLabel());
    }

    public function testWeightsOneHundredZeroZeroSendsEveryReadToTheFirstOneOneSplitsEvenly(): void
    {
        $skewed = self::contract([
            self::replica('a:3306', 'tier1', 100, 200),
            self::replica('b:3306', 'tier1', 0, 200),
            self::replica('c:3306', 'tier1', 0, 200),
        ]);
        self::assertSame(['a:3306' => 10000], self::spread($skewed, null, 10000));

        $even = self::spread(self::contract([self::replica('a:3306', 'tier1', 1, 200), self::replica('b:3306', 'tier1', 1, 200)]), null, 10000, 42);
        // Binomial(10000, 0.5): sd 50, so +-300 is six standard deviations.
        self::assertSame(10000, $even['a:3306'] + $even['b:3306']);
        self::assertGreaterThan(4700, $even['a:3306']);
        self::assertLessThan(5300, $even['a:3306']);

        $weighted = self::spread(self::contract([self::replica('a:3306', 'tier1', 750, 200), self::replica('b:3306', 'tier1', 250, 200)]), null, 10000, 7);
        self::assertGreaterThan(7200, $weighted['a:3306']);
        self::assertLessThan(7800, $weighted['a:3306']);
    }

    public function testWeightZeroIsNeverChosenUnlessThePrimaryIsDownAndNothingElseCanRead(): void
    {
        $drained = self::replica('z:3306', 'tier1', 0, 200);
        self::assertSame(['t2:3306' => 100], self::spread(self::contract([$drained, self::replica('t2:3306', 'tier2', 5, 1000)]), null, 100));
        self::assertSame(['primary' => 100], self::spread(self::contract([$drained]), null, 100));

        $d = self::decide(self::contract([$drained], Circuit::Down));
        self::assertSame(Target::Replica, $d->target);
        self::assertSame('z:3306', $d->replica->id);
        self::assertSame(Reason::DrainedReplica, $d->reason);
        self::assertTrue($d->degraded);
    }

    public function testPrimaryDownWritesFailFastReadsKeepGoingToHealthyReplicas(): void
    {
        $c = self::contract([self::replica('r1:3306', 'tier1', 100, 200)], Circuit::Down);
        $w = self::decide($c, null, new Statement());
        self::assertSame(Target::FailFast, $w->target);
        self::assertSame('primary_circuit_open', $w->reasonLabel());
        self::assertSame(Target::FailFast, self::decide($c, null, new Statement(read: true, locking: true))->target);
        $r = self::decide($c);
        self::assertSame(Target::Replica, $r->target);
        self::assertSame('r1:3306', $r->replica->id);

        $none = self::contract([self::replica('r1:3306', 'tier1', 100, 200, false)], Circuit::Down);
        $failed = self::decide($none);
        self::assertSame(Target::FailFast, $failed->target);
        self::assertTrue($failed->degraded);

        // Degraded still takes statements; ambiguous takes no writes; unknown is no opinion.
        self::assertSame(Target::Primary, self::decide(self::contract([], Circuit::Degraded), null, new Statement())->target);
        $split = self::decide(self::contract([], Circuit::Ambiguous), null, new Statement());
        self::assertSame(Target::FailFast, $split->target);
        self::assertSame(Reason::PrimaryAmbiguous, $split->reason);
        self::assertSame(Target::Primary, self::decide(self::contract([], Circuit::Ambiguous))->target);
        self::assertSame(Target::Primary, self::decide(new Contract(), null, new Statement())->target);
    }

    public function testReadYourWritesOnlyReplicasWhosePositionIncludesTheTokenServeTheSession(): void
    {
        $s = new Session();
        $s->wrote(self::gtid('0-1-120'), self::NOW);
        $behind = self::replica('behind:3306', 'tier1', 100, 200, true, self::gtid('0-1-119'));
        $ahead = self::replica('ahead:3306', 'tier2', 100, 1000, true, self::gtid('0-1-120,1-2-7'));
        self::assertSame(['ahead:3306' => 50], self::spread(self::contract([$behind, $ahead]), $s, 50));

        // Nobody has it: ask a replica of the token's kind (the first tier that has one), else the primary.
        $lagging = self::replica('ahead:3306', 'tier2', 100, 1000, true, self::gtid('0-1-100'));
        $ask = self::decide(self::contract([$behind, $lagging]), $s);
        self::assertSame(Target::AskReplica, $ask->target);
        self::assertSame('behind:3306', $ask->replica->id);
        self::assertSame(Target::Primary, $ask->fallback);
        self::assertSame(Reason::ReadYourWrites, $ask->reason);
        self::assertFalse($ask->degraded);
        $askDown = self::decide(self::contract([$behind], Circuit::Down), $s);
        self::assertSame(Target::FailFast, $askDown->fallback);

        // Positions of another kind, or none at all, are never asked and never proof.
        $binlog = self::replica('behind:3306', 'tier1', 100, 200, true, Positions::parse(PositionKind::Binlog, 'bin.000009:4'));
        $none = self::replica('ahead:3306', 'tier2', 100, 1000);
        $primary = self::decide(self::contract([$binlog, $none]), $s);
        self::assertSame(Target::Primary, $primary->target);
        self::assertSame('read_your_writes', $primary->reasonLabel());
        self::assertFalse($primary->degraded);

        // A session without a token reads anywhere usable.
        self::assertSame(Target::Replica, self::decide(self::contract([$binlog, $none]))->target);
    }

    public function testInclusionForMysqlGtidSetsAndBinaryLogCoordinates(): void
    {
        $uuid = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
        $mysql = static fn (string $s) => Positions::parse(PositionKind::MysqlGtid, $s);
        $coords = static fn (string $s) => Positions::parse(PositionKind::Binlog, $s);
        $s = new Session();
        $s->wrote($mysql("$uuid:1-57"), self::NOW);
        $at = fn (Position $p) => self::decide(self::contract([self::replica('r:3306', 'tier1', 1, 200, true, $p)]), $s)->target;
        self::assertSame(Target::AskReplica, $at($mysql("$uuid:1-56:58")));  // 57 missing: a gap is not inclusion
        self::assertSame(Target::Replica, $at($mysql("$uuid:1-60")));

        $s->wrote($coords('mysql-bin.000012:4567'), self::NOW);
        self::assertSame(Target::Primary, $at($coords('mysql-bin.000012:4566')));  // no zero-timeout ask
        self::assertSame(Target::Replica, $at($coords('mysql-bin.000013:4')));
        self::assertSame(Target::Primary, $at($coords('other-bin.000099:4')));
    }

    public function testWithoutATokenAReplicaServesOnceItsRecordProvesItHasTheWrite(): void
    {
        $write = self::NOW;
        $s = new Session();
        $s->wrote(null, $write);
        self::assertSame($write, $s->untokenedWriteMs());
        // Fetched 1100 ms after the write with ttl 1000: measured at most 100 ms after it; 150 ms stale.
        $r = self::replica('r:3306', 'tier1', 1, 200, true, null, 150, $write + 1100, $write + 1100);
        $late = new Decider(false);
        $d = $late->decide(self::read(), $s, self::contract([$r]), new SeededRandom(1), self::NOW);
        self::assertSame(Target::Primary, $d->target);
        self::assertSame(Reason::ReadYourWrites, $d->reason);
        // Fetched 1150 ms after: it had everything up to the write.
        $r = self::replica('r:3306', 'tier1', 1, 200, true, null, 150, $write + 1150, $write + 1150);
        self::assertSame(Target::Replica, $late->decide(self::read(), $s, self::contract([$r]), new SeededRandom(1), self::NOW)->target);
        // The clock skew allowed between hosts is on the safe side.
        $skewed = new Decider(false, 10);
        self::assertSame(Target::Primary, $skewed->decide(self::read(), $s, self::contract([$r]), new SeededRandom(1), self::NOW)->target);
        // A tokened write replaces the untokened one.
        $s->wrote(self::gtid('0-1-5'), $write);
        self::assertNull($s->untokenedWriteMs());
    }

    public function testBoundedStalenessServesOnlyReplicasProvablyWithinTheirLimitNow(): void
    {
        $decider = new Decider(true, 0);
        // delay 100 + age 95 + 5 = 200: at the limit, still fine; one ms older is not.
        $fresh = self::replica('r:3306', 'tier1', 1, 200, true, null, 100, self::NOW - 95);
        self::assertTrue($decider->usable($fresh, self::NOW));
        self::assertFalse($decider->usable($fresh, self::NOW + 1));
        self::assertSame(Target::Replica, self::decide(self::contract([$fresh]), null, null, 1, $decider)->target);
        $old = self::replica('r:3306', 'tier1', 1, 200, true, null, 100, self::NOW - 96);
        $d = self::decide(self::contract([$old]), null, null, 1, $decider);
        self::assertSame(Target::Primary, $d->target);
        self::assertSame(Reason::NoHealthyReplica, $d->reason);
        // Clock skew counts against it; a measurement "from the future" counts as age 0.
        self::assertFalse((new Decider(true, 1))->usable($fresh, self::NOW));
        self::assertTrue($decider->usable(self::replica('r:3306', 'tier1', 1, 200, true, null, 195, self::NOW + 5000), self::NOW));
        // Off, the contract's rule alone.
        self::assertTrue((new Decider(false))->usable($old, self::NOW + 60000));
        // A replica without a limit is not bound by it.
        self::assertTrue($decider->usable(self::replica('r:3306', 'tier3', 1, null, true, null, 5000, self::NOW - 10000), self::NOW));
        // The next tier serves when the first's replicas are too old to prove.
        $t2 = self::replica('t2:3306', 'tier2', 1, 1000, true, null, 100, self::NOW - 300);
        self::assertSame('tier2_fallback', self::decide(self::contract([$old, $t2]), null, null, 1, $decider)->reasonLabel());
    }

    public function testAReplicaWhoseConnectionFailedIsPassedOver(): void
    {
        $c = self::contract([self::replica('a:3306', 'tier1', 100, 200), self::replica('b:3306', 'tier1', 100, 200)]);
        $decider = new Decider();
        for ($seed = 1; $seed < 20; ++$seed) {
            $d = $decider->decide(self::read(), new Session(), $c, new SeededRandom($seed), self::NOW, ['a:3306']);
            self::assertSame('b:3306', $d->replica->id);
        }
        $d = $decider->decide(self::read(), new Session(), $c, new SeededRandom(1), self::NOW, ['a:3306', 'b:3306']);
        self::assertSame(Target::Primary, $d->target);
        self::assertTrue($d->degraded);
    }
}
