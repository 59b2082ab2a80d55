<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Contract;

use Lagwatch\Router\Contract\Circuit;
use Lagwatch\Router\Contract\MalformedException;
use Lagwatch\Router\Contract\RecordParser;
use Lagwatch\Router\Contract\ReplicaId;
use Lagwatch\Router\Contract\ReplicaState;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Tests\Unit\FakeRedis;
use PHPUnit\Framework\TestCase;

/** The cases of client/record_test.cc: every malformed case of docs/routing.md. */
final class RecordParserTest extends TestCase
{
    private const UUID = '3e11fa47-71ca-11e1-9e33-c80aa9429562';

    /** @param array<string, ?string> $changes null removes the field */
    private static function with(array $changes): array
    {
        return array_filter(array_merge(FakeRedis::healthy(), $changes), static fn ($v) => $v !== null);
    }

    public function testARecordAsTheAgentWritesItParsesBookkeepingFieldsIgnored(): void
    {
        $r = RecordParser::replica('10.0.0.12:3306', FakeRedis::healthy());
        self::assertSame('10.0.0.12:3306', $r->id);
        self::assertSame(12, $r->delayMs);
        self::assertSame(3, $r->delayLowerMs);
        self::assertSame(ReplicaState::Ok, $r->state);
        self::assertTrue($r->healthy);
        self::assertSame('tier1', $r->tier);
        self::assertSame(100, $r->weight);
        self::assertSame(200, $r->maxDelayMs);
        self::assertSame(4711, $r->seq);
        self::assertSame(1796004314440, $r->measuredAtMs);
        self::assertSame('1', $r->agent);
        self::assertSame(PositionKind::MariaDbGtid, $r->position?->kind());
        self::assertSame('0-1-120,1-2-7', $r->position->toString());
        self::assertTrue($r->usable());
    }

    public function testPositionsOfEachKindParseNoneEmptyOrAbsentMeanNoPosition(): void
    {
        $mysql = RecordParser::replica('db:3306', self::with(['position' => self::UUID . ':1-57', 'position_kind' => 'mysql_gtid']));
        self::assertSame(PositionKind::MysqlGtid, $mysql->position?->kind());
        $binlog = RecordParser::replica('db:3306', self::with(['position' => 'mysql-bin.000012:4567', 'position_kind' => 'binlog']));
        self::assertSame('mysql-bin.000012:4567', $binlog->position?->toString());
        self::assertNull(RecordParser::replica('db:3306', self::with(['position' => '', 'position_kind' => 'none']))->position);
        self::assertNull(RecordParser::replica('db:3306', self::with(['position' => '']))->position);
        // An agent from before the fields: usable on its lag alone.
        $old = RecordParser::replica('db:3306', self::with(['position' => null, 'position_kind' => null]));
        self::assertNull($old->position);
        self::assertSame(PositionKind::None, $old->positionKind);
        self::assertTrue($old->usable());
    }

    public function testNoLimitIsMinusOneAndUnhealthyRecordsParseUnusable(): void
    {
        $tier3 = RecordParser::replica('db:3306', self::with(['max_delay_ms' => '-1', 'delay_ms' => '3600000']));
        self::assertNull($tier3->maxDelayMs);
        self::assertTrue($tier3->usable());
        $stopped = RecordParser::replica('db:3306', self::with(['healthy' => '0', 'state' => 'stopped']));
        self::assertFalse($stopped->usable());
        $primaryUnknown = RecordParser::replica('db:3306', self::with(['state' => 'primary_unknown', 'delay_ms' => '0']));
        self::assertTrue($primaryUnknown->usable());
    }

    /** @return iterable<string, array{string, ?string}> */
    public static function malformedFields(): iterable
    {
        $cases = [
            ['delay_ms', '12a'], ['delay_ms', ''], ['delay_ms', ' 12'], ['delay_ms', '1e3'], ['delay_ms', '-5'],
            ['delay_ms', null], ['delay_ms', '99999999999999999999999'], ['delay_ms', '+12'], ['delay_ms', '12.0'],
            ['delay_lower_ms', '-1'], ['delay_lower_ms', null],
            ['healthy', '2'], ['healthy', '01'], ['healthy', 'yes'], ['healthy', null], ['healthy', ''],
            ['weight', '1001'], ['weight', '-1'], ['weight', '0.5'], ['weight', null],
            ['max_delay_ms', '-2'], ['max_delay_ms', null],
            ['state', 'OK'], ['state', 'ok '], ['state', null], ['state', 'sideways'],
            ['tier', ''], ['tier', 'tier 1'], ['tier', null], ['tier', str_repeat('t', 65)], ['tier', "tier\n1"],
            ['seq', 'x'], ['seq', null], ['measured_at_ms', '-1'], ['measured_at_ms', null],
            ['position_kind', 'gtid'], ['position', '0-1'], ['position', 'garbage'],
        ];
        foreach ($cases as [$field, $value]) {
            yield $field . '=' . ($value === null ? '(missing)' : json_encode($value)) => [$field, $value];
        }
    }

    /** @dataProvider malformedFields */
    public function testMalformedFieldsRefuseTheRecordAndNameTheField(string $field, ?string $value): void
    {
        try {
            RecordParser::replica('db:3306', self::with([$field => $value]));
            self::fail('parsed');
        } catch (MalformedException $e) {
            self::assertStringStartsWith($field . ':', $e->getMessage());
        }
    }

    /** @return iterable<string, array{array<string, string>}> */
    public static function contradictions(): iterable
    {
        yield 'healthy over the limit' => [['delay_ms' => '201']];
        yield 'healthy and stopped' => [['state' => 'stopped']];
        yield 'healthy and unverified' => [['state' => 'unverified']];
        yield 'a position with kind none' => [['position_kind' => 'none']];
        yield "another kind's syntax" => [['position' => 'bin.000001:4']];
    }

    /** @dataProvider contradictions */
    public function testRecordsThatContradictTheContractAreRefused(array $changes): void
    {
        $this->expectException(MalformedException::class);
        RecordParser::replica('db:3306', self::with($changes));
    }

    public function testHostileValuesAreRefusedQuotedEscapedAndCut(): void
    {
        try {
            RecordParser::replica('db:3306', self::with(['state' => "ok\n\x1b[31m\0"]));
            self::fail('parsed');
        } catch (MalformedException $e) {
            self::assertStringNotContainsString("\n", $e->getMessage());
            self::assertStringNotContainsString("\x1b", $e->getMessage());
        }
        try {
            RecordParser::replica('db:3306', self::with(['delay_ms' => str_repeat('9', 1 << 20)]));
            self::fail('parsed');
        } catch (MalformedException $e) {
            self::assertLessThan(300, strlen($e->getMessage()));
        }
        $cases = [
            ['db:3306', self::with(['position' => str_repeat('1', 2 << 20), 'position_kind' => 'mysql_gtid'])],
            ['db:3306', []],
            ['not an id', FakeRedis::healthy()],
        ];
        foreach ($cases as [$id, $fields]) {
            try {
                RecordParser::replica($id, $fields);
                self::fail('parsed');
            } catch (MalformedException) {
                self::assertTrue(true);
            }
        }
    }

    public function testReplicaIdsAreHostColonPortAsLagwatchSpellsThem(): void
    {
        foreach (['10.0.0.12:3306', 'db-1.example.com:3307', '::1:3306', 'db:65535', 'db:1'] as $id) {
            self::assertTrue(ReplicaId::isValid($id), $id);
        }
        foreach (['db:03306', 'db:0', 'db:65536', 'db', ':3306', 'db 1:3306', "db:3306\n", 'db:+1', 'db:', ''] as $id) {
            self::assertFalse(ReplicaId::isValid($id), $id);
        }
    }

    public function testThePrimarysCircuitIsTheWorseOfThePointersAndTheKeysState(): void
    {
        $pointer = ['primary' => '10.0.0.13:3306', 'state' => 'up', 'topology' => 'ok'];
        $up = RecordParser::primary($pointer, null);
        self::assertSame('10.0.0.13:3306', $up->id);
        self::assertSame(Circuit::Up, $up->circuit);
        self::assertFalse($up->keyValid);

        $key = ['state' => 'down', 'read_only' => '0', 'last_write_ms' => '1796004314440', 'consecutive_failures' => '3', 'topology' => 'ok'];
        $down = RecordParser::primary($pointer, $key);
        self::assertSame(Circuit::Down, $down->circuit);
        self::assertTrue($down->keyValid);
        self::assertSame(3, $down->consecutiveFailures);

        // The pointer's ambiguous beats the key's down; a key cannot make things better.
        self::assertSame(Circuit::Ambiguous, RecordParser::primary(['state' => 'ambiguous'] + $pointer, $key)->circuit);
        self::assertSame(Circuit::Down, RecordParser::primary(['state' => 'down'] + $pointer, ['state' => 'up'] + $key)->circuit);

        // A malformed key is ignored; the pointer stands.
        $ignored = RecordParser::primary($pointer, ['state' => 'sideways']);
        self::assertSame(Circuit::Up, $ignored->circuit);
        self::assertFalse($ignored->keyValid);
        $ignored = RecordParser::primary($pointer, ['state' => 'down', 'read_only' => '2', 'last_write_ms' => '1', 'consecutive_failures' => '0']);
        self::assertSame(Circuit::Up, $ignored->circuit);

        $cases = [
            ['primary' => 'x', 'state' => 'up', 'topology' => 'ok'],
            ['primary' => 'db:3306', 'state' => 'meh', 'topology' => 'ok'],
            ['primary' => 'db:3306', 'state' => 'unknown', 'topology' => 'ok'],
            ['primary' => 'db:3306', 'state' => 'up'],
            ['primary' => 'db:3306', 'state' => 'up', 'topology' => 'split'],
        ];
        foreach ($cases as $bad) {
            try {
                RecordParser::primary($bad, null);
                self::fail(json_encode($bad) . ' parsed');
            } catch (MalformedException) {
                self::assertTrue(true);
            }
        }
    }
}
