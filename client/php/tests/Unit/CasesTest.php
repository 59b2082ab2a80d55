<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Lagwatch\Router\Contract\MalformedException;
use Lagwatch\Router\Contract\RecordParser;
use Lagwatch\Router\Position\PositionException;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Position\Positions;
use Lagwatch\Router\Routing\ReadYourWrites;
use Lagwatch\Router\Routing\ServerFlavor;
use Lagwatch\Router\Sql\Classifier;
use PHPUnit\Framework\TestCase;

/**
 * The shared golden cases of client/cases/ (client/cases/README.md), which client/cases_test.cc
 * runs on the C++ side: one data set per case, named by the case. A case with a field this runner
 * does not know fails; it is never skipped.
 */
final class CasesTest extends TestCase
{
    /** @return array<string, mixed> */
    private static function load(string $file): array
    {
        $path = __DIR__ . '/../../../cases/' . $file;
        return json_decode((string) file_get_contents($path), true, 64, JSON_THROW_ON_ERROR);
    }

    /** @return array<string, array{array<string, mixed>}> */
    private static function cases(string $file): array
    {
        $doc = self::load($file);
        self::assertSame(1, $doc['format'], "$file: format");
        $out = [];
        foreach ($doc['cases'] as $case) {
            self::assertArrayNotHasKey($case['name'], $out, "$file: two cases named {$case['name']}");
            $out[$case['name']] = [$case];
        }
        return $out;
    }

    /**
     * A text of a case: a string, or {"concat": [texts]}, {"repeat": text, "times": n},
     * {"hex": "fffe"} (client/cases/README.md).
     */
    private static function text(mixed $t): string
    {
        if (is_string($t)) {
            return $t;
        }
        self::assertIsArray($t, 'a text is a string or an object');
        $keys = array_keys($t);
        sort($keys);
        return match ($keys) {
            ['concat'] => implode('', array_map(self::text(...), $t['concat'])),
            ['repeat', 'times'] => str_repeat(self::text($t['repeat']), $t['times']),
            ['hex'] => (string) hex2bin($t['hex']),
            default => self::fail('a text object this runner does not know: ' . implode(', ', $keys)),
        };
    }

    /** @param array<string, mixed> $case @param list<string> $known */
    private static function onlyKnownFields(array $case, array $known): void
    {
        self::assertSame([], array_values(array_diff(array_keys($case), $known, ['name', 'note'])), 'fields this runner does not know');
    }

    /** Every file of client/cases/ is run here (and by client/cases_test.cc, which checks the same). */
    public function testEveryFileOfTheCasesIsRun(): void
    {
        $files = array_map('basename', glob(__DIR__ . '/../../../cases/*.json') ?: []);
        sort($files);
        self::assertSame(['positions.json', 'records.json', 'sql.json', 'token_statements.json'], $files);
    }

    /** @return array<string, array{array<string, mixed>}> */
    public static function tokenStatementCases(): array
    {
        return self::cases('token_statements.json');
    }

    /**
     * @dataProvider tokenStatementCases
     * @param array<string, mixed> $case
     */
    public function testTokenStatements(array $case): void
    {
        if (isset($case['answer'])) {
            self::onlyKnownFields($case, ['answer', 'reached']);
            $kind = PositionKind::from($case['answer']['kind']);
            self::assertSame($case['reached'], ReadYourWrites::caughtUp($kind, $case['answer']['value']));
            return;
        }
        self::onlyKnownFields($case, ['server', 'flavor', 'statements']);
        $flavor = ServerFlavor::parse(self::text($case['server']['version']), self::text($case['server']['comment']));
        $want = $case['flavor'];
        self::assertSame([$want['kind'], $want['major'], $want['minor'], $want['patch']], [$flavor->kind, $flavor->major, $flavor->minor, $flavor->patch]);
        foreach ($case['statements'] as $kind => $statement) {
            self::assertSame($statement, ReadYourWrites::tokenStatement(PositionKind::from($kind), $flavor), $kind);
        }
    }

    /** @return array<string, array{array<string, mixed>}> */
    public static function sqlCases(): array
    {
        return self::cases('sql.json');
    }

    /**
     * @dataProvider sqlCases
     * @param array<string, mixed> $case
     */
    public function testSqlClassification(array $case): void
    {
        self::onlyKnownFields($case, ['sql', 'read', 'locking']);
        $class = Classifier::classify(self::text($case['sql']));
        self::assertSame(['read' => $case['read'], 'locking' => $case['locking']], ['read' => $class->read, 'locking' => $class->locking]);
    }

    /** @return array<string, array{array<string, mixed>}> */
    public static function positionCases(): array
    {
        return self::cases('positions.json');
    }

    /**
     * @dataProvider positionCases
     * @param array<string, mixed> $case
     */
    public function testPositions(array $case): void
    {
        if (isset($case['have'])) {
            self::onlyKnownFields($case, ['have', 'want', 'includes']);
            $have = Positions::parse(PositionKind::from($case['have']['kind']), self::text($case['have']['text']));
            $want = Positions::parse(PositionKind::from($case['want']['kind']), self::text($case['want']['text']));
            self::assertSame($case['includes'], $have->includes($want));
            return;
        }
        self::onlyKnownFields($case, ['parse', 'expect']);
        $expect = $case['expect'];
        self::assertSame([], array_values(array_diff(array_keys($expect), ['ok', 'text', 'catch_up'])), 'expect fields');
        try {
            $p = Positions::parse(PositionKind::from($case['parse']['kind']), self::text($case['parse']['text']));
        } catch (PositionException $e) {
            self::assertFalse($expect['ok'], 'refused: ' . $e->getMessage());
            return;
        }
        self::assertTrue($expect['ok'], 'accepted as ' . $p->toString());
        if (array_key_exists('text', $expect)) {
            self::assertSame($expect['text'], $p->toString());
        }
        if (array_key_exists('catch_up', $expect)) {
            self::assertSame($expect['catch_up'], ReadYourWrites::catchUpQuery($p));
        }
    }

    /** @return array<string, array{array<string, mixed>}> */
    public static function recordCases(): array
    {
        return self::cases('records.json');
    }

    /**
     * A hash's values as a transport hands them over: a string (or a text object) as it is, any
     * other JSON value as PHP has it (an integer, null, an array, a bool, a float).
     *
     * @param array<string, mixed> $fields
     * @return array<string, mixed>
     */
    private static function hash(array $fields): array
    {
        return array_map(static fn (mixed $v): mixed => is_string($v) || (is_array($v) && !array_is_list($v)) ? self::text($v) : $v, $fields);
    }

    /**
     * @dataProvider recordCases
     * @param array<string, mixed> $case
     */
    public function testRecords(array $case): void
    {
        $expect = $case['expect'];
        try {
            if (isset($case['primary'])) {
                self::onlyKnownFields($case, ['primary', 'expect']);
                self::assertSame([], array_values(array_diff(array_keys($case['primary']), ['pointer', 'key'])));
                $key = isset($case['primary']['key']) ? self::hash($case['primary']['key']) : null;
                $p = RecordParser::primary(self::hash($case['primary']['pointer']), $key);
                $got = ['id' => $p->id, 'circuit' => $p->circuit->value, 'topology' => $p->topology, 'key_valid' => $p->keyValid,
                    'read_only' => $p->readOnly, 'last_write_ms' => $p->lastWriteMs, 'consecutive_failures' => $p->consecutiveFailures];
                $want = $expect['primary'] ?? [];
            } else {
                self::onlyKnownFields($case, ['replica', 'expect']);
                $in = $case['replica'];
                self::assertSame([], array_values(array_diff(array_keys($in), ['id', 'fields', 'remove', 'exact'])));
                $defaults = self::load('records.json')['defaults'];
                $fields = ($in['exact'] ?? false) ? [] : $defaults['fields'];
                foreach ($in['fields'] ?? [] as $k => $v) {
                    $fields[$k] = $v;
                }
                foreach ($in['remove'] ?? [] as $k) {
                    unset($fields[$k]);
                }
                $r = RecordParser::replica(self::text($in['id'] ?? $defaults['id']), self::hash($fields));
                $got = ['delay_ms' => $r->delayMs, 'delay_lower_ms' => $r->delayLowerMs, 'state' => $r->state->value,
                    'healthy' => $r->healthy, 'tier' => $r->tier, 'weight' => $r->weight, 'max_delay_ms' => $r->maxDelayMs,
                    'seq' => $r->seq, 'measured_at_ms' => $r->measuredAtMs, 'agent' => $r->agent,
                    'position' => $r->position === null ? null : ['kind' => $r->position->kind()->value, 'text' => $r->position->toString()],
                    'usable' => $r->usable()];
                $want = $expect['record'] ?? [];
            }
        } catch (MalformedException $e) {
            self::assertFalse($expect['ok'], 'refused: ' . $e->getMessage());
            if (isset($expect['field'])) {
                self::assertStringStartsWith($expect['field'] . ':', $e->getMessage());
            }
            return;
        }
        self::assertTrue($expect['ok'], 'accepted');
        self::assertSame([], array_values(array_diff(array_keys($want), array_keys($got))), 'expected fields this runner does not know');
        $got = array_intersect_key($got, $want);
        ksort($got);
        ksort($want);
        self::assertSame($want, $got);
    }
}
