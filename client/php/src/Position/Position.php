<?php

declare(strict_types=1);

namespace Lagwatch\Router\Position;

/**
 * A replication position of one kind: a MariaDB GTID list, a MySQL GTID set or binary log
 * coordinates. Values; immutable. Built only by Positions::parse, so a Position's text holds only
 * digits, hex, '-', ':', ',', '.', '_', letters and newlines: it may be quoted into SQL.
 */
interface Position
{
    public function kind(): PositionKind;

    /**
     * Whether this position has everything $other had: MariaDB per domain (seq_no at least the
     * other's; server ids do not matter), MySQL by set inclusion (gaps count), coordinates by the
     * same base name then (file number, offset). False for positions of different kinds.
     */
    public function includes(Position $other): bool;

    /** As the server prints it ("0-1-120,1-2-7", MySQL's GTID set text, "mysql-bin.000012:4567"). */
    public function toString(): string;
}
