<?php

declare(strict_types=1);

namespace Lagwatch\Router\Sql;

/**
 * Follows a session's transaction state from the statements routed through it: BEGIN / START
 * TRANSACTION open one, COMMIT / ROLLBACK end it (unless AND CHAIN), DDL commits it implicitly,
 * and `SET autocommit = 0` keeps one open until autocommit is on again.
 * Not thread-safe; one per router session.
 */
final class TransactionTracker
{
    private bool $autocommit = true;
    private bool $explicit = false;

    /** Inside BEGIN ... COMMIT, or with autocommit off. */
    public function inTransaction(): bool
    {
        return $this->explicit || !$this->autocommit;
    }

    /** Takes in the statements of one text, in order, as the server will run them. */
    public function observe(SqlClass $class): void
    {
        foreach ($class->statements as $s) {
            switch ($s->kind) {
                case StatementKind::Begin:
                    $this->explicit = true;
                    break;
                case StatementKind::Commit:
                case StatementKind::Rollback:
                    $this->explicit = $s->chain;
                    break;
                case StatementKind::Ddl:
                    if (!$s->temporary) {
                        $this->explicit = false;
                    }
                    break;
                case StatementKind::Set:
                    if ($s->autocommit !== null) {
                        // Turning autocommit on (from off) commits the open transaction.
                        if ($s->autocommit && !$this->autocommit) {
                            $this->explicit = false;
                        }
                        $this->autocommit = $s->autocommit;
                    }
                    break;
                default:
                    break;
            }
        }
    }

    /** Forgets everything (the connection it followed was closed). */
    public function reset(): void
    {
        $this->autocommit = true;
        $this->explicit = false;
    }
}
