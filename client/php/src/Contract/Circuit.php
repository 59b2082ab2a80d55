<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

/** The primary's circuit as the pointer and the primary's key say (docs/redis.md#the-primary). */
enum Circuit: string
{
    /** Closed. */
    case Up = 'up';
    /** Recent failures or a half-open trial: still takes statements. */
    case Degraded = 'degraded';
    /** Open: writes fail fast. */
    case Down = 'down';
    /** Two writable servers: no one primary to write to. */
    case Ambiguous = 'ambiguous';
    /** No pointer (no agent, no Redis, or malformed): lagwatch has no opinion. */
    case Unknown = 'unknown';

    /** Below every opinion: an unknown circuit is never the worse of two. */
    private const NO_OPINION = -1;

    /** How bad it is, for taking the worse of two. */
    public function severity(): int
    {
        return match ($this) {
            self::Unknown => self::NO_OPINION,
            self::Up => 0,
            self::Degraded => 1,
            self::Down => 2,
            self::Ambiguous => 3,
        };
    }

    public function takesWrites(): bool
    {
        return $this !== self::Down && $this !== self::Ambiguous;
    }

    /** In a split brain the pointer's primary is the last one known: reading there is as good as it gets. */
    public function takesReads(): bool
    {
        return $this !== self::Down;
    }
}
