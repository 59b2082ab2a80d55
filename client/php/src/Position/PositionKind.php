<?php

declare(strict_types=1);

namespace Lagwatch\Router\Position;

/**
 * The kinds of replication position lagwatch publishes (`position_kind`, docs/redis.md), spelled
 * as published.
 */
enum PositionKind: string
{
    case None = 'none';
    case MariaDbGtid = 'mariadb_gtid';
    case MysqlGtid = 'mysql_gtid';
    case Binlog = 'binlog';
}
