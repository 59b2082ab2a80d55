<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Position\Text;

/**
 * Where lagwatch's Redis is — one server (host, port), or a Redis Cluster (cluster: its seed
 * nodes) — how to log in (an ACL user: username and password) and speak to it (tls), and how its
 * keys are named. key_prefix and ttl_ms must match the agent's redis.key_prefix and
 * redis.ttl_ms. Immutable.
 */
final class RedisConfig
{
    /** Longest key prefix (the agent allows 64; the router has always taken up to 128). */
    public const MAX_KEY_PREFIX = 128;
    /** Longest hash tag of a key prefix, as the agent's. */
    public const MAX_HASH_TAG = 64;

    /**
     * @param list<string> $cluster a Redis Cluster's seed nodes ("host:port", "[v6]:port"); [] for
     *        one server at host:port
     */
    public function __construct(
        public readonly string $host = '127.0.0.1',
        public readonly int $port = 6379,
        public readonly float $timeoutSeconds = 0.05,
        public readonly ?string $username = null,
        public readonly ?string $password = null,
        public readonly int $database = 0,
        public readonly string $keyPrefix = 'slave_delay',
        public readonly int $ttlMs = 1000,
        public readonly int $retryAfterMs = 200,
        public readonly TlsConfig $tls = new TlsConfig(),
        public readonly array $cluster = [],
    ) {
    }

    /** @throws ConfigException naming the key */
    public static function from(ConfigReader $c): self
    {
        $c->rejectUnknown([
            'host', 'port', 'timeout', 'username', 'password', 'database', 'key_prefix', 'ttl_ms', 'retry_after_ms',
            'tls', 'cluster',
        ]);
        $prefix = $c->string('key_prefix', 'slave_delay');
        if (!self::isKeyPrefix($prefix)) {
            throw new ConfigException($c->key('key_prefix') . ': not 1..' . self::MAX_KEY_PREFIX
                . ' of [A-Za-z0-9_.:-] with at most one hash tag {...} of 1..' . self::MAX_HASH_TAG . ' of those');
        }
        $cluster = [];
        if ($c->has('cluster')) {
            $cluster = self::seeds($c);
            // The cluster's slot map says where each key is; an address as well would be ignored.
            foreach (['host', 'port'] as $k) {
                if ($c->has($k)) {
                    throw new ConfigException($c->key($k) . ': not with ' . $c->key('cluster') . ' (its nodes say where the keys are)');
                }
            }
            if ($c->int('database', 0, 0, 1000) !== 0) {
                throw new ConfigException($c->key('database') . ': not with ' . $c->key('cluster') . ' (a Redis Cluster has database 0 only)');
            }
        }
        return new self(
            $c->string('host', '127.0.0.1'),
            $c->int('port', 6379, 1, 65535),
            $c->float('timeout', 0.05, 0.001, 10.0),
            $c->optionalString('username'),
            $c->optionalString('password'),
            $c->int('database', 0, 0, 1000),
            $prefix,
            $c->int('ttl_ms', 1000, 1, 3600000),
            $c->int('retry_after_ms', 200, 0, 60000),
            TlsConfig::from($c->section('tls'), true),
            $cluster,
        );
    }

    /**
     * The agent's rule for redis.key_prefix (agent/config.cc, IsKeyPrefix) with the router's longer
     * limit: 1..128 of [A-Za-z0-9_.:-], and at most one hash tag `{...}` whose body is 1..64 of
     * those (a Redis Cluster keeps every key with the same tag in one slot: docs/redis.md, "Redis
     * Cluster"). Nothing else of braces: the prefix goes into key and channel names.
     */
    public static function isKeyPrefix(string $p): bool
    {
        if ($p === '' || strlen($p) > self::MAX_KEY_PREFIX) {
            return false;
        }
        $open = strpos($p, '{');
        if ($open === false) {
            return Text::isToken($p, '_.:-', 1, self::MAX_KEY_PREFIX);
        }
        $close = strpos($p, '}', $open);
        if ($close === false || $close === $open + 1) {
            return false;
        }
        $outside = substr($p, 0, $open) . substr($p, $close + 1);
        $tag = substr($p, $open + 1, $close - $open - 1);
        return Text::isToken($tag, '_.:-', 1, self::MAX_HASH_TAG)
            && ($outside === '' || Text::isToken($outside, '_.:-', 1, self::MAX_KEY_PREFIX));
    }

    /**
     * A seed as [host, port]: "host:port" (the host without ':') or "[v6]:port"; null when it is
     * neither or the port is not 1..65535.
     *
     * @return ?array{string, int}
     */
    public static function parseSeed(string $seed): ?array
    {
        $ok = preg_match('/^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+)):([1-9][0-9]{0,4})$/D', $seed, $m) === 1;
        if (!$ok || (int) $m[3] > 65535 || ($m[1] !== '' && !str_contains($m[1], ':'))) {
            return null;
        }
        return [$m[1] !== '' ? $m[1] : $m[2], (int) $m[3]];
    }

    /** What the router reads the contract from, for messages: "Redis host:port" or "Redis Cluster seed, ...". */
    public function describe(): string
    {
        return $this->cluster === []
            ? 'Redis ' . $this->host . ':' . $this->port
            : 'Redis Cluster ' . implode(', ', $this->cluster);
    }

    /**
     * @return list<string>
     * @throws ConfigException
     */
    private static function seeds(ConfigReader $c): array
    {
        $list = $c->array('cluster');
        if ($list === [] || !array_is_list($list)) {
            throw new ConfigException($c->key('cluster') . ': not a non-empty list of "host:port" seed nodes');
        }
        $seen = [];
        foreach ($list as $i => $seed) {
            $key = $c->key('cluster') . '[' . $i . ']';
            $parsed = is_string($seed) ? self::parseSeed($seed) : null;
            if ($parsed === null) {
                throw new ConfigException($key . ': must be "host:port" (or "[v6]:port"), e.g. "10.0.0.5:7000"');
            }
            $id = $parsed[0] . ':' . $parsed[1];
            if (isset($seen[$id])) {
                throw new ConfigException($key . ': duplicate ' . $seed);
            }
            $seen[$id] = true;
        }
        return $list;
    }
}
