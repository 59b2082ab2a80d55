<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Position;

use Lagwatch\Router\Position\BinlogCoords;
use Lagwatch\Router\Position\MariaDbGtidPos;
use Lagwatch\Router\Position\MysqlGtidSet;
use Lagwatch\Router\Position\Position;
use Lagwatch\Router\Position\PositionException;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Position\Positions;
use PHPUnit\Framework\TestCase;

/** The cases of base/gtid_test.cc, base/binlog_coords_test.cc and base/position_test.cc. */
final class PositionsTest extends TestCase
{
    private static function mariadb(string $s): MariaDbGtidPos
    {
        return MariaDbGtidPos::parse($s);
    }

    private static function coords(string $s): Position
    {
        return Positions::parse(PositionKind::Binlog, $s);
    }

    public function testMariaDbPositionsParseAndPrintBack(): void
    {
        self::assertSame('0-1-120', self::mariadb('0-1-120')->toString());
        self::assertSame('0-1-120,1-2-7', self::mariadb('1-2-7,0-1-120')->toString());
        self::assertTrue(self::mariadb('')->isEmpty());
        self::assertSame('0-1-5', self::mariadb(" 0-1-5\n")->toString());
        self::assertSame('0-1-18446744073709551615', self::mariadb('0-1-18446744073709551615')->toString());
        self::assertSame('0-4294967295-7', self::mariadb('0-4294967295-007')->toString());
    }

    /** @return iterable<string, array{string}> */
    public static function malformedMariaDb(): iterable
    {
        $cases = [
            '0-1', 'x-1-2', '0-1-2,', '0-1-2,0-3-4', '0--2', '0-1-99999999999999999999', '-1-1-1',
            '0-1-18446744073709551616', '4294967296-1-1', '0-1-2-3', "0-1-1', 0); DROP TABLE t; --", '0-1-+1',
        ];
        foreach ($cases as $bad) {
            yield $bad => [$bad];
        }
    }

    /** @dataProvider malformedMariaDb */
    public function testMalformedMariaDbPositionsAreRefused(string $bad): void
    {
        $this->expectException(PositionException::class);
        MariaDbGtidPos::parse($bad);
    }

    public function testAMalformedPositionsMessageQuotesTheWholeTextEscaped(): void
    {
        try {
            MariaDbGtidPos::parse("0-1-2,0-2-x\n1");
            self::fail('parsed');
        } catch (PositionException $e) {
            self::assertStringContainsString('"0-1-2,0-2-x\\x0a1"', $e->getMessage());
        }
    }

    public function testAMariaDbPositionIncludesAnotherWhenEveryDomainIsAtLeastAsFar(): void
    {
        $p = self::mariadb(...);
        self::assertTrue($p('0-1-10')->includes($p('0-1-10')));
        self::assertTrue($p('0-1-11')->includes($p('0-1-10')));
        self::assertFalse($p('0-1-9')->includes($p('0-1-10')));
        self::assertTrue($p('0-2-10')->includes($p('0-1-10')));  // server ids do not matter
        self::assertFalse($p('0-1-10')->includes($p('0-1-10,1-1-3')));
        self::assertTrue($p('0-1-10,1-1-3')->includes($p('0-1-10')));
        self::assertFalse($p('0-1-10,1-1-2')->includes($p('0-1-9,1-1-3')));
        self::assertTrue($p('')->includes($p('')));
        self::assertFalse($p('')->includes($p('0-1-1')));
        // Sequence numbers compare as numbers, beyond PHP's int too.
        self::assertTrue($p('0-1-10')->includes($p('0-1-9')));
        self::assertTrue($p('0-1-18446744073709551615')->includes($p('0-1-9223372036854775808')));
        self::assertFalse($p('0-1-9223372036854775808')->includes($p('0-1-18446744073709551615')));
    }

    public function testBinlogCoordinatesSplitBaseDotNumberAtTheLastDot(): void
    {
        self::assertSame('mysql-bin.000123:4', self::coords('mysql-bin.000123:4')->toString());
        self::assertSame('my.host-bin.000001:0', self::coords('my.host-bin.1:0')->toString());
        self::assertSame('mysql-bin.1000000:4', self::coords('mysql-bin.1000000:4')->toString());
        self::assertSame(
            'b.18446744073709551615:18446744073709551615',
            self::coords('b.18446744073709551615:18446744073709551615')->toString()
        );
        $fromStatus = BinlogCoords::fromFileAndOffset('mariadb-bin.000016', '475');
        self::assertSame('mariadb-bin.000016:475', $fromStatus->toString());
    }

    /** @return iterable<string, array{string}> */
    public static function malformedCoords(): iterable
    {
        $cases = [
            'mysql-bin:4', 'mysql-bin.:4', '.000001:4', 'mysql-bin.00001a:4', 'mysql-bin.-1:4', 'mysql-bin.+1:4',
            'INVALID:4', 'mysql-bin.0 :4', 'mysql-bin.18446744073709551616:4', 'mysql-bin.000001:', 'mysql-bin.000001:-4',
            'mysql-bin.000001:+4', 'mysql-bin.000001:4 ', 'mysql-bin.000001:0x10', 'mysql-bin.000001:four',
            'mysql-bin.000001:18446744073709551616', 'mysql-bin.000001', "bin'.000001:4", "bin\\.000001:4",
            "bin\n.000001:4", '',
        ];
        foreach ($cases as $bad) {
            yield $bad === '' ? '(empty)' : $bad => [$bad];
        }
    }

    /** @dataProvider malformedCoords */
    public function testMalformedCoordinatesAreRefused(string $bad): void
    {
        $this->expectException(PositionException::class);
        self::coords($bad);
    }

    public function testCoordinatesOrderByFileNumberThenOffsetAndOtherLogsAreIncomparable(): void
    {
        $a = self::coords('mysql-bin.000009:900');
        self::assertTrue($a->includes($a));
        self::assertFalse($a->includes(self::coords('mysql-bin.000009:901')));
        self::assertTrue(self::coords('mysql-bin.000009:901')->includes($a));
        self::assertTrue(self::coords('mysql-bin.000010:4')->includes($a));
        self::assertFalse($a->includes(self::coords('mysql-bin.000010:4')));
        // 999999 is followed by 1000000: a number, not text.
        self::assertFalse(self::coords('mysql-bin.999999:5000')->includes(self::coords('mysql-bin.1000000:4')));
        self::assertTrue(self::coords('mysql-bin.1000000:4')->includes(self::coords('mysql-bin.999999:5000')));
        self::assertTrue(self::coords('mysql-bin.000123:4')->includes(self::coords('mysql-bin.123:4')));
        self::assertFalse(self::coords('other-bin.000099:4')->includes($a));
        self::assertFalse($a->includes(self::coords('other-bin.000001:4')));
    }

    public function testPositionsOfDifferentKindsNeverIncludeEachOther(): void
    {
        $m = self::mariadb('0-1-10');
        $y = MysqlGtidSet::parse('3e11fa47-71ca-11e1-9e33-c80aa9429562:1-10');
        $c = self::coords('bin.000001:4');
        foreach ([[$m, $y], [$y, $c], [$c, $m], [$m, $c]] as [$a, $b]) {
            self::assertFalse($a->includes($b));
        }
        self::assertSame(PositionKind::MariaDbGtid, $m->kind());
        self::assertSame(PositionKind::MysqlGtid, $y->kind());
        self::assertSame(PositionKind::Binlog, $c->kind());
    }

    public function testPositionsParseRefusesEmptyTextKindNoneAndInjection(): void
    {
        $cases = [
            [PositionKind::MariaDbGtid, ''],
            [PositionKind::MariaDbGtid, '   '],
            [PositionKind::MysqlGtid, ','],
            [PositionKind::None, '0-1-1'],
            [PositionKind::MysqlGtid, "x' OR '1'='1"],
            [PositionKind::MariaDbGtid, 'bin.000001:4'],
        ];
        foreach ($cases as [$kind, $text]) {
            try {
                Positions::parse($kind, $text);
                self::fail($kind->value . ' ' . $text . ' parsed');
            } catch (PositionException) {
                self::assertTrue(true);
            }
        }
    }
}
