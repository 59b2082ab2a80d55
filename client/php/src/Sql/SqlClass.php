<?php

declare(strict_types=1);

namespace Lagwatch\Router\Sql;

/** A whole text, classified (client/sql_classify.h). Immutable. */
final class SqlClass
{
    /**
     * @param bool $read nothing but plain reads (at least one statement, none locking)
     * @param bool $locking a locking read somewhere in the text
     * @param list<StatementInfo> $statements in order
     * @param string $fingerprint the text with literals as `?`, comments dropped, whitespace collapsed
     */
    public function __construct(
        public readonly bool $read,
        public readonly bool $locking,
        public readonly array $statements,
        public readonly string $fingerprint,
    ) {
    }

    /** Whether any statement may change data. */
    public function writes(): bool
    {
        foreach ($this->statements as $s) {
            if ($s->writes()) {
                return true;
            }
        }
        return false;
    }
}
