<?php

declare(strict_types=1);

namespace Lagwatch\Router\Sql;

/**
 * Tells reads from the rest (docs/routing.md, "Force-primary cases"; client/sql_classify.h): a
 * plain read is a SELECT (or WITH ... SELECT, or a parenthesised SELECT) without INTO, without a
 * locking clause and without a session-bound function (LAST_INSERT_ID, FOUND_ROWS, ROW_COUNT,
 * GET_LOCK, RELEASE_LOCK, RELEASE_ALL_LOCKS, IS_USED_LOCK, IS_FREE_LOCK, NEXTVAL, SETVAL, LASTVAL,
 * NEXT VALUE FOR, PREVIOUS VALUE FOR). Text with several statements is a read only if every one
 * is. Also recognises the statements that begin and end transactions and set autocommit.
 *
 * Pure; never fails: the worst case is "not a read" (the primary).
 */
final class Classifier
{
    private const SESSION_FUNCTIONS = [
        'last_insert_id', 'found_rows', 'row_count', 'get_lock', 'release_lock', 'release_all_locks',
        'is_used_lock', 'is_free_lock', 'nextval', 'setval', 'lastval',
    ];
    private const DDL = ['create', 'alter', 'drop', 'rename', 'truncate', 'grant', 'revoke', 'lock', 'unlock'];
    private const INSPECT = ['show', 'describe', 'desc', 'explain', 'use', 'help'];

    public static function classify(string $sql): SqlClass
    {
        [$t, $fingerprint] = Lexer::scan($sql);
        $statements = [];
        $locking = false;
        $allRead = true;
        $begin = 0;
        $n = count($t);
        for ($i = 0; $i <= $n; ++$i) {
            if ($i < $n && !($t[$i]->type === Token::PUNCT && $t[$i]->text === ';')) {
                continue;
            }
            if ($i > $begin) {
                $one = self::one($t, $begin, $i);
                $statements[] = $one;
                $allRead = $allRead && $one->read;
                $locking = $locking || $one->locking;
            }
            $begin = $i + 1;
        }
        return new SqlClass($statements !== [] && $allRead && !$locking, $locking, $statements, $fingerprint);
    }

    /** @param list<Token> $t */
    private static function isWord(array $t, int $i, string $w): bool
    {
        return isset($t[$i]) && $t[$i]->isWord($w);
    }

    /** @param list<Token> $t */
    private static function isPunct(array $t, int $i, string $p): bool
    {
        return isset($t[$i]) && $t[$i]->type === Token::PUNCT && $t[$i]->text === $p;
    }

    /** @param list<Token> $t */
    private static function isSessionBoundFunction(array $t, int $i): bool
    {
        if ($t[$i]->type !== Token::WORD) {
            return false;
        }
        if (
            ($t[$i]->text === 'next' || $t[$i]->text === 'previous')
            && self::isWord($t, $i + 1, 'value') && self::isWord($t, $i + 2, 'for')
        ) {
            return true;
        }
        return isset($t[$i + 1]) && $t[$i + 1]->text === '(' && in_array($t[$i]->text, self::SESSION_FUNCTIONS, true);
    }

    /**
     * One statement's tokens [$begin, $end).
     *
     * @param list<Token> $t
     */
    private static function one(array $t, int $begin, int $end): StatementInfo
    {
        $first = $begin;
        while ($first < $end && self::isPunct($t, $first, '(')) {
            ++$first;
        }
        if ($first === $end) {
            return new StatementInfo(StatementKind::Write);
        }
        $word = $t[$first]->type === Token::WORD ? $t[$first]->text : '';
        $select = $word === 'select';
        if ($word === 'with') {
            // WITH [RECURSIVE] name AS (...), ... then the statement: its first keyword outside
            // the parentheses decides (MySQL 8 allows UPDATE and DELETE there).
            $depth = 0;
            for ($i = $first + 1; $i < $end; ++$i) {
                if (self::isPunct($t, $i, '(')) {
                    ++$depth;
                } elseif (self::isPunct($t, $i, ')')) {
                    --$depth;
                }
                if (
                    $depth === 0 && $t[$i]->type === Token::WORD
                    && in_array($t[$i]->text, ['select', 'update', 'delete', 'insert', 'replace'], true)
                ) {
                    $select = $t[$i]->text === 'select';
                    break;
                }
            }
        }
        $read = $select;
        $locking = false;
        for ($i = $begin; $i < $end; ++$i) {
            if (
                self::isWord($t, $i, 'for')
                && (self::isWord($t, $i + 1, 'update') || self::isWord($t, $i + 1, 'share'))
            ) {
                $locking = true;
            } elseif (
                self::isWord($t, $i, 'lock') && self::isWord($t, $i + 1, 'in')
                && self::isWord($t, $i + 2, 'share') && self::isWord($t, $i + 3, 'mode')
            ) {
                $locking = true;
            } elseif (self::isWord($t, $i, 'into') || self::isSessionBoundFunction($t, $i)) {
                $read = false;
            }
        }
        if ($select || $word === 'with') {
            $kind = $select ? StatementKind::Select : StatementKind::Write;
            return new StatementInfo($kind, $read && !$locking, $locking);
        }
        return self::control($t, $first, $end, $word, $locking);
    }

    /**
     * Statements other than SELECT: transaction control, SET, the inspecting ones, DDL, writes.
     *
     * @param list<Token> $t
     */
    private static function control(array $t, int $first, int $end, string $word, bool $locking): StatementInfo
    {
        $next = $t[$first + 1] ?? null;
        $chain = false;
        for ($i = $first + 1; $i + 1 < $end; ++$i) {
            if (self::isWord($t, $i, 'and') && self::isWord($t, $i + 1, 'chain')) {
                $chain = true;
            }
        }
        switch ($word) {
            case 'begin':
                // BEGIN NOT ATOMIC is a compound statement, not a transaction.
                return self::isWord($t, $first + 1, 'not')
                    ? new StatementInfo(StatementKind::Write)
                    : new StatementInfo(StatementKind::Begin);
            case 'start':
                return self::isWord($t, $first + 1, 'transaction')
                    ? new StatementInfo(StatementKind::Begin)
                    : new StatementInfo(StatementKind::Write);  // START SLAVE and the like
            case 'commit':
                return new StatementInfo(StatementKind::Commit, chain: $chain);
            case 'rollback':
                $to = self::isWord($t, $first + 1, 'work') ? $first + 2 : $first + 1;
                return self::isWord($t, $to, 'to')
                    ? new StatementInfo(StatementKind::Savepoint)
                    : new StatementInfo(StatementKind::Rollback, chain: $chain);
            case 'savepoint':
                return new StatementInfo(StatementKind::Savepoint);
            case 'release':
                return self::isWord($t, $first + 1, 'savepoint')
                    ? new StatementInfo(StatementKind::Savepoint)
                    : new StatementInfo(StatementKind::Write);  // RELEASE_LOCK is a function, not this
            case 'set':
                return new StatementInfo(StatementKind::Set, autocommit: self::autocommit($t, $first + 1, $end));
        }
        if (in_array($word, self::INSPECT, true)) {
            return new StatementInfo(StatementKind::Inspect, locking: $locking);
        }
        if (in_array($word, self::DDL, true)) {
            $temporary = $next !== null && $next->isWord('temporary');
            return new StatementInfo(StatementKind::Ddl, locking: $locking, temporary: $temporary);
        }
        return new StatementInfo(StatementKind::Write, locking: $locking);
    }

    /**
     * The session autocommit a SET leaves: `autocommit`, `@@autocommit`, `@@session.autocommit`,
     * `@@local.autocommit`, `SESSION autocommit`, `LOCAL autocommit` assigned with `=` or `:=`
     * 0/1/ON/OFF/TRUE/FALSE, anywhere in the list of assignments. Null when the statement does not
     * set it (`@autocommit` is a user variable, `@@global.autocommit` another session's default).
     *
     * @param list<Token> $t
     */
    private static function autocommit(array $t, int $from, int $end): ?bool
    {
        $value = null;
        for ($i = $from; $i < $end; ++$i) {
            if (!self::isWord($t, $i, 'autocommit')) {
                continue;
            }
            // What stands before it: nothing, ',', SESSION, LOCAL, '@@', '@@session.', '@@local.'.
            $before = $i - 1;
            if (self::isPunct($t, $before, '.')) {
                if (!(self::isWord($t, $before - 1, 'session') || self::isWord($t, $before - 1, 'local'))) {
                    continue;  // @@global.autocommit
                }
                $before -= 2;
                if (!(self::isPunct($t, $before, '@') && self::isPunct($t, $before - 1, '@'))) {
                    continue;
                }
                $before -= 2;
            } elseif (self::isPunct($t, $before, '@')) {
                if (!self::isPunct($t, $before - 1, '@')) {
                    continue;  // @autocommit, a user variable
                }
                $before -= 2;
            } elseif (self::isWord($t, $before, 'session') || self::isWord($t, $before, 'local')) {
                --$before;
            }
            if (!($before < $from || self::isPunct($t, $before, ','))) {
                continue;
            }
            $at = $i + 1;
            if (self::isPunct($t, $at, ':')) {
                ++$at;
            }
            if (!self::isPunct($t, $at, '=') || !isset($t[$at + 1]) || $at + 1 >= $end) {
                continue;
            }
            $v = $t[$at + 1]->type === Token::WORD ? $t[$at + 1]->text : '';
            if (in_array($v, ['1', 'on', 'true'], true)) {
                $value = true;
            } elseif (in_array($v, ['0', 'off', 'false'], true)) {
                $value = false;
            }
        }
        return $value;
    }
}
