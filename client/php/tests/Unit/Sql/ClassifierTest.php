<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Sql;

use Lagwatch\Router\Sql\Classifier;
use Lagwatch\Router\Sql\StatementKind;
use PHPUnit\Framework\TestCase;

/** The cases of client/sql_classify_test.cc, and the transaction statements. */
final class ClassifierTest extends TestCase
{
    private static function read(string $sql): bool
    {
        return Classifier::classify($sql)->read;
    }

    private static function locking(string $sql): bool
    {
        return Classifier::classify($sql)->locking;
    }

    public function testPlainSelectsAreReadsInAnyCaseWithLeadingParenthesesOrCtes(): void
    {
        self::assertTrue(self::read('SELECT * FROM t WHERE id = 1'));
        self::assertTrue(self::read('  select 1'));
        self::assertTrue(self::read('SeLeCt 1;'));
        self::assertTrue(self::read('(SELECT a FROM t) UNION (SELECT a FROM u)'));
        self::assertTrue(self::read('WITH c AS (SELECT 1) SELECT * FROM c'));
        self::assertTrue(self::read('SELECT 1; SELECT 2'));
        self::assertFalse(self::read('WITH c AS (SELECT id FROM t) DELETE FROM t WHERE id IN (SELECT id FROM c)'));
    }

    /** @return iterable<string, array{string}> */
    public static function notReads(): iterable
    {
        $cases = [
            'INSERT INTO t VALUES (1)', 'UPDATE t SET a = 1', 'DELETE FROM t', 'REPLACE INTO t VALUES (1)',
            'CREATE TABLE t (a INT)', 'SET @a = 1', 'CALL p()', 'BEGIN', 'SHOW MASTER STATUS', '', '   ',
            '-- just a comment', 'SELECT 1; DELETE FROM t', 'SELECT a INTO @x FROM t',
            "SELECT * FROM t INTO OUTFILE '/tmp/x'", 'SELECT LAST_INSERT_ID()', "select get_lock('x', 1)",
            'SELECT NEXTVAL(s)', 'SELECT NEXT VALUE FOR s', 'SELECT FOUND_ROWS()', 'SELECT ROW_COUNT()',
            "SELECT RELEASE_LOCK('x')", 'SELECT PREVIOUS VALUE FOR s', 'LOAD DATA INFILE "x" INTO TABLE t',
            'DO SLEEP(1)', 'HANDLER t READ FIRST',
        ];
        foreach ($cases as $sql) {
            yield $sql === '' ? '(empty)' : $sql => [$sql];
        }
    }

    /** @dataProvider notReads */
    public function testWritesAndEverythingElseAreNotReads(string $sql): void
    {
        self::assertFalse(self::read($sql));
    }

    public function testLockingReadsAreFoundOutsideCommentsAndLiteralsOnly(): void
    {
        self::assertTrue(self::locking('SELECT * FROM t WHERE id = 1 FOR UPDATE'));
        self::assertTrue(self::locking('select * from t for share'));
        self::assertTrue(self::locking('SELECT * FROM t LOCK IN SHARE MODE'));
        self::assertTrue(self::locking('SELECT * FROM t FOR /* why not */ UPDATE'));
        self::assertTrue(self::locking("SELECT * FROM t FOR\n\tUPDATE NOWAIT"));
        self::assertFalse(self::read('SELECT * FROM t FOR UPDATE'));
        self::assertTrue(self::locking('SELECT 1; SELECT * FROM t FOR UPDATE'));
        self::assertFalse(self::read('SELECT 1; SELECT * FROM t FOR UPDATE'));
    }

    /** @return iterable<string, array{string}> */
    public static function wordsInsideLiterals(): iterable
    {
        $cases = [
            "SELECT 'for update' FROM t", 'SELECT "FOR UPDATE" FROM t', 'SELECT `for update` FROM t',
            'SELECT 1 -- FOR UPDATE', 'SELECT 1 # FOR UPDATE', 'SELECT 1 /* FOR UPDATE */',
            "SELECT 'it''s for update' FROM t", "SELECT 'a\\' for update' FROM t",
            "SELECT * FROM t WHERE note = 'lock in share mode'", "SELECT note FROM t WHERE note = 'for update'",
            'SELECT "a"" for update" FROM t', "SELECT 'x' AS `into`", "SELECT 'last_insert_id()'",
        ];
        foreach ($cases as $sql) {
            yield $sql => [$sql];
        }
    }

    /** @dataProvider wordsInsideLiterals */
    public function testWordsInsideLiteralsQuotedIdentifiersAndCommentsAreNotTheClause(string $sql): void
    {
        self::assertFalse(self::locking($sql));
        self::assertTrue(self::read($sql));
    }

    public function testCommentsAreRecognisedAsTheServerDoes(): void
    {
        // '--' needs a space (or a control byte) after it; without one it is two minus signs.
        self::assertTrue(self::read('SELECT 1--1'));
        self::assertTrue(self::locking("SELECT 1--1\nFOR UPDATE"));
        self::assertFalse(self::locking("SELECT 1 --\tFOR UPDATE"));
        self::assertTrue(self::read('/* leading */ SELECT 1'));
        self::assertFalse(self::read('/* SELECT */ DELETE FROM t'));
        self::assertTrue(self::read("# DELETE\nSELECT 1"));
        self::assertTrue(self::read("-- DELETE FROM t\nSELECT 1"));
        // An unterminated comment or literal ends the text, never the program.
        self::assertTrue(self::read('SELECT 1 /* never closed'));
        self::assertTrue(self::read("SELECT 'never closed FOR UPDATE"));
    }

    public function testExecutableCommentsAreCode(): void
    {
        self::assertTrue(self::locking('SELECT * FROM t /*!50000 FOR UPDATE */'));
        self::assertTrue(self::locking('SELECT * FROM t /*M! FOR UPDATE */'));
        self::assertTrue(self::locking('SELECT * FROM t /*M!100500 LOCK IN SHARE MODE */'));
        self::assertFalse(self::read('/*! DELETE FROM t */'));
        self::assertFalse(self::read('SELECT 1 /*!; DELETE FROM t */'));
        self::assertTrue(self::read('SELECT /*+ MAX_EXECUTION_TIME(100) */ * FROM t'));
    }

    public function testTransactionStatementsAreRecognised(): void
    {
        $kind = static fn (string $sql): StatementKind => Classifier::classify($sql)->statements[0]->kind;
        self::assertSame(StatementKind::Begin, $kind('BEGIN'));
        self::assertSame(StatementKind::Begin, $kind('begin work'));
        self::assertSame(StatementKind::Begin, $kind('START TRANSACTION READ ONLY'));
        self::assertSame(StatementKind::Write, $kind('BEGIN NOT ATOMIC SELECT 1; END'));
        self::assertSame(StatementKind::Write, $kind('START SLAVE'));
        self::assertSame(StatementKind::Commit, $kind('COMMIT'));
        self::assertSame(StatementKind::Rollback, $kind('ROLLBACK WORK'));
        self::assertSame(StatementKind::Savepoint, $kind('ROLLBACK TO SAVEPOINT a'));
        self::assertSame(StatementKind::Savepoint, $kind('ROLLBACK WORK TO a'));
        self::assertSame(StatementKind::Savepoint, $kind('RELEASE SAVEPOINT a'));
        self::assertTrue(Classifier::classify('COMMIT AND CHAIN')->statements[0]->chain);
        self::assertFalse(Classifier::classify('COMMIT AND NO CHAIN')->statements[0]->chain);
        self::assertSame(StatementKind::Ddl, $kind('ALTER TABLE t ADD c INT'));
        self::assertTrue(Classifier::classify('CREATE TEMPORARY TABLE x (a INT)')->statements[0]->temporary);
        self::assertSame(StatementKind::Inspect, $kind('SHOW TABLES'));
        self::assertSame(StatementKind::Write, $kind('INSERT INTO t VALUES (1)'));
        self::assertTrue(Classifier::classify('UPDATE t SET a = 1')->writes());
        self::assertFalse(Classifier::classify('SET NAMES utf8mb4')->writes());
        self::assertFalse(Classifier::classify('SELECT 1 FOR UPDATE')->writes());
    }

    /** @return iterable<string, array{string, ?bool}> */
    public static function autocommitSettings(): iterable
    {
        yield 'plain 0' => ['SET autocommit = 0', false];
        yield 'plain 1' => ['SET autocommit=1', true];
        yield 'ON' => ['set AUTOCOMMIT = ON', true];
        yield 'off' => ['SET autocommit = off', false];
        yield ':=' => ['SET autocommit := 0', false];
        yield '@@' => ['SET @@autocommit = 0', false];
        yield '@@session.' => ['SET @@session.autocommit = 0', false];
        yield '@@local.' => ['SET @@LOCAL.autocommit = 0', false];
        yield 'SESSION' => ['SET SESSION autocommit = 0', false];
        yield 'in a list' => ['SET @a = 1, autocommit = 0', false];
        yield 'the last wins' => ['SET autocommit = 0, autocommit = 1', true];
        yield 'a user variable' => ['SET @autocommit = 0', null];
        yield 'the global default' => ['SET @@global.autocommit = 0', null];
        yield 'GLOBAL' => ['SET GLOBAL autocommit = 0', null];
        yield 'another variable' => ['SET sql_mode = ""', null];
        yield 'in a literal' => ["SET @a = 'autocommit = 0'", null];
    }

    /** @dataProvider autocommitSettings */
    public function testSetAutocommitIsFollowed(string $sql, ?bool $autocommit): void
    {
        $s = Classifier::classify($sql)->statements[0];
        self::assertSame(StatementKind::Set, $s->kind);
        self::assertSame($autocommit, $s->autocommit);
    }

    public function testMultiStatementsAreClassifiedOneByOne(): void
    {
        $c = Classifier::classify("BEGIN; UPDATE t SET a = 'x;y' WHERE id = 1; COMMIT;");
        self::assertSame(
            [StatementKind::Begin, StatementKind::Write, StatementKind::Commit],
            array_map(static fn ($s) => $s->kind, $c->statements)
        );
        self::assertFalse($c->read);
        self::assertTrue($c->writes());
    }
}
