<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\Position\Position;
use Lagwatch\Router\Position\PositionKind;

/**
 * One replica's hash (`<prefix>:<host>:<port>`), validated by RecordParser. Immutable.
 */
final class ReplicaRecord
{
    /**
     * @param ?int $maxDelayMs the tier's limit; null: no limit (published as -1)
     * @param ?Position $position the applied position at the probe; null when the record has none
     * @param int $fetchedAtMs when the router sent the HGETALL, its wall clock, unix ms
     * @param int $expiresAtMs when the key expires at the latest (the fetch plus its PTTL)
     */
    public function __construct(
        public readonly string $id,
        public readonly int $delayMs,
        public readonly int $delayLowerMs,
        public readonly ReplicaState $state,
        public readonly bool $healthy,
        public readonly string $tier,
        public readonly int $weight,
        public readonly ?int $maxDelayMs,
        public readonly int $seq,
        public readonly int $measuredAtMs,
        public readonly string $agent,
        public readonly PositionKind $positionKind,
        public readonly ?Position $position,
        public readonly int $fetchedAtMs = 0,
        public readonly int $expiresAtMs = PHP_INT_MAX,
    ) {
    }

    /** The same record as read at $fetchedAtMs with $pttlMs left on its key. */
    public function fetched(int $fetchedAtMs, int $pttlMs): self
    {
        return new self(
            $this->id,
            $this->delayMs,
            $this->delayLowerMs,
            $this->state,
            $this->healthy,
            $this->tier,
            $this->weight,
            $this->maxDelayMs,
            $this->seq,
            $this->measuredAtMs,
            $this->agent,
            $this->positionKind,
            $this->position,
            $fetchedAtMs,
            $fetchedAtMs + $pttlMs
        );
    }

    /**
     * Reads may go here by the contract: healthy, and within the tier's limit (the parser refuses
     * a record where the two disagree, so this is `healthy`).
     */
    public function usable(): bool
    {
        return $this->healthy && ($this->maxDelayMs === null || $this->delayMs <= $this->maxDelayMs);
    }

    /** The limit for ordering tiers: no limit last. */
    public function tierLimit(): int
    {
        return $this->maxDelayMs ?? PHP_INT_MAX;
    }
}
