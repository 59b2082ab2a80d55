<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Routing;

use Lagwatch\Router\Contract\ReplicaRecord;
use Lagwatch\Router\Contract\ReplicaState;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Routing\Decision;
use Lagwatch\Router\Routing\Feedback;
use Lagwatch\Router\Routing\Reason;
use Lagwatch\Router\Routing\Target;
use PHPUnit\Framework\TestCase;

/** The cases of client/feedback_test.cc. */
final class FeedbackTest extends TestCase
{
    private static function replica(): ReplicaRecord
    {
        return new ReplicaRecord('10.0.0.12:3306', 10, 0, ReplicaState::Ok, true, 'tier1', 1, 200, 1, 1, '1', PositionKind::None, null);
    }

    public function testAReadOnAReplicaCountsReadsReplicaAndTheReplicasOwnField(): void
    {
        $d = new Decision(Target::Replica, Reason::TierAvailable, self::replica());
        self::assertSame(
            [
                ['HINCRBY', 'rw_stats:shop', 'reads_replica', '1'],
                ['HINCRBY', 'rw_stats:shop', 'reads_replica:10.0.0.12:3306', '1'],
            ],
            Feedback::commands('shop', Feedback::fields($d, true))
        );
        self::assertSame([], Feedback::fields($d, false));
        self::assertSame(['reads_replica', 'reads_replica:10.0.0.12:3306'], Feedback::fields(new Decision(Target::Replica, Reason::CaughtUp, self::replica()), true));
    }

    public function testADegradedReadCountsAnAttemptAndASuccessWhenThePrimaryServedIt(): void
    {
        $d = new Decision(Target::Primary, Reason::NoHealthyReplica, degraded: true);
        self::assertSame(['degrade_attempts', 'degrade_successes', 'reads_master'], Feedback::fields($d, true));
        self::assertSame(['degrade_attempts'], Feedback::fields($d, false));
        $failed = new Decision(Target::FailFast, Reason::PrimaryCircuitOpen, degraded: true);
        self::assertSame(['degrade_attempts'], Feedback::fields($failed, false));
        $drained = new Decision(Target::Replica, Reason::DrainedReplica, self::replica(), degraded: true);
        self::assertSame(['degrade_attempts', 'degrade_successes', 'reads_replica', 'reads_replica:10.0.0.12:3306'], Feedback::fields($drained, true));
        $noRedis = new Decision(Target::Primary, Reason::RedisUnavailable, degraded: true);
        self::assertSame(['degrade_attempts', 'degrade_successes', 'reads_master'], Feedback::fields($noRedis, true));
    }

    public function testReadYourWritesReadsOnThePrimaryCountAsPrimaryReadsWritesNotAtAll(): void
    {
        self::assertSame(['reads_master'], Feedback::fields(new Decision(Target::Primary, Reason::ReadYourWrites), true));
        foreach ([Reason::Write, Reason::LockingRead, Reason::InTransaction, Reason::Forced] as $reason) {
            self::assertSame([], Feedback::fields(new Decision(Target::Primary, $reason), true));
        }
        self::assertSame([], Feedback::fields(new Decision(Target::FailFast, Reason::PrimaryCircuitOpen), false));
    }

    public function testAppNamesFollowTheContractsRule(): void
    {
        self::assertTrue(Feedback::isValidApp('shop-eu.1:web_2'));
        foreach (['', str_repeat('a', 65), 'shop stats', "shop\r\nFLUSHALL", 'shop*'] as $bad) {
            self::assertFalse(Feedback::isValidApp($bad), $bad);
        }
    }
}
