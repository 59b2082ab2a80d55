<?php

declare(strict_types=1);

namespace Lagwatch\Router\Routing;

use Lagwatch\Router\Contract\Circuit;
use Lagwatch\Router\Contract\Contract;
use Lagwatch\Router\Contract\ReplicaRecord;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\RandomSource;
use Lagwatch\Router\Session;

/**
 * The reference routing algorithm of docs/routing.md ("The algorithm"; client/route.h) as a pure
 * function of the statement, the session, a snapshot of the contract, a random source and the
 * time, with bounded staleness on top of `healthy`.
 *
 * Pure; the random source is the only state it touches.
 */
final class Decider
{
    /** The margin of the bounded-staleness rule, for the time between the check and the read. */
    public const STALENESS_MARGIN_MS = 5;

    /**
     * @param bool $boundedStaleness a replica with a limit serves only if delay_ms + (now −
     *        measured_at_ms) + clock skew + 5 ≤ max_delay_ms: proven within its limit when it answers
     * @param int $clockSkewMs how far the router's and the agent's wall clocks may differ
     * @param int $ttlMs redis.ttl_ms of the agent (the no-token rule)
     */
    public function __construct(
        private readonly bool $boundedStaleness = true,
        private readonly int $clockSkewMs = 0,
        private readonly int $ttlMs = 1000,
    ) {
    }

    /**
     * Whether reads may go to $r at $nowMs: healthy, within the tier's limit, and with bounded
     * staleness, provably still within it now.
     */
    public function usable(ReplicaRecord $r, int $nowMs): bool
    {
        if (!$r->usable()) {
            return false;
        }
        if (!$this->boundedStaleness || $r->maxDelayMs === null) {
            return true;
        }
        return self::freshUntilMs($r, $this->clockSkewMs, $nowMs) - $nowMs >= self::STALENESS_MARGIN_MS;
    }

    /**
     * Until when (unix ms, the router's clock) an answer from $r, read at $nowMs, is within its
     * tier's limit: measured_at_ms + max_delay_ms − delay_ms − clock_skew_ms (docs/routing.md,
     * "Bounded staleness"; client/route.h FreshUntilMs); null for a replica without a limit. A
     * record measured after $nowMs (this clock behind the agent's by more than the skew) counts
     * as measured at $nowMs. Every term is clamped to ±2^52, so no record can overflow the sum.
     */
    public static function freshUntilMs(ReplicaRecord $r, int $clockSkewMs, int $nowMs): ?int
    {
        if ($r->maxDelayMs === null) {
            return null;
        }
        $clamp = static fn (int $v): int => max(-(1 << 52), min(1 << 52, $v));
        return $clamp(min($r->measuredAtMs, $nowMs)) + $clamp($r->maxDelayMs)
            - $clamp($r->delayMs) - $clamp($clockSkewMs);
    }

    /**
     * Where $statement goes:
     *  1. not a read, locking, in a transaction or forced: the primary; FailFast when its circuit
     *     is down or ambiguous;
     *  2. a read: the usable replicas the session may read from (read-your-writes), tier by tier in
     *     the order of their limits (no limit last), weighted at random among those with a weight
     *     above 0 in the first tier that has one;
     *  3. none, and the session holds a token: AskReplica for a usable replica publishing the
     *     token's kind (chosen the same way), unless the kind has no cheap check (coordinates);
     *  4. otherwise the primary — or, when its circuit is down, a usable weight-0 replica the
     *     session may read from, else FailFast.
     * An unknown circuit (no pointer) stops nothing: lagwatch has no opinion.
     *
     * @param list<string> $excluded replicas not to use (their connection failed)
     */
    public function decide(
        Statement $statement,
        Session $session,
        Contract $contract,
        RandomSource $random,
        int $nowMs,
        array $excluded = [],
    ): Decision {
        $circuit = $contract->primary->circuit;
        $primary = new Decision(Target::Primary, Reason::Write, null, $contract->primary->id, $circuit);
        $force = match (true) {
            $statement->forced => Reason::Forced,
            $statement->inTransaction => Reason::InTransaction,
            $statement->locking => Reason::LockingRead,
            !$statement->read => Reason::Write,
            default => null,
        };
        if ($force !== null) {
            return $circuit->takesWrites()
                ? $primary->with(Target::Primary, $force)
                : $primary->with(Target::FailFast, self::unavailable($circuit));
        }

        $proven = [];
        $askable = [];
        $anyUsable = false;
        $token = $session->token();
        foreach ($contract->replicas as $r) {
            if (in_array($r->id, $excluded, true) || !$this->usable($r, $nowMs)) {
                continue;
            }
            $anyUsable = true;
            if ($session->seenBy($r, $this->ttlMs, $this->clockSkewMs)) {
                $proven[] = $r;
            } elseif ($token !== null && $r->position !== null && $r->position->kind() === $token->kind()) {
                $askable[] = $r;
            }
        }
        $r = self::pick($proven, $random);
        if ($r !== null) {
            $reason = self::firstTier($r, $contract) ? Reason::TierAvailable : Reason::TierFallback;
            return $primary->with(Target::Replica, $reason, $r);
        }
        $fallbackReason = match (true) {
            $anyUsable && $session->hasWrites() => Reason::ReadYourWrites,
            $contract->readable => Reason::NoHealthyReplica,
            default => Reason::RedisUnavailable,
        };
        if ($token !== null && $token->kind() !== PositionKind::Binlog) {
            $r = self::pick($askable, $random);
            if ($r !== null) {
                $ask = new Decision(
                    Target::AskReplica,
                    Reason::ReadYourWrites,
                    $r,
                    $contract->primary->id,
                    $circuit,
                    $circuit->takesReads() ? Target::Primary : Target::FailFast,
                );
                return $ask;
            }
        }
        if ($circuit->takesReads()) {
            return $primary->with(Target::Primary, $fallbackReason, null, $fallbackReason !== Reason::ReadYourWrites);
        }
        $r = self::pick($proven, $random, true);
        if ($r !== null) {
            return $primary->with(Target::Replica, Reason::DrainedReplica, $r, true);
        }
        return $primary->with(Target::FailFast, self::unavailable($circuit), null, true);
    }

    private static function unavailable(Circuit $circuit): Reason
    {
        return $circuit === Circuit::Ambiguous ? Reason::PrimaryAmbiguous : Reason::PrimaryCircuitOpen;
    }

    /** The tier order: by limit, no limit last; ties by name. */
    private static function tierOrder(ReplicaRecord $a, ReplicaRecord $b): int
    {
        return $a->tierLimit() <=> $b->tierLimit() ?: strcmp($a->tier, $b->tier) <=> 0;
    }

    /** Whether no record of the contract is in a tier before $r's: $r's tier is the first. */
    private static function firstTier(ReplicaRecord $r, Contract $contract): bool
    {
        foreach ($contract->replicas as $other) {
            if (self::tierOrder($other, $r) < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * The first tier (in tier order) with a candidate of weight > 0: one of them, at random in
     * proportion to weight. With $drained, weights are ignored (each counts 1), for the last
     * resort. Null when there is none.
     *
     * @param list<ReplicaRecord> $candidates
     */
    private static function pick(array $candidates, RandomSource $random, bool $drained = false): ?ReplicaRecord
    {
        usort($candidates, self::tierOrder(...));  // stable
        $n = count($candidates);
        for ($begin = 0; $begin < $n;) {
            $end = $begin;
            $total = 0;
            while ($end < $n && self::tierOrder($candidates[$begin], $candidates[$end]) === 0) {
                $total += $drained ? 1 : $candidates[$end]->weight;
                ++$end;
            }
            if ($total > 0) {
                $x = $random->below($total);
                for ($i = $begin; $i < $end; ++$i) {
                    $w = $drained ? 1 : $candidates[$i]->weight;
                    if ($x < $w) {
                        return $candidates[$i];
                    }
                    $x -= $w;
                }
            }
            $begin = $end;
        }
        return null;
    }
}
