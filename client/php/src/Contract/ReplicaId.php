<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\Position\Text;

/** "host:port" as lagwatch spells a replica (client/record.h, IsReplicaId). */
final class ReplicaId
{
    /** Host 1..253 of [A-Za-z0-9._:-] (split at the last ':'), port 1..65535 without leading zeros. */
    public static function isValid(string $id): bool
    {
        $colon = strrpos($id, ':');
        if ($colon === false || !Text::isToken(substr($id, 0, $colon), '._:-', 1, 253)) {
            return false;
        }
        $port = substr($id, $colon + 1);
        if ($port === '' || strlen($port) > 5 || $port[0] === '0' || strspn($port, '0123456789') !== strlen($port)) {
            return false;
        }
        return (int) $port >= 1 && (int) $port <= 65535;
    }
}
