<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Routing;

use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Position\Positions;
use Lagwatch\Router\Routing\ReadYourWrites;
use Lagwatch\Router\Tests\Unit\ScriptedPdo;
use PHPUnit\Framework\TestCase;

/** The cases of client/read_your_writes_test.cc. */
final class ReadYourWritesTest extends TestCase
{
    public function testTheCatchUpQuestionEmbedsTheParsedTokenAndNeverWaits(): void
    {
        $mariadb = Positions::parse(PositionKind::MariaDbGtid, '0-1-120,1-2-7');
        self::assertSame("SELECT MASTER_GTID_WAIT('0-1-120,1-2-7', 0)", ReadYourWrites::catchUpQuery($mariadb));
        $mysql = Positions::parse(PositionKind::MysqlGtid, "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7,\n2174b383-5441-11e8-b90a-c80aa9429562:1-3");
        self::assertSame(
            "SELECT GTID_SUBSET('2174b383-5441-11e8-b90a-c80aa9429562:1-3,\n3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7', @@GLOBAL.gtid_executed)",
            ReadYourWrites::catchUpQuery($mysql)
        );
        // MASTER_POS_WAIT(file, pos, 0) would wait forever: no question for coordinates.
        self::assertNull(ReadYourWrites::catchUpQuery(Positions::parse(PositionKind::Binlog, 'mysql-bin.000012:4567')));
    }

    public function testTheAnswersZeroFromMasterGtidWaitOneFromGtidSubsetAnythingElseIsNot(): void
    {
        self::assertTrue(ReadYourWrites::caughtUp(PositionKind::MariaDbGtid, '0'));
        self::assertTrue(ReadYourWrites::caughtUp(PositionKind::MariaDbGtid, 0));
        self::assertFalse(ReadYourWrites::caughtUp(PositionKind::MariaDbGtid, '-1'));
        self::assertFalse(ReadYourWrites::caughtUp(PositionKind::MariaDbGtid, -1));
        self::assertFalse(ReadYourWrites::caughtUp(PositionKind::MariaDbGtid, null));
        self::assertFalse(ReadYourWrites::caughtUp(PositionKind::MariaDbGtid, ''));
        self::assertTrue(ReadYourWrites::caughtUp(PositionKind::MysqlGtid, '1'));
        self::assertFalse(ReadYourWrites::caughtUp(PositionKind::MysqlGtid, '0'));
        self::assertFalse(ReadYourWrites::caughtUp(PositionKind::Binlog, '0'));
    }

    public function testTokensAreTakenWithTheStatementsRoutingMdNames(): void
    {
        self::assertSame('SELECT @@last_gtid', ReadYourWrites::tokenQuery(PositionKind::MariaDbGtid));
        self::assertSame('SELECT @@GLOBAL.gtid_executed', ReadYourWrites::tokenQuery(PositionKind::MysqlGtid));
        self::assertNull(ReadYourWrites::tokenQuery(PositionKind::Binlog));
        self::assertNull(ReadYourWrites::tokenQuery(PositionKind::None));
    }

    /**
     * MySQL 8.4 has no SHOW MASTER STATUS (a parse error); the token is taken with SHOW BINARY
     * LOG STATUS, chosen from what the server says it is, asked once per connection.
     */
    public function testABinlogTokenOnMysql84IsTakenWithShowBinaryLogStatus(): void
    {
        $primary = new ScriptedPdo([
            'SELECT VERSION(), @@version_comment' => ['VERSION()' => '8.4.3', '@@version_comment' => 'MySQL Community Server - GPL'],
            'SHOW BINARY LOG STATUS' => ['File' => 'binlog.000007', 'Position' => '1234', 'Executed_Gtid_Set' => ''],
        ]);
        [$token, $why] = ReadYourWrites::takeToken($primary, PositionKind::Binlog);
        self::assertSame('', $why);
        self::assertNotNull($token);
        self::assertSame('binlog.000007:1234', $token->toString());
        [$again] = ReadYourWrites::takeToken($primary, PositionKind::Binlog);
        self::assertSame('binlog.000007:1234', $again?->toString());
        self::assertSame(['SELECT VERSION(), @@version_comment', 'SHOW BINARY LOG STATUS', 'SHOW BINARY LOG STATUS'], $primary->asked);
    }

    public function testABinlogTokenOnMariaDb1011IsTakenWithShowBinlogStatusAndOnOlderServersWithShowMasterStatus(): void
    {
        $mariadb = new ScriptedPdo([
            'SELECT VERSION(), @@version_comment' => ['VERSION()' => '10.11.6-MariaDB-0+deb12u1', '@@version_comment' => 'Debian 12'],
            'SHOW BINLOG STATUS' => ['File' => 'mariadb-bin.000002', 'Position' => '385'],
        ]);
        self::assertSame('mariadb-bin.000002:385', ReadYourWrites::takeToken($mariadb, PositionKind::Binlog)[0]?->toString());
        $mysql80 = new ScriptedPdo([
            'SELECT VERSION(), @@version_comment' => ['VERSION()' => '8.0.36', '@@version_comment' => 'MySQL Community Server - GPL'],
            'SHOW MASTER STATUS' => ['File' => 'binlog.000003', 'Position' => '99'],
        ]);
        self::assertSame('binlog.000003:99', ReadYourWrites::takeToken($mysql80, PositionKind::Binlog)[0]?->toString());
    }

    public function testAServerThatCannotSayWhatItIsGetsNoTokenAndAReason(): void
    {
        [$token, $why] = ReadYourWrites::takeToken(new ScriptedPdo([]), PositionKind::Binlog);
        self::assertNull($token);
        self::assertStringContainsString('1064', $why);
    }
}
