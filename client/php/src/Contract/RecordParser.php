<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\Position\PositionException;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Position\Positions;
use Lagwatch\Router\Position\Text;

/**
 * Validates the hashes of the contract (docs/routing.md, "What a router reads"; client/record.h).
 * Pure functions.
 */
final class RecordParser
{
    private const INT_FIELDS = [
        // field => [min, max], in the order they are checked
        'delay_ms' => [0, PHP_INT_MAX],
        'delay_lower_ms' => [0, PHP_INT_MAX],
        'healthy' => [0, 1],
        'weight' => [0, 1000],
        'max_delay_ms' => [-1, PHP_INT_MAX],
        'seq' => [0, PHP_INT_MAX],
        'measured_at_ms' => [0, PHP_INT_MAX],
    ];

    /**
     * One replica's hash as HGETALL returns it. Required: the integer fields above (base 10),
     * state (one of the seven), healthy exactly `1` or `0`, tier (1..64 of [A-Za-z0-9_.:-]),
     * weight 0..1000. Optional: agent, position_kind (default none), position (empty: none).
     * Unknown fields (`agent:<id>`) are ignored. Refused as contradicting the contract: healthy 1
     * over the tier's limit or with a state other than ok or primary_unknown; a position with
     * kind none; a position that does not parse as its kind.
     *
     * @param array<array-key, mixed> $fields
     * @throws MalformedException
     */
    public static function replica(string $id, array $fields): ReplicaRecord
    {
        if (!ReplicaId::isValid($id)) {
            throw MalformedException::field('replica', 'not host:port', $id);
        }
        self::requireStrings($fields);
        $n = [];
        foreach (self::INT_FIELDS as $name => [$min, $max]) {
            $n[$name] = self::int($fields, $name, $min, $max);
        }
        if (strlen((string) $fields['healthy']) !== 1) {
            throw MalformedException::field('healthy', 'not 1 or 0', (string) $fields['healthy']);
        }
        $stateText = self::text($fields, 'state');
        if ($stateText === null) {
            throw new MalformedException('state: missing');
        }
        $state = ReplicaState::tryFrom($stateText);
        if ($state === null) {
            throw MalformedException::field('state', 'unknown state', $stateText);
        }
        $tier = self::text($fields, 'tier');
        if ($tier === null || !Text::isToken($tier, '_.:-', 1, 64)) {
            throw MalformedException::field('tier', 'not 1..64 of [A-Za-z0-9_.:-]', $tier ?? '');
        }
        $healthy = $n['healthy'] === 1;
        $maxDelay = $n['max_delay_ms'] >= 0 ? $n['max_delay_ms'] : null;
        if ($healthy && $state !== ReplicaState::Ok && $state !== ReplicaState::PrimaryUnknown) {
            throw MalformedException::field('healthy', '1 with a state that is never healthy', $stateText);
        }
        if ($healthy && $maxDelay !== null && $n['delay_ms'] > $maxDelay) {
            throw MalformedException::field('healthy', "1 over the tier's limit", (string) $fields['delay_ms']);
        }
        $kind = PositionKind::None;
        $kindText = self::text($fields, 'position_kind');
        if ($kindText !== null) {
            $kind = PositionKind::tryFrom($kindText)
                ?? throw MalformedException::field('position_kind', 'unknown kind', $kindText);
        }
        $position = null;
        $positionText = self::text($fields, 'position');
        if ($positionText !== null && $positionText !== '') {
            if ($kind === PositionKind::None) {
                throw MalformedException::field('position', 'set with kind none', $positionText);
            }
            try {
                $position = Positions::parse($kind, $positionText);
            } catch (PositionException $e) {
                throw new MalformedException('position: ' . $e->getMessage());
            }
        }
        return new ReplicaRecord(
            $id,
            $n['delay_ms'],
            $n['delay_lower_ms'],
            $state,
            $healthy,
            $tier,
            $n['weight'],
            $maxDelay,
            $n['seq'],
            $n['measured_at_ms'],
            self::text($fields, 'agent') ?? '',
            $kind,
            $position,
        );
    }

    /**
     * The pointer `<prefix>:primary` and the primary's key `lagwatch:primary:<id>` (null: not
     * read or absent). The circuit is the worse of the two states; a malformed primary's key is
     * ignored (keyValid false) and the pointer's state stands.
     *
     * @param array<array-key, mixed> $pointer
     * @param ?array<array-key, mixed> $primaryKey
     * @throws MalformedException when the pointer is malformed
     */
    public static function primary(array $pointer, ?array $primaryKey): PrimaryInfo
    {
        self::requireStrings($pointer);
        $id = self::text($pointer, 'primary');
        if ($id === null || !ReplicaId::isValid($id)) {
            throw MalformedException::field('primary', 'not host:port', $id ?? '');
        }
        $state = self::text($pointer, 'state');
        $circuit = $state === null ? null : Circuit::tryFrom($state);
        if ($circuit === null || $circuit === Circuit::Unknown) {
            throw MalformedException::field('state', 'not up, degraded, down or ambiguous', $state ?? '');
        }
        $topology = self::text($pointer, 'topology');
        if (!in_array($topology, ['ok', 'unknown', 'ambiguous'], true)) {
            throw MalformedException::field('topology', 'not ok, unknown or ambiguous', $topology ?? '');
        }
        $keyValid = false;
        $readOnly = false;
        $lastWriteMs = 0;
        $failures = 0;
        if ($primaryKey !== null) {
            $keyState = self::text($primaryKey, 'state');
            $keyCircuit = $keyState === null ? null : Circuit::tryFrom($keyState);
            // All or nothing: a malformed key is ignored whole, none of its fields taken.
            try {
                if ($keyCircuit !== null && $keyCircuit !== Circuit::Unknown) {
                    self::requireStrings($primaryKey);
                    $keyReadOnly = self::int($primaryKey, 'read_only', 0, 1) === 1;
                    $keyLastWriteMs = self::int($primaryKey, 'last_write_ms', 0, PHP_INT_MAX);
                    $keyFailures = self::int($primaryKey, 'consecutive_failures', 0, PHP_INT_MAX);
                    [$keyValid, $readOnly, $lastWriteMs, $failures] = [true, $keyReadOnly, $keyLastWriteMs, $keyFailures];
                    if ($keyCircuit->severity() > $circuit->severity()) {
                        $circuit = $keyCircuit;
                    }
                }
            } catch (MalformedException) {
                $keyValid = false;
            }
        }
        return new PrimaryInfo($id, $circuit, $topology, $keyValid, $readOnly, $lastWriteMs, $failures);
    }

    /**
     * HGETALL answers bulk strings only: a hash whose values are anything else (an integer, nil,
     * an array, from a transport that is not phpredis) is refused whole, as the C++ client's
     * HashFromReply does (client/cases/records.json).
     *
     * @param array<array-key, mixed> $fields
     * @throws MalformedException
     */
    private static function requireStrings(array $fields): void
    {
        foreach ($fields as $name => $v) {
            if (!is_string($v)) {
                throw new MalformedException("hash: the value of field $name is a " . get_debug_type($v) . ', not a string');
            }
        }
    }

    /** @param array<array-key, mixed> $fields */
    private static function text(array $fields, string $name): ?string
    {
        $v = $fields[$name] ?? null;
        return is_string($v) || is_int($v) ? (string) $v : null;
    }

    /**
     * A required integer field in [$min, $max].
     *
     * @param array<array-key, mixed> $fields
     * @throws MalformedException
     */
    private static function int(array $fields, string $name, int $min, int $max): int
    {
        $v = self::text($fields, $name);
        if ($v === null) {
            throw new MalformedException($name . ': missing');
        }
        $n = Text::i64($v);
        if ($n === null || $n < $min || $n > $max) {
            throw MalformedException::field($name, 'not an integer in [' . $min . ', ' . $max . ']', $v);
        }
        return $n;
    }
}
