<?php

declare(strict_types=1);

namespace Lagwatch\Router\Sql;

/** One statement of a text, classified. Immutable. */
final class StatementInfo
{
    /**
     * @param bool $read a plain read: a SELECT without INTO, locking clause or session-bound function
     * @param bool $locking FOR UPDATE, FOR SHARE or LOCK IN SHARE MODE outside comments and literals
     * @param ?bool $autocommit the session's autocommit as a SET in this statement leaves it; null: untouched
     * @param bool $chain COMMIT AND CHAIN / ROLLBACK AND CHAIN: a new transaction starts at once
     * @param bool $temporary CREATE/DROP TEMPORARY TABLE: no implicit commit
     */
    public function __construct(
        public readonly StatementKind $kind,
        public readonly bool $read = false,
        public readonly bool $locking = false,
        public readonly ?bool $autocommit = null,
        public readonly bool $chain = false,
        public readonly bool $temporary = false,
    ) {
    }

    /** Whether the statement may change data, so that a read-your-writes token is owed after it. */
    public function writes(): bool
    {
        return $this->kind === StatementKind::Write || $this->kind === StatementKind::Ddl;
    }
}
