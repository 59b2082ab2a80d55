<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Lagwatch\Router\Contract\RedisTransport;
use Lagwatch\Router\Contract\TransportException;

/** An in-memory Redis with a fault switch, answering as PhpRedisTransport does. */
final class FakeRedis implements RedisTransport
{
    /** @var array<string, array<array-key, string>> */
    public array $hashes = [];
    /** @var array<string, list<string>> */
    public array $sets = [];
    /** @var array<string, string> keys of another type */
    public array $strings = [];
    /** @var array<string, int> PTTL per key; a key not here has none (-1) */
    public array $pttl = [];
    public bool $down = false;
    /** Thrown by the next round trips when set (something other than a TransportException). */
    public ?\Throwable $fail = null;
    public int $roundTrips = 0;
    /** Calls of pipeline(), failed ones included. */
    public int $attempts = 0;
    /** @var list<list<string>> every command received */
    public array $received = [];

    public function pipeline(array $commands): array
    {
        ++$this->attempts;
        if ($this->down) {
            throw new TransportException('Redis 127.0.0.1:6379: Connection refused');
        }
        if ($this->fail !== null) {
            throw $this->fail;
        }
        ++$this->roundTrips;
        $replies = [];
        foreach ($commands as $c) {
            $this->received[] = $c;
            $key = $c[1];
            $replies[] = match ($c[0]) {
                'SMEMBERS' => isset($this->strings[$key]) || isset($this->hashes[$key]) ? false : ($this->sets[$key] ?? []),
                'HGETALL' => isset($this->strings[$key]) || isset($this->sets[$key]) ? false : ($this->hashes[$key] ?? []),
                'PTTL' => $this->exists($key) ? ($this->pttl[$key] ?? -1) : -2,
                'HINCRBY' => isset($this->strings[$key]) ? false : $this->incr($key, $c[2], (int) $c[3]),
            };
        }
        return $replies;
    }

    private function exists(string $key): bool
    {
        return isset($this->hashes[$key]) || isset($this->sets[$key]) || isset($this->strings[$key]);
    }

    private function incr(string $key, string $field, int $by): int
    {
        $v = (int) ($this->hashes[$key][$field] ?? 0) + $by;
        $this->hashes[$key][$field] = (string) $v;
        return $v;
    }

    /**
     * A replica's key as the agent writes it (a healthy tier1 record), with $fields changed.
     *
     * @param array<string, ?string> $fields null removes the field
     */
    public function replica(string $id, array $fields = [], int $pttl = 900, string $prefix = 'slave_delay'): void
    {
        $record = array_merge(self::healthy(), $fields);
        $this->hashes[$prefix . ':' . $id] = array_filter($record, static fn ($v) => $v !== null);
        $this->pttl[$prefix . ':' . $id] = $pttl;
        if (!in_array($id, $this->sets[$prefix . ':replicas'] ?? [], true)) {
            $this->sets[$prefix . ':replicas'][] = $id;
        }
    }

    public function pointer(string $primary, string $state = 'up', string $topology = 'ok', string $prefix = 'slave_delay'): void
    {
        $this->hashes[$prefix . ':primary'] = ['primary' => $primary, 'state' => $state, 'topology' => $topology];
        $this->pttl[$prefix . ':primary'] = 900;
    }

    /** @return array<string, string> a healthy tier1 record as the agent writes it */
    public static function healthy(): array
    {
        return [
            'delay_ms' => '12',
            'delay_lower_ms' => '3',
            'state' => 'ok',
            'healthy' => '1',
            'tier' => 'tier1',
            'weight' => '100',
            'max_delay_ms' => '200',
            'seq' => '4711',
            'measured_at_ms' => '1796004314440',
            'agent' => '1',
            'agent:1' => '{"e":"..."}',
            'position' => '0-1-120,1-2-7',
            'position_kind' => 'mariadb_gtid',
        ];
    }
}
