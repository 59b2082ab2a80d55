<?php

declare(strict_types=1);

namespace Lagwatch\Router\Bench;

/** One session's client, each call one request. */
interface BenchClient
{
    /** The read: the oracle's sequence and the order's version. */
    public const READ_SQL = 'SELECT o.seq, d.version FROM lwbench.oracle o JOIN lwbench.orders d '
        . 'WHERE o.id = 1 AND d.id = ?';
    /** The same read for clients that cannot say which server answered: with the server's port. */
    public const READ_SQL_WITH_PORT = 'SELECT o.seq, d.version, @@port FROM lwbench.oracle o '
        . 'JOIN lwbench.orders d WHERE o.id = 1 AND d.id = ?';
    /** The write: one more version of the order. */
    public const WRITE_SQL = 'UPDATE lwbench.orders SET version = version + 1 WHERE id = ?';

    /** Bumps order $id's version on the primary; throws when the write failed or its fate is unknown. */
    public function write(int $id): void;

    /**
     * Reads order $id with the oracle's sequence: [server, seq, version], server "primary" or
     * "127.0.0.1:<port>" of the replica that answered. Throws when the read failed.
     *
     * @return array{0: string, 1: int, 2: int}
     */
    public function read(int $id): array;

    /** The order's version, read on the primary (at the start, and after a write of unknown fate). */
    public function versionOnPrimary(int $id): int;

    /** The end of the run (flush counters). */
    public function close(): void;
}
