<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\RedisConfig;
use Lagwatch\Router\Tls\TlsProbe;
use Lagwatch\Router\Tls\TlsReason;

/**
 * RedisTransport over phpredis's RedisCluster: the contract on a Redis Cluster (RedisConfig's
 * `cluster`; docs/redis.md, "Redis Cluster"). The cluster object is made lazily from the seeds,
 * which phpredis asks in turn for the slot map (CLUSTER SLOTS); it logs in to each node it uses
 * (AUTH; TLS as the single-server transport's, each node's certificate checked against the
 * address it is reached at unless server_name is set) and sends each command to the master of its
 * key's slot, following MOVED (a resharding or a failover: the slot's new owner) and ASK (a slot
 * in migration) by itself. Only masters are read: a Redis replica may be behind.
 *
 * phpredis 5.3 has no pipeline for RedisCluster, so the commands of a round trip go one after the
 * other, each a round trip to its key's master: a contract read is 3 + 2 × replicas of them, and
 * one more per queued feedback command. Nothing of them is atomic, on one server neither
 * (docs/redis.md, "What is written together").
 *
 * Any failure — a node unreachable, a timeout (`timeout` bounds each connect and read and the
 * time phpredis spends following redirections), CLUSTERDOWN while a failover is under way, no
 * seed answering — is a TransportException and drops the cluster object: the next round trip
 * starts again from the seeds with a new slot map. A command Redis refused (a key of another
 * type, NOPERM) is false, as on one server. When no seed gave a slot map (phpredis does not say
 * why), the seeds are asked once more, at most every PROBE_INTERVAL_S per PHP process: TLS's
 * reason (TlsProbe), or what a seed answers to AUTH or CLUSTER SLOTS.
 *
 * Not thread-safe (nothing in PHP is).
 */
final class PhpRedisClusterTransport implements RedisTransport
{
    private const PROBE_INTERVAL_S = 10.0;

    private ?\RedisCluster $cluster = null;
    /** @var array<string, array{float, string}> what a probe found, by seeds and user: [when, what] */
    private static array $probed = [];

    public function __construct(private readonly RedisConfig $config)
    {
    }

    public function pipeline(array $commands): array
    {
        $mapped = $this->cluster !== null;
        $sending = 'the slot map';
        [$replies, $e, $warnings] = TlsProbe::capture(function () use ($commands, &$mapped, &$sending): array {
            $c = $this->connection();
            $mapped = true;
            $out = [];
            foreach ($commands as $cmd) {
                $sending = $cmd[0] . ' ' . $cmd[1];
                $c->clearLastError();
                $reply = match ($cmd[0]) {
                    'SMEMBERS' => $c->sMembers($cmd[1]),
                    'HGETALL' => $c->hGetAll($cmd[1]),
                    'PTTL' => $c->pttl($cmd[1]),
                    'HINCRBY' => $c->hIncrBy($cmd[1], $cmd[2], (int) $cmd[3]),
                };
                if ($reply === false && $c->getLastError() === null) {
                    throw new \RedisClusterException('no reply');
                }
                $out[] = $reply;
            }
            return $out;
        });
        if ($e instanceof TransportException) {
            $this->close();
            throw $e;
        }
        if ($e instanceof \RedisClusterException || $e instanceof \RedisException) {
            $this->close();
            throw $this->failure($e, $warnings, $mapped, $sending);
        }
        if ($e !== null) {
            throw $e;
        }
        return $replies ?? [];
    }

    public function close(): void
    {
        if ($this->cluster !== null) {
            try {
                $this->cluster->close();
            } catch (\RedisClusterException | \RedisException) {
                // Already broken: nothing to close.
            }
            $this->cluster = null;
        }
    }

    /** A seed as phpredis takes it: "host:port", an IPv6 address without brackets ("::1:7000"). */
    public static function phpredisSeed(string $seed): string
    {
        [$host, $port] = RedisConfig::parseSeed($seed) ?? [$seed, 0];
        return $host . ':' . $port;
    }

    /**
     * The TransportException for a failed round trip: what phpredis said, with TLS's named reason
     * when its warnings speak of TLS, and the seeds' answers when none gave the slot map.
     */
    private function failure(\Exception $e, string $warnings, bool $mapped, string $sending): TransportException
    {
        $said = $warnings !== '' ? $warnings . '; ' . $e->getMessage() : $e->getMessage();
        $detail = trim(preg_replace('/\s+/', ' ', $said) ?? $said);
        $where = $this->config->describe();
        $tls = $this->config->tls;
        [$host, $port] = RedisConfig::parseSeed($this->config->cluster[0]) ?? ['', 0];
        if ($tls->enabled && preg_match('/SSL|TLS|crypto|certificate|handshake|cafile|local cert|private key/i', $warnings) === 1) {
            [$reason, $why] = TlsProbe::explainRedis($warnings, $host, $port, $tls, $this->config->timeoutSeconds);
            return new TransportException("$where: TLS $reason: $why ($detail)", 0, $e, $reason);
        }
        if ($mapped) {
            return new TransportException("$where: $sending: $detail", 0, $e);
        }
        [$reason, $why] = $this->askSeeds();
        if ($reason !== '') {
            return new TransportException("$where: TLS $reason: $why ($detail)", 0, $e, $reason);
        }
        return new TransportException("$where: no seed gave the slot map ($detail)" . ($why !== '' ? "; $why" : ''), 0, $e);
    }

    /**
     * Why no seed gave the slot map, asked of the seeds in order until one answers: [a TlsReason
     * or '', what was found]. At most once per PROBE_INTERVAL_S for these seeds and credentials;
     * the answer is reused meanwhile.
     *
     * @return array{string, string}
     */
    private function askSeeds(): array
    {
        $c = $this->config;
        $key = serialize([$c->cluster, $c->username, hash('sha256', (string) $c->password), $c->tls]);
        $now = microtime(true);
        foreach (self::$probed as $k => [$at]) {
            if ($now - $at >= self::PROBE_INTERVAL_S) {
                unset(self::$probed[$k]);
            }
        }
        if (isset(self::$probed[$key])) {
            return self::decode(self::$probed[$key][1]);
        }
        $found = ['', ''];
        $unreachable = [];
        foreach ($c->cluster as $seed) {
            [$host, $port] = RedisConfig::parseSeed($seed) ?? ['', 0];
            $named = $c->tls->enabled
                ? TlsProbe::diagnoseRedis($host, $port, $c->tls, $c->timeoutSeconds)
                : (TlsProbe::speaksTls($host, $port, $c->timeoutSeconds)
                    ? [TlsReason::PLAINTEXT_REFUSED, "$seed speaks TLS only: set redis.tls"] : null);
            if ($named !== null) {
                $found = $named;
                break;
            }
            $said = $this->askSeed($host, $port);
            if ($said !== null) {
                $found = ['', "$seed: $said"];
                break;
            }
            $unreachable[] = $seed;
        }
        if ($found === ['', ''] && $unreachable !== []) {
            $found = ['', 'cannot connect to ' . implode(', ', $unreachable)];
        }
        self::$probed[$key] = [$now, $found[0] . "\n" . $found[1]];
        return $found;
    }

    /** @return array{string, string} */
    private static function decode(string $kept): array
    {
        $parts = explode("\n", $kept, 2);
        return [$parts[0], $parts[1] ?? ''];
    }

    /**
     * What the seed at $host:$port answers to the router's AUTH and CLUSTER SLOTS, on a
     * connection of its own; null when it cannot be connected to.
     */
    private function askSeed(string $host, int $port): ?string
    {
        $c = $this->config;
        $r = new \Redis();
        [, $e] = TlsProbe::capture(function () use ($r, $host, $port, $c): bool {
            $t = $c->timeoutSeconds;
            return $c->tls->enabled
                ? $r->connect('tls://' . $host, $port, $t, null, 0, $t, ['stream' => $c->tls->streamOptions($host)])
                : $r->connect($host, $port, $t, null, 0, $t);
        });
        if ($e !== null || !$r->isConnected()) {
            return null;
        }
        try {
            if ($c->password !== null) {
                $auth = $c->username !== null ? [$c->username, $c->password] : $c->password;
                [$ok, $e] = TlsProbe::capture(static fn () => $r->auth($auth));
                if ($ok !== true) {
                    return 'AUTH refused: ' . ($e?->getMessage() ?? (string) $r->getLastError());
                }
            }
            [$slots, $e] = TlsProbe::capture(static fn () => $r->rawCommand('CLUSTER', 'SLOTS'));
            if (!is_array($slots)) {
                return 'CLUSTER SLOTS refused: ' . ($e?->getMessage() ?? (string) $r->getLastError());
            }
            return $slots === [] ? 'CLUSTER SLOTS: no slot is served' : 'answers CLUSTER SLOTS now';
        } finally {
            try {
                $r->close();
            } catch (\RedisException) {
                // Closing a broken connection: nothing to do.
            }
        }
    }

    /** @throws \RedisClusterException|TransportException */
    private function connection(): \RedisCluster
    {
        if ($this->cluster !== null) {
            return $this->cluster;
        }
        $c = $this->config;
        $context = null;
        if ($c->tls->enabled) {
            $unreadable = $c->tls->unreadableFile();
            if ($unreadable !== '') {
                throw new TransportException(
                    $c->describe() . ': TLS ' . TlsReason::CONFIG . ": $unreadable",
                    0,
                    null,
                    TlsReason::CONFIG,
                );
            }
            // Without server_name no peer_name: each node is checked against its own address.
            $context = $c->tls->streamOptions(null);
        }
        $auth = null;
        if ($c->password !== null) {
            $auth = $c->username !== null ? [$c->username, $c->password] : $c->password;
        }
        $cluster = new \RedisCluster(
            null,
            array_map(self::phpredisSeed(...), $c->cluster),
            $c->timeoutSeconds,
            $c->timeoutSeconds,
            false,
            $auth,
            $context,
        );
        $cluster->setOption(\RedisCluster::OPT_SLAVE_FAILOVER, \RedisCluster::FAILOVER_NONE);
        return $this->cluster = $cluster;
    }
}
