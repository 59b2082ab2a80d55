<?php

declare(strict_types=1);

namespace Lagwatch\Router\Routing;

use Lagwatch\Router\Position\Text;

/**
 * Router feedback (docs/redis.md#router-feedback-rwsr--dsr; client/feedback.h): the
 * `HINCRBY rw_stats:<app> <field> 1` commands that report what a router did with a decision.
 */
final class Feedback
{
    /** 1..64 of [A-Za-z0-9_.:-], the contract's rule for `<app>`. */
    public static function isValidApp(string $app): bool
    {
        return Text::isToken($app, '_.:-', 1, 64);
    }

    /**
     * The fields to increment for one statement routed by $decision, as finally carried out (an
     * AskReplica decision is passed as the replica read or the fallback it became), $served when
     * it was handed a connection where it was sent. Reads only; writes count nothing:
     *   a read on a replica    reads_replica, reads_replica:<host:port>
     *   a read on the primary  reads_master
     *   a degraded read        degrade_attempts, and degrade_successes when served
     *
     * @return list<string>
     */
    public static function fields(Decision $decision, bool $served): array
    {
        if (!$decision->isRead()) {
            return [];
        }
        $fields = [];
        if ($decision->degraded) {
            $fields[] = 'degrade_attempts';
            if ($served && $decision->target !== Target::FailFast) {
                $fields[] = 'degrade_successes';
            }
        }
        if ($served && $decision->target === Target::Replica && $decision->replica !== null) {
            $fields[] = 'reads_replica';
            $fields[] = 'reads_replica:' . $decision->replica->id;
        } elseif ($served && $decision->target === Target::Primary) {
            $fields[] = 'reads_master';
        }
        return $fields;
    }

    /**
     * The commands for $fields: one HINCRBY ... 1 each, as the contract spells them.
     *
     * @param list<string> $fields
     * @return list<list<string>>
     */
    public static function commands(string $app, array $fields): array
    {
        return array_map(static fn (string $f): array => ['HINCRBY', 'rw_stats:' . $app, $f, '1'], $fields);
    }
}
