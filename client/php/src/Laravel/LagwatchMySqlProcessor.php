<?php

declare(strict_types=1);

namespace Lagwatch\Router\Laravel;

use Illuminate\Database\Query\Builder;
use Illuminate\Database\Query\Processors\MySqlProcessor;

/**
 * MySqlProcessor whose insertGetId() takes the id the connection kept right after the insert:
 * the token query that follows a write (SELECT @@last_gtid) resets the protocol's insert id, so
 * PDO::lastInsertId() on the primary says 0 by then.
 */
class LagwatchMySqlProcessor extends MySqlProcessor
{
    public function processInsertGetId(Builder $query, $sql, $values, $sequence = null)
    {
        $connection = $query->getConnection();
        $connection->insert($sql, $values);
        $id = $connection instanceof LagwatchMySqlConnection
            ? $connection->lastInsertId()
            : $connection->getPdo()->lastInsertId($sequence);
        return is_numeric($id) ? (int) $id : $id;
    }
}
