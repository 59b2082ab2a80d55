<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\Position\PositionKind;

/**
 * One refresh's view of the contract: the replica set, the records of the replicas the router
 * knows (those it has connections for), the primary. Immutable.
 */
final class Contract
{
    /**
     * @param list<string> $members `<prefix>:replicas`, valid ids only
     * @param array<string, ReplicaRecord> $replicas by id: the members the router knows whose key
     *        exists, has an expiry and parses
     * @param bool $readable false when Redis could not be read: nothing is usable, the circuit is unknown
     * @param int $fetchedAtMs when the refresh started, the router's wall clock, unix ms
     * @param int $expiresAtMs the earliest expiry among the records' keys (PHP_INT_MAX: none)
     */
    public function __construct(
        public readonly array $members = [],
        public readonly array $replicas = [],
        public readonly PrimaryInfo $primary = new PrimaryInfo(),
        public readonly bool $readable = true,
        public readonly int $fetchedAtMs = 0,
        public readonly int $expiresAtMs = PHP_INT_MAX,
    ) {
    }

    /** What a router knows without Redis: nothing is usable, the primary's circuit is unknown. */
    public static function unreadable(int $nowMs): self
    {
        return new self([], [], new PrimaryInfo(), false, $nowMs);
    }

    /** The replicas' published position kind when they agree on one other than none; null otherwise. */
    public function positionKind(): ?PositionKind
    {
        $kind = null;
        foreach ($this->replicas as $r) {
            if ($r->positionKind === PositionKind::None) {
                continue;
            }
            if ($kind !== null && $kind !== $r->positionKind) {
                return null;
            }
            $kind = $r->positionKind;
        }
        return $kind;
    }
}
