<?php

declare(strict_types=1);

namespace Lagwatch\Router\Routing;

use Lagwatch\Router\Contract\Circuit;
use Lagwatch\Router\Contract\ReplicaRecord;

/** Where a statement goes, and why (client/route.h). Immutable. */
final class Decision
{
    /**
     * @param ?ReplicaRecord $replica Replica, AskReplica: the replica's record
     * @param string $primary the pointer's primary, '' when unknown
     * @param Target $fallback AskReplica: where the read goes when the replica lacks the token
     * @param bool $degraded a read that wanted a replica and could not have one (counted in rw_stats)
     */
    public function __construct(
        public readonly Target $target,
        public readonly Reason $reason,
        public readonly ?ReplicaRecord $replica = null,
        public readonly string $primary = '',
        public readonly Circuit $circuit = Circuit::Unknown,
        public readonly Target $fallback = Target::Primary,
        public readonly bool $degraded = false,
    ) {
    }

    public function with(Target $target, Reason $reason, ?ReplicaRecord $replica = null, ?bool $degraded = null): self
    {
        return new self(
            $target,
            $reason,
            $replica ?? ($target === Target::Replica || $target === Target::AskReplica ? $this->replica : null),
            $this->primary,
            $this->circuit,
            $this->fallback,
            $degraded ?? $this->degraded,
        );
    }

    /** The reason as logs and routeInfo() spell it: "tier1_available", "no_healthy_replica", ... */
    public function reasonLabel(): string
    {
        return match ($this->reason) {
            Reason::TierAvailable => ($this->replica?->tier ?? 'tier') . '_available',
            Reason::TierFallback => ($this->replica?->tier ?? 'tier') . '_fallback',
            default => $this->reason->value,
        };
    }

    /** Whether the statement was a read the decider wanted on a replica (what rw_stats counts). */
    public function isRead(): bool
    {
        return $this->degraded || in_array($this->reason, [
            Reason::TierAvailable, Reason::TierFallback, Reason::CaughtUp, Reason::DrainedReplica,
            Reason::NoHealthyReplica, Reason::RedisUnavailable, Reason::ReadYourWrites, Reason::LateAnswer,
        ], true);
    }
}
