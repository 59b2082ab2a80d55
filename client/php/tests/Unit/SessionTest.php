<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Lagwatch\Router\Contract\Contract;
use Lagwatch\Router\Contract\PrimaryInfo;
use Lagwatch\Router\Contract\ReplicaRecord;
use Lagwatch\Router\Contract\ReplicaState;
use Lagwatch\Router\Exception\InvalidSessionException;
use Lagwatch\Router\Position\Position;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Position\Positions;
use Lagwatch\Router\Session;
use PHPUnit\Framework\TestCase;

final class SessionTest extends TestCase
{
    private static function gtid(string $s): Position
    {
        return Positions::parse(PositionKind::MariaDbGtid, $s);
    }

    private static function record(string $id, ?Position $position, bool $healthy = true): ReplicaRecord
    {
        return new ReplicaRecord(
            $id,
            10,
            0,
            $healthy ? ReplicaState::Ok : ReplicaState::Lagging,
            $healthy,
            'tier1',
            1,
            200,
            1,
            1,
            '1',
            $position?->kind() ?? PositionKind::None,
            $position,
            5000,
            6000,
        );
    }

    public function testASessionRoundTripsThroughItsText(): void
    {
        $fresh = new Session();
        self::assertSame('{"v":1}', $fresh->toString());
        self::assertFalse(Session::fromString($fresh->toString())->hasWrites());

        $s = new Session();
        $s->wrote(self::gtid('1-2-7,0-1-120'), 1000);
        $back = Session::fromString($s->toString());
        self::assertSame('0-1-120,1-2-7', $back->token()?->toString());
        self::assertSame(PositionKind::MariaDbGtid, $back->token()->kind());
        self::assertNull($back->untokenedWriteMs());

        $mysql = new Session();
        $mysql->wrote(Positions::parse(PositionKind::MysqlGtid, "2174b383-5441-11e8-b90a-c80aa9429562:1-3,\n3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"), 1);
        self::assertSame($mysql->token()->toString(), Session::fromString($mysql->toString())->token()?->toString());

        $untokened = new Session();
        $untokened->wrote(null, 1796004314440);
        self::assertSame('{"v":1,"write_ms":1796004314440}', $untokened->toString());
        self::assertSame(1796004314440, Session::fromString($untokened->toString())->untokenedWriteMs());
    }

    /** @return iterable<string, array{string}> */
    public static function notSessions(): iterable
    {
        $cases = [
            '', 'null', '[]', '{}', '{"v":2}', '{"v":"1"}', '{"v":1,"extra":1}',
            '{"v":1,"write_ms":-1}', '{"v":1,"write_ms":"1"}', '{"v":1,"write_ms":1.5}',
            '{"v":1,"kind":"mariadb_gtid"}', '{"v":1,"token":"0-1-1"}',
            '{"v":1,"kind":"none","token":"0-1-1"}', '{"v":1,"kind":"gtid","token":"0-1-1"}',
            '{"v":1,"kind":"mariadb_gtid","token":""}',
            '{"v":1,"kind":"mariadb_gtid","token":"0-1-1\', 0); DROP TABLE t; --"}',
            '{"v":1,"kind":"binlog","token":"bin\'.000001:4"}',
            '{"v":1,"kind":"mariadb_gtid","token":"0-1-1","write_ms":1}',
            '{"v":1,"kind":"mariadb_gtid","token":7}',
            '{"v":1,"write_ms":{"a":{"b":1}}}',
        ];
        foreach ($cases as $text) {
            yield $text === '' ? '(empty)' : $text => [$text];
        }
    }

    /** @dataProvider notSessions */
    public function testAnythingElseIsRefused(string $text): void
    {
        $this->expectException(InvalidSessionException::class);
        Session::fromString($text);
    }

    public function testATokenIsDroppedOnceEveryReplicaInTheSetIncludesItUsableOrNot(): void
    {
        $s = new Session();
        $s->wrote(self::gtid('0-1-120'), 1000);
        $a = self::record('a:3306', self::gtid('0-1-120'));
        $b = self::record('b:3306', self::gtid('0-1-100'), false);  // lagging: it could come back lacking the write
        $primary = new PrimaryInfo('p:3306');
        $s->settle(new Contract(['a:3306', 'b:3306'], ['a:3306' => $a, 'b:3306' => $b], $primary), 1000, 0);
        self::assertNotNull($s->token());
        // A member without a record keeps it too.
        $b = self::record('b:3306', self::gtid('0-1-121'), false);
        $s->settle(new Contract(['a:3306', 'b:3306', 'gone:3306'], ['a:3306' => $a, 'b:3306' => $b], $primary), 1000, 0);
        self::assertNotNull($s->token());
        $s->settle(new Contract([], [], $primary), 1000, 0);
        self::assertNotNull($s->token());
        $s->settle(new Contract(['a:3306', 'b:3306'], ['a:3306' => $a, 'b:3306' => $b], $primary), 1000, 0);
        self::assertNull($s->token());
        self::assertFalse($s->hasWrites());
    }
}
