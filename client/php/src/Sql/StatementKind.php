<?php

declare(strict_types=1);

namespace Lagwatch\Router\Sql;

/** What one statement is, as far as routing and transactions care. */
enum StatementKind
{
    /** SELECT, WITH ... SELECT, (SELECT ...): may go to a replica unless locking or not plain. */
    case Select;
    /** BEGIN, START TRANSACTION. */
    case Begin;
    /** COMMIT. */
    case Commit;
    /** ROLLBACK (not ROLLBACK TO SAVEPOINT). */
    case Rollback;
    /** SAVEPOINT, RELEASE SAVEPOINT, ROLLBACK TO: inside a transaction, changes nothing here. */
    case Savepoint;
    /** SET (variables, autocommit, names, transaction characteristics). */
    case Set;
    /** SHOW, DESCRIBE, EXPLAIN, USE, HELP: no data written. */
    case Inspect;
    /** CREATE, ALTER, DROP, RENAME, TRUNCATE, GRANT, REVOKE, LOCK/UNLOCK: commit implicitly. */
    case Ddl;
    /** Everything else: INSERT, UPDATE, DELETE, REPLACE, LOAD, CALL, DO, ... and anything unknown. */
    case Write;
}
