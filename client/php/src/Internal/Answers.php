<?php

declare(strict_types=1);

namespace Lagwatch\Router\Internal;

use Lagwatch\Router\Routing\Decision;
use Lagwatch\Router\Routing\Target;

/**
 * What the answer to a routed statement means for Router::run(): late past its bounded-staleness
 * deadline (discarded, read again on the primary), or a failure that lost the connection (the
 * replica skipped, the read again elsewhere).
 *
 * @internal the Router's
 */
final class Answers
{
    /** Every term of a deadline is clamped to ±2^52, so no record can overflow the sum. */
    private const TERM_LIMIT = 1 << 52;

    /**
     * When a replica read of $d, decided at $decidedAtMs, must have its answer by (bounded
     * staleness: measured_at_ms + max_delay_ms − delay_ms − clock_skew_ms), unix ms on the
     * router's clock; null when it has no deadline (the primary, no limit, bounded_staleness
     * off). A record measured after $decidedAtMs (this clock behind the agent's by more than
     * clock_skew_ms) counts as measured at $decidedAtMs, as Decider::usable() took it. Saturates
     * rather than overflowing on absurd records (client/cases/routing.json).
     */
    public static function deadlineMs(Decision $d, bool $boundedStaleness, int $clockSkewMs, int $decidedAtMs): ?int
    {
        $r = $d->replica;
        if ($d->target !== Target::Replica || $r === null || !$boundedStaleness || $r->maxDelayMs === null) {
            return null;
        }
        $clamp = static fn (int $v): int => max(-self::TERM_LIMIT, min(self::TERM_LIMIT, $v));
        return $clamp(min($r->measuredAtMs, $decidedAtMs)) + $clamp($r->maxDelayMs)
            - $clamp($r->delayMs) - $clamp($clockSkewMs);
    }

    /**
     * Whether $e, or an exception it wraps (a framework's), says the connection itself is gone
     * (MySQL client errors 2006, 2013: a read timeout is one of them).
     */
    public static function connectionLost(\Throwable $e): bool
    {
        for ($x = $e; $x !== null; $x = $x->getPrevious()) {
            if (!$x instanceof \PDOException) {
                continue;
            }
            $code = $x->errorInfo[1] ?? null;
            if (
                $code === 2006 || $code === 2013
                || str_contains($x->getMessage(), 'server has gone away')
                || str_contains($x->getMessage(), 'Lost connection')
            ) {
                return true;
            }
        }
        return false;
    }
}
