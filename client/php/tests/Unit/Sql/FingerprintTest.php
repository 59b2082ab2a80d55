<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Sql;

use Lagwatch\Router\Sql\Classifier;
use PHPUnit\Framework\TestCase;

final class FingerprintTest extends TestCase
{
    private static function fp(string $sql): string
    {
        return Classifier::classify($sql)->fingerprint;
    }

    public function testLiteralsBecomeQuestionMarksAndWhitespaceCollapses(): void
    {
        self::assertSame('SELECT * FROM t WHERE id = ?', self::fp("SELECT *\n  FROM t\tWHERE id = 42"));
        self::assertSame('SELECT a FROM t WHERE b=? AND c=?', self::fp("SELECT a FROM t WHERE b='it''s' AND c=\"x\\\"y\""));
        self::assertSame('SELECT ?, ?, ?, ?, -?', self::fp('SELECT 1.5, 0x1F, 1e-3, 0b101, -7'));
        self::assertSame('SELECT a1, `t 2`.b FROM t3', self::fp('SELECT a1, `t 2`.b FROM t3'));
        self::assertSame('INSERT INTO t VALUES (?,?)', self::fp("INSERT INTO t VALUES (1,'secret')"));
    }

    public function testCommentsAreDroppedButExecutableCommentsKeepTheirCode(): void
    {
        self::assertSame('SELECT ? FROM t', self::fp("/* user 17 */ SELECT 1 -- note\nFROM t # more"));
        self::assertSame('SELECT * FROM t FOR UPDATE', self::fp('SELECT * FROM t /*!50000 FOR UPDATE */'));
    }

    public function testNoLineBreakSurvives(): void
    {
        self::assertStringNotContainsString("\n", self::fp("SELECT\n1\r\n;"));
        self::assertSame('', self::fp(''));
    }
}
