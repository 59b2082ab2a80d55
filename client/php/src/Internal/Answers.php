<?php

declare(strict_types=1);

namespace Lagwatch\Router\Internal;

use Lagwatch\Router\Routing\Decider;
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
    /**
     * When a replica read of $d, decided at $decidedAtMs, must have its answer by (bounded
     * staleness: Decider::freshUntilMs), unix ms on the router's clock; null when it has no
     * deadline (the primary, no limit, bounded_staleness off).
     */
    public static function deadlineMs(Decision $d, bool $boundedStaleness, int $clockSkewMs, int $decidedAtMs): ?int
    {
        $r = $d->replica;
        if ($d->target !== Target::Replica || $r === null || !$boundedStaleness) {
            return null;
        }
        return Decider::freshUntilMs($r, $clockSkewMs, $decidedAtMs);
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
