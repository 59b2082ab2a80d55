<?php

declare(strict_types=1);

namespace Lagwatch\Router\Routing;

/** Why a statement went where it went. Decision::reasonLabel() spells it for logs and routeInfo(). */
enum Reason: string
{
    /** Not a read. */
    case Write = 'write';
    /** FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE. */
    case LockingRead = 'locking_read';
    case InTransaction = 'in_transaction';
    /** The caller's flag, or a class or tag the application forces to the primary. */
    case Forced = 'forced';
    /** A usable replica of the first tier that has one, by weight: "<tier>_available". */
    case TierAvailable = 'tier_available';
    /** The same, in a later tier, after an earlier tier's replicas could not serve: "<tier>_fallback". */
    case TierFallback = 'tier_fallback';
    /** A replica asked without waiting said it has the session's writes. */
    case CaughtUp = 'caught_up';
    /** Only weight-0 replicas were usable and the primary cannot take the read: the last resort. */
    case DrainedReplica = 'drained_replica';
    /** No usable replica with a weight: the primary. */
    case NoHealthyReplica = 'no_healthy_replica';
    /** Redis could not be read (or lagwatch's contract is missing): the primary. */
    case RedisUnavailable = 'redis_unavailable';
    /**
     * A replica's answer came back after its deadline (bounded staleness: measured_at_ms +
     * max_delay_ms − delay_ms − clock_skew_ms): discarded, the read again on the primary.
     */
    case LateAnswer = 'late_answer';
    /** Usable replicas, but none proven to have the session's writes: the primary. */
    case ReadYourWrites = 'read_your_writes';
    /** The primary's circuit is open. */
    case PrimaryCircuitOpen = 'primary_circuit_open';
    /** Two writable servers: no one primary to write to. */
    case PrimaryAmbiguous = 'primary_ambiguous';
}
