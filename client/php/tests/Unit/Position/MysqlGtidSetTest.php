<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Position;

use Lagwatch\Router\Position\MysqlGtidSet;
use Lagwatch\Router\Position\PositionException;
use PHPUnit\Framework\TestCase;

/** The cases of base/gtid_set_test.cc: MySQL 8.4's manual and what its parser and printer do. */
final class MysqlGtidSetTest extends TestCase
{
    private const MANUAL_UUID = '3E11FA47-71CA-11E1-9E33-C80AA9429562';
    private const MANUAL = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
    private const OTHER = '2174b383-5441-11e8-b90a-c80aa9429562';
    private const THIRD = 'ffffffff-0000-0000-0000-000000000001';

    private static function set(string $text): MysqlGtidSet
    {
        return MysqlGtidSet::parse($text);
    }

    private static function canonical(string $text): string
    {
        return self::set($text)->toString();
    }

    public function testTheManualsSetsParseAndPrintAsMysqlPrintsThem(): void
    {
        self::assertSame(self::MANUAL . ':23', self::canonical(self::MANUAL_UUID . ':23'));
        self::assertSame(self::MANUAL . ':1-5', self::canonical(self::MANUAL_UUID . ':1-5'));
        self::assertSame(self::MANUAL . ':1-3:11:47-49', self::canonical(self::MANUAL_UUID . ':1-3:11:47-49'));
        self::assertSame(self::MANUAL . ':1-5:domain_1:1-3:7', self::canonical(self::MANUAL_UUID . ':1-5:domain_1:1-3:7'));
    }

    public function testMysqlsOwnMultiLineTextRoundTrips(): void
    {
        $printed = self::OTHER . ":1-3,\n" . self::MANUAL . ':1-5:7-10:x:1';
        self::assertSame($printed, self::canonical($printed));
        self::assertSame($printed, self::canonical(self::MANUAL . ':1-5:7-10:x:1,' . self::OTHER . ':1-3'));
    }

    public function testSetsAreNormalised(): void
    {
        $m = self::MANUAL;
        self::assertSame("$m:1-5:7-10", self::canonical("$m:1-5:7-10"));
        self::assertSame("$m:5", self::canonical("$m:5-5"));
        self::assertSame("$m:1-10", self::canonical("$m:7-10:1-5:6"));
        self::assertSame("$m:1-8", self::canonical("$m:1-3:5-8:2-4"));
        self::assertSame("$m:1-3:9", self::canonical("$m:3:1:2:9"));
        self::assertSame("$m:1-100", self::canonical("$m:1-100:20-30"));
        self::assertSame("$m:1-2,\n" . self::THIRD . ':1-4', self::canonical(self::THIRD . ":4,$m:1-2," . self::THIRD . ':1-3'));
        self::assertSame("$m:3:alpha:2-3:zeta:1", self::canonical("$m:3:Zeta:1:ALPHA:2:alpha:3"));
        self::assertSame("$m:t_9:4-5", self::canonical("$m:t_9:4,$m:T_9:5"));
        self::assertSame("$m:_a:1-2", self::canonical("$m:_a:1-2"));
    }

    public function testCaseWhitespaceAndNewlinesDoNotChangeASet(): void
    {
        $lower = self::canonical(self::MANUAL . ':1-5,' . self::OTHER . ':1-3:tag:4');
        self::assertSame($lower, self::canonical(self::MANUAL_UUID . ':1-5,2174B383-5441-11E8-B90A-C80AA9429562:1-3:TAG:4'));
        self::assertSame($lower, self::canonical(" \n" . self::MANUAL . ":1-5 ,\n\t" . self::OTHER . " : 1 - 3 :\ttag\n: 4\n"));
    }

    public function testEmptySetsAndEmptyMembers(): void
    {
        foreach (['', '   ', "\n", ',', ", ,\n,", '  ,  ', self::MANUAL, self::MANUAL . ':tag'] as $text) {
            self::assertTrue(self::set($text)->isEmpty(), $text);
            self::assertSame('', self::set($text)->toString());
        }
        $one = self::MANUAL . ':1-5';
        self::assertSame($one, self::canonical($one . ','));
        self::assertSame($one, self::canonical(',' . $one));
        self::assertSame(self::OTHER . ":2,\n" . $one, self::canonical($one . ",,\n," . self::OTHER . ':2'));
    }

    public function testTransactionNumbersGoUpToTwoToTheSixtyThreeMinusTwo(): void
    {
        self::assertSame(self::MANUAL . ':9223372036854775806', self::canonical(self::MANUAL . ':9223372036854775806'));
        self::assertSame(self::MANUAL . ':1-9223372036854775806', self::canonical(self::MANUAL . ':1-9223372036854775806'));
    }

    public function testASetIncludesAnotherWhenItHasEveryOneOfItsTransactions(): void
    {
        $m = self::MANUAL;
        $gaps = self::set("$m:1-5:7-10");
        $full = self::set("$m:1-10");
        self::assertFalse($gaps->includes($full));
        self::assertTrue($full->includes($gaps));
        self::assertTrue(self::set("$m:1-12")->includes($gaps));
        self::assertTrue($gaps->includes(self::set("$m:2-4:8:10")));
        self::assertFalse($gaps->includes(self::set("$m:4-8")));
        self::assertFalse($gaps->includes(self::set("$m:6")));
        self::assertFalse($gaps->includes(self::set("$m:10-11")));
        self::assertFalse($full->includes(self::set(self::OTHER . ':1')));
        self::assertFalse($full->includes(self::set("$m:1-10," . self::THIRD . ':1')));
        self::assertTrue(self::set(self::OTHER . ":1-3,$m:1-10," . self::THIRD . ':1')->includes($full));
        $tagged = self::set("$m:1-5:t:1-3");
        self::assertTrue($tagged->includes(self::set("$m:T:2")));
        self::assertFalse($tagged->includes(self::set("$m:t:4")));
        self::assertFalse($tagged->includes(self::set("$m:u:1")));
        self::assertFalse($full->includes(self::set("$m:t:1")));
        self::assertFalse(self::set("$m:t:1")->includes(self::set("$m:1")));
        $empty = self::set('');
        self::assertTrue($full->includes($empty));
        self::assertTrue($empty->includes($empty));
        self::assertFalse($empty->includes($full));
    }

    /** @return iterable<string, array{string}> */
    public static function malformed(): iterable
    {
        $u = self::MANUAL;
        $cases = [
            '3e11fa47-71ca-11e1-9e33-c80aa942956:1', '3e11fa47-71ca-11e1-9e33-c80aa94295620:1',
            '24da167-0c0c-11e8-8442-00059a3c7b00:1-19', '3e11fa47-71ca-11e1-9e33-c80aa942956g:1',
            '3e11fa4771ca11e19e33c80aa9429562:1', '3e11fa47-71ca-11e1-9e33c-80aa9429562:1',
            '{3e11fa47-71ca-11e1-9e33-c80aa9429562}:1', '3e11fa47:1',
            "$u:", "$u:0", "$u:0-5", "$u:5-3", "$u:1-", "$u:1-:2", "$u:-1", "$u:+1", "$u:01", "$u:0x10", "$u:1.5",
            "$u:1 2", "$u:1-2-3", "$u::1", "$u:1:", "$u:1-5:", "$u: :1",
            "$u:9223372036854775807", "$u:1-9223372036854775807", "$u:9223372036854775808", "$u:99999999999999999999",
            "$u:1tag:1", "$u:tag-1:1", "$u:t\xc3\xa4g:1", "$u:" . str_repeat('a', 33) . ':1',
            "$u:1;$u:2", "$u:1 $u:2", "{$u}x:1", 'x', "\xff\xfe", "$u:1,garbage", "\0", "$u:1\0",
        ];
        foreach ($cases as $i => $bad) {
            yield $i . ': ' . addcslashes($bad, "\0..\37\177..\377") => [$bad];
        }
    }

    /** @dataProvider malformed */
    public function testMalformedSetsAreRefused(string $bad): void
    {
        $this->expectException(PositionException::class);
        MysqlGtidSet::parse($bad);
    }

    public function testTheLongestTagIsFine(): void
    {
        self::assertSame(self::MANUAL . ':' . str_repeat('z', 32) . ':1', self::canonical(self::MANUAL . ':' . str_repeat('Z', 32) . ':1'));
    }

    public function testAnErrorSaysWhatAndWhereQuotingTheTextCutAndEscaped(): void
    {
        try {
            MysqlGtidSet::parse(self::MANUAL . ":1-5,\n" . self::OTHER . ':5-3');
            self::fail('parsed');
        } catch (PositionException $e) {
            self::assertSame(
                'malformed GTID set "' . self::MANUAL . ':1-5,\x0a' . self::OTHER . ':5": at byte 81: an interval that ends before it starts',
                $e->getMessage()
            );
        }
    }

    public function testHostileSetsAreRejectedWithinBounds(): void
    {
        self::assertTrue(self::set(str_repeat(',', MysqlGtidSet::MAX_TEXT_BYTES))->isEmpty());
        try {
            MysqlGtidSet::parse(str_repeat(',', MysqlGtidSet::MAX_TEXT_BYTES + 1));
            self::fail('parsed');
        } catch (PositionException $e) {
            self::assertStringContainsString('longer than 1048576 bytes', $e->getMessage());
        }
        $many = self::MANUAL;
        for ($i = 0; $i < MysqlGtidSet::MAX_INTERVALS; ++$i) {
            $many .= ':' . (2 * $i + 1);
        }
        self::assertFalse(self::set($many)->isEmpty());
        try {
            MysqlGtidSet::parse($many . ':1');
            self::fail('parsed');
        } catch (PositionException $e) {
            self::assertStringContainsString('more than 65536 intervals', $e->getMessage());
        }
    }
}
