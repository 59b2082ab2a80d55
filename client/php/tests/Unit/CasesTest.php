<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Lagwatch\Router\Contract\Contract;
use Lagwatch\Router\Contract\MalformedException;
use Lagwatch\Router\Contract\PrimaryInfo;
use Lagwatch\Router\Contract\RecordParser;
use Lagwatch\Router\Contract\ReplicaId;
use Lagwatch\Router\Internal\Answers;
use Lagwatch\Router\Position\PositionException;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Position\Positions;
use Lagwatch\Router\RandomSource;
use Lagwatch\Router\Routing\Decider;
use Lagwatch\Router\Routing\ReadYourWrites;
use Lagwatch\Router\Routing\Reason;
use Lagwatch\Router\Routing\ServerFlavor;
use Lagwatch\Router\Routing\Statement;
use Lagwatch\Router\Routing\Target;
use Lagwatch\Router\Session;
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
        self::assertSame(['positions.json', 'records.json', 'routing.json', 'sql.json', 'token_statements.json'], $files);
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

    /**
     * The decider's reasons as routing.json spells them (client/route.h's ReasonName): this router
     * tells more apart (the tier a replica came from, Redis unreadable). CaughtUp and LateAnswer
     * are the Router's, after an ask or a late answer, never the decider's.
     */
    private const REASONS = [
        'write' => 'write',
        'locking_read' => 'locking_read',
        'in_transaction' => 'in_transaction',
        'forced' => 'forced',
        'tier_available' => 'replica',
        'tier_fallback' => 'replica',
        'drained_replica' => 'drained_replica',
        'no_healthy_replica' => 'no_usable_replica',
        'redis_unavailable' => 'no_usable_replica',
        'read_your_writes' => 'not_caught_up',
        'primary_circuit_open' => 'primary_down',
        'primary_ambiguous' => 'primary_ambiguous',
    ];

    /** @return array<string, array{array<string, mixed>}> */
    public static function routingCases(): array
    {
        return self::cases('routing.json');
    }

    /**
     * The contract of a routing case, built as ContractReader builds it from what Redis answered:
     * every member's hash parsed (a refused one left out, as a missing key is) and fetched at
     * $fetchedMs; the pointer (null or empty: no key) and, when it names a primary, that
     * primary's key, parsed together (a refused pointer: the primary unknown).
     *
     * @param array<string, mixed> $case
     * @param array<string, mixed> $defaults
     */
    private static function routingContract(array $case, array $defaults, int $fetchedMs, int $ttlMs): Contract
    {
        $ids = array_map(static fn (array $r): string => self::text($r['id']), $case['replicas']);
        $members = isset($case['members']) ? array_map(self::text(...), $case['members']) : $ids;
        foreach ($members as $m) {
            self::assertTrue(ReplicaId::isValid($m), "member $m");
        }
        $replicas = [];
        foreach ($case['replicas'] as $r) {
            self::assertSame([], array_values(array_diff(array_keys($r), ['id', 'fields'])), 'replica fields');
            $id = self::text($r['id']);
            self::assertContains($id, $members, 'the reader reads the keys of members only');
            self::assertSame(1, count(array_keys($ids, $id, true)), "two records of $id");
            try {
                $fields = array_merge($defaults['replica_fields'], $r['fields'] ?? []);
                $replicas[$id] = RecordParser::replica($id, self::hash($fields))->fetched($fetchedMs, $ttlMs);
            } catch (MalformedException) {
                // refused: unusable, as a missing key is
            }
        }
        $primary = new PrimaryInfo();
        $pointer = array_key_exists('pointer', $case) ? $case['pointer'] : $defaults['pointer'];
        if ($pointer !== null && $pointer !== []) {
            $pointer = self::hash($pointer);
            $named = is_string($pointer['primary'] ?? null) && ReplicaId::isValid($pointer['primary']);
            $key = $named && isset($case['primary_key']) ? self::hash($case['primary_key']) : null;
            try {
                $primary = RecordParser::primary($pointer, $key === [] ? null : $key);
            } catch (MalformedException) {
                // the primary unknown
            }
        }
        return new Contract($members, $replicas, $primary, true, $fetchedMs);
    }

    /** @param array<string, mixed> $in */
    private static function routingSession(array $in): Session
    {
        $session = new Session();
        self::assertLessThanOrEqual(1, count($in), 'a token, or the time of a write that has none');
        foreach ($in as $key => $value) {
            if ($key === 'token') {
                self::assertSame([], array_values(array_diff(array_keys($value), ['kind', 'text'])), 'token fields');
                $session->wrote(Positions::parse(PositionKind::from($value['kind']), self::text($value['text'])), 0);
            } elseif ($key === 'write_ms') {
                $session->wrote(null, $value);
            } else {
                self::fail("a session field this runner does not know: $key");
            }
        }
        return $session;
    }

    /** @param array<string, mixed> $in */
    private static function routingStatement(array $in): Statement
    {
        self::assertSame([], array_values(array_diff(array_keys($in), ['sql', 'read', 'locking', 'in_transaction', 'forced'])), 'statement fields');
        if (isset($in['sql'])) {
            self::assertArrayNotHasKey('read', $in, 'sql or read');
            self::assertArrayNotHasKey('locking', $in, 'sql or locking');
            $class = Classifier::classify(self::text($in['sql']));
            [$read, $locking] = [$class->read, $class->locking];
        } else {
            [$read, $locking] = [$in['read'], $in['locking'] ?? false];
        }
        return new Statement($read, $locking, $in['in_transaction'] ?? false, $in['forced'] ?? false);
    }

    /**
     * @dataProvider routingCases
     * @param array<string, mixed> $case
     */
    public function testRouting(array $case): void
    {
        self::onlyKnownFields($case, ['replicas', 'members', 'pointer', 'primary_key', 'redis', 'now_ms',
            'fetched_at_ms', 'options', 'random', 'session', 'statement', 'expect']);
        $defaults = self::load('routing.json')['defaults'];
        $options = array_merge($defaults['options'], $case['options'] ?? []);
        self::assertSame([], array_values(array_diff(array_keys($options), ['ttl_ms', 'bounded', 'clock_skew_ms'])), 'options');
        $nowMs = $case['now_ms'] ?? $defaults['now_ms'];
        $fetchedMs = $case['fetched_at_ms'] ?? $nowMs;
        if (isset($case['redis'])) {
            self::assertSame('unreadable', $case['redis']);
            self::assertSame([], array_intersect(array_keys($case), ['replicas', 'members', 'pointer', 'primary_key']));
            $contract = Contract::unreadable($fetchedMs);
        } else {
            $contract = self::routingContract($case, $defaults, $fetchedMs, $options['ttl_ms']);
        }
        $session = self::routingSession($case['session'] ?? []);
        $statement = self::routingStatement($case['statement']);
        // Scripted: the i-th call answers the case's i-th "random" value (0 past the list).
        $random = new class ($case['random'] ?? []) implements RandomSource {
            /** @var list<int> */
            public array $totals = [];

            /** @param list<int> $script */
            public function __construct(private readonly array $script)
            {
            }

            public function below(int $n): int
            {
                $v = $this->script[count($this->totals)] ?? 0;
                $this->totals[] = $n;
                TestCase::assertLessThan($n, $v, "random value for n = $n");
                return $v;
            }
        };
        $decider = new Decider($options['bounded'], $options['clock_skew_ms'], $options['ttl_ms']);
        $d = $decider->decide($statement, $session, $contract, $random, $nowMs);
        self::assertGreaterThanOrEqual(count($case['random'] ?? []), count($random->totals), 'random values the decider did not ask for');

        $expect = $case['expect'];
        self::assertArrayHasKey('target', $expect);
        self::assertArrayHasKey('reason', $expect);
        $got = [];
        foreach ($expect as $key => $want) {
            $got[$key] = match ($key) {
                'target' => $d->target->value,
                'reason' => self::REASONS[$d->reason->value] ?? 'not a decider reason: ' . $d->reason->value,
                'replica' => $d->replica?->id ?? '',
                'tier' => $d->replica?->tier ?? '',
                'primary' => $d->primary,
                'fallback' => $expect['target'] === 'ask_replica' ? $d->fallback->value : 'fallback is an ask\'s (README)',
                // The Router's deadline for the read on the decision's replica; an ask's read there
                // is the decision Dispatcher makes of it when the replica answers "reached".
                'fresh_until_ms' => Answers::deadlineMs(
                    $d->target === Target::AskReplica ? $d->with(Target::Replica, Reason::CaughtUp) : $d,
                    $options['bounded'],
                    $options['clock_skew_ms'],
                    $nowMs,
                ),
                'degraded' => $d->degraded,
                'random_totals' => $random->totals,
                'settled' => self::settled(clone $session, $contract, $options['ttl_ms'], $options['clock_skew_ms']),
                default => 'an expect field this runner does not know: ' . $key,
            };
        }
        self::assertSame($expect, $got);
    }

    /** Whether the session holds nothing after settle(): the token (or the untokened time) dropped. */
    private static function settled(Session $session, Contract $contract, int $ttlMs, int $clockSkewMs): bool
    {
        $session->settle($contract, $ttlMs, $clockSkewMs);
        return !$session->hasWrites();
    }
}
