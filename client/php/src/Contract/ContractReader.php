<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\Position\Text;

/**
 * Reads lagwatch's contract (docs/redis.md) for the replicas a router knows, in one pipelined
 * round trip: SMEMBERS `<prefix>:replicas`, HGETALL `<prefix>:primary`, HGETALL and PTTL of each
 * known replica's key, HGETALL of the primary's key `lagwatch:primary:<id>` under the id the
 * application configured (or the pointer named last time) — and, in the same pipeline, the
 * router feedback queued since the last one. Only when the pointer names another primary does a
 * second round trip fetch that primary's key. (On a Redis Cluster the transport sends these
 * commands one by one: a round trip each, PhpRedisClusterTransport.)
 *
 * Caching (docs/routing.md, "Caching"): with cacheMs > 0 a snapshot is served until the earliest
 * of its fetch plus cacheMs (at most 25) and each record's key expiry. PHP has no thread to hold
 * a subscription to `<prefix>:events`, so a cached snapshot cannot be dropped when an event
 * arrives: cacheMs 0 (the default) reads Redis for every decision.
 *
 * Never throws: without Redis a snapshot is Contract::unreadable (everything to the primary), and
 * Redis is not tried again for retryAfterMs. Not thread-safe.
 */
final class ContractReader
{
    public const MAX_CACHE_MS = 25;
    private const MAX_MEMBERS = 10000;

    private ?Contract $cached = null;
    private int $cachedUntilMs = 0;
    private int $nextAttemptMs = 0;
    private string $knownPrimary;
    /** @var list<list<string>> */
    private array $pendingFeedback = [];
    /** @var array<string, int> */
    private array $counters = [
        'refreshes' => 0,
        'redis_errors' => 0,
        'malformed' => 0,
        'missing' => 0,
        'served_from_cache' => 0,
        'feedback_sent' => 0,
        'feedback_lost' => 0,
    ];
    private string $lastError = '';
    /** @var list<string> what the last refresh refused, for the router's log */
    private array $problems = [];

    /**
     * @param list<string> $replicaIds the replicas the router has connections for ("host:port")
     * @param string $primaryId the primary the application knows ("host:port"; '' if none)
     */
    public function __construct(
        private readonly RedisTransport $redis,
        private readonly string $keyPrefix,
        private readonly int $ttlMs,
        private readonly array $replicaIds,
        string $primaryId,
        private readonly int $cacheMs = 0,
        private readonly int $retryAfterMs = 200,
    ) {
        $this->knownPrimary = $primaryId;
    }

    /** The contract as of at most cacheMs ago (see the class comment). Never throws. */
    public function snapshot(int $nowMs): Contract
    {
        if ($this->cached !== null && $nowMs < $this->cachedUntilMs) {
            ++$this->counters['served_from_cache'];
            return $this->cached;
        }
        $this->cached = null;
        if ($nowMs < $this->nextAttemptMs) {
            return Contract::unreadable($nowMs);
        }
        try {
            $contract = $this->refresh($nowMs);
        } catch (TransportException $e) {
            $this->fail($e->getMessage(), $nowMs);
            return Contract::unreadable($nowMs);
        }
        ++$this->counters['refreshes'];
        $this->lastError = '';
        if ($this->cacheMs > 0) {
            $this->cached = $contract;
            $this->cachedUntilMs = min($nowMs + min($this->cacheMs, self::MAX_CACHE_MS), $contract->expiresAtMs);
        }
        return $contract;
    }

    /** Queues commands (router feedback) for the next round trip. */
    public function queue(array $commands): void
    {
        foreach ($commands as $c) {
            $this->pendingFeedback[] = $c;
        }
    }

    /** Sends the queued commands now, if any, unless Redis is known to be away. Never throws. */
    public function flush(int $nowMs): void
    {
        if ($this->pendingFeedback === []) {
            return;
        }
        $commands = $this->pendingFeedback;
        $this->pendingFeedback = [];
        if ($nowMs < $this->nextAttemptMs) {
            $this->counters['feedback_lost'] += count($commands);
            return;
        }
        try {
            $this->countFeedback($this->redis->pipeline($commands));
        } catch (TransportException $e) {
            $this->counters['feedback_lost'] += count($commands);
            $this->fail($e->getMessage(), $nowMs);
        }
    }

    /** @return array<string, int> */
    public function counters(): array
    {
        return $this->counters;
    }

    /** Why the last refresh failed; '' after a good one. */
    public function lastError(): string
    {
        return $this->lastError;
    }

    /** @return list<string> what the last refresh refused (malformed members, records, pointer) */
    public function problems(): array
    {
        return $this->problems;
    }

    private function fail(string $why, int $nowMs): void
    {
        ++$this->counters['redis_errors'];
        $this->lastError = $why;
        $this->cached = null;
        $this->nextAttemptMs = $nowMs + $this->retryAfterMs;
    }

    private function replicaKey(string $id): string
    {
        return $this->keyPrefix . ':' . $id;
    }

    private static function primaryKey(string $id): string
    {
        return 'lagwatch:primary:' . $id;
    }

    private function refuse(string $why): void
    {
        ++$this->counters['malformed'];
        $this->problems[] = $why;
    }

    /** @param list<mixed> $replies HINCRBY replies */
    private function countFeedback(array $replies): void
    {
        foreach ($replies as $reply) {
            if (is_int($reply)) {
                ++$this->counters['feedback_sent'];
            } else {
                ++$this->counters['feedback_lost'];
            }
        }
    }

    /** @throws TransportException */
    private function refresh(int $sentMs): Contract
    {
        $this->problems = [];
        $commands = [['SMEMBERS', $this->keyPrefix . ':replicas'], ['HGETALL', $this->keyPrefix . ':primary']];
        foreach ($this->replicaIds as $id) {
            $commands[] = ['HGETALL', $this->replicaKey($id)];
            $commands[] = ['PTTL', $this->replicaKey($id)];
        }
        $guessedPrimary = $this->knownPrimary;
        if ($guessedPrimary !== '') {
            $commands[] = ['HGETALL', self::primaryKey($guessedPrimary)];
        }
        $contractCommands = count($commands);
        $feedback = $this->pendingFeedback;
        $this->pendingFeedback = [];
        try {
            $replies = $this->redis->pipeline(array_merge($commands, $feedback));
        } catch (TransportException $e) {
            $this->counters['feedback_lost'] += count($feedback);
            throw $e;
        }
        $this->countFeedback(array_slice($replies, $contractCommands));

        $members = $this->members($replies[0]);
        $replicas = [];
        $expiresAt = PHP_INT_MAX;
        foreach ($this->replicaIds as $i => $id) {
            if (!in_array($id, $members, true)) {
                continue;
            }
            $record = $this->record($id, $replies[2 + 2 * $i], $replies[3 + 2 * $i], $sentMs);
            if ($record !== null) {
                $replicas[$id] = $record;
                $expiresAt = min($expiresAt, $record->expiresAtMs);
            }
        }

        $primary = new PrimaryInfo();
        $pointer = $replies[1];
        if (!is_array($pointer)) {
            $this->refuse($this->keyPrefix . ':primary: not a hash');
        } elseif ($pointer !== []) {
            $named = is_string($pointer['primary'] ?? null) && ReplicaId::isValid($pointer['primary'])
                ? $pointer['primary'] : '';
            $keyReply = $guessedPrimary !== '' ? $replies[$contractCommands - 1] : null;
            if ($named !== '' && $named !== $guessedPrimary) {
                $keyReply = $this->redis->pipeline([['HGETALL', self::primaryKey($named)]])[0];
            }
            $key = is_array($keyReply) && $keyReply !== [] ? $keyReply : null;
            try {
                $primary = RecordParser::primary($pointer, $key);
                if ($key !== null && !$primary->keyValid) {
                    $this->refuse(self::primaryKey($named) . ': malformed');
                }
                $this->knownPrimary = $named;
            } catch (MalformedException $e) {
                $this->refuse($this->keyPrefix . ':primary: ' . $e->getMessage());
            }
        }
        return new Contract($members, $replicas, $primary, true, $sentMs, $expiresAt);
    }

    /** @return list<string> */
    private function members(mixed $reply): array
    {
        if (!is_array($reply)) {
            $this->refuse($this->keyPrefix . ':replicas: not a set');
            return [];
        }
        $members = [];
        foreach ($reply as $m) {
            $m = (string) $m;
            if (!ReplicaId::isValid($m)) {
                $this->refuse($this->keyPrefix . ':replicas: member is not host:port: ' . Text::quoted($m));
            } elseif (count($members) >= self::MAX_MEMBERS) {
                $this->refuse($this->keyPrefix . ':replicas: more than ' . self::MAX_MEMBERS . ' members');
                break;
            } else {
                $members[$m] = true;
            }
        }
        return array_map('strval', array_keys($members));
    }

    private function record(string $id, mixed $hash, mixed $pttl, int $sentMs): ?ReplicaRecord
    {
        $key = $this->replicaKey($id);
        if (!is_array($hash)) {
            $this->refuse($key . ': not a hash');
            return null;
        }
        if ($hash === []) {
            ++$this->counters['missing'];  // no key: unusable, as the contract says
            return null;
        }
        if (!is_int($pttl) || $pttl === -1) {
            $this->refuse($key . ': no expiry');
            return null;
        }
        if ($pttl < 0) {
            ++$this->counters['missing'];  // expired between HGETALL and PTTL
            return null;
        }
        try {
            return RecordParser::replica($id, $hash)->fetched($sentMs, $pttl);
        } catch (MalformedException $e) {
            $this->refuse($key . ': ' . $e->getMessage());
            return null;
        }
    }
}
