<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Position\Text;

/**
 * Where lagwatch's Redis is, how to log in (an ACL user: username and password) and speak to it
 * (tls), and how its keys are named. key_prefix and ttl_ms must match the agent's
 * redis.key_prefix and redis.ttl_ms.
 */
final class RedisConfig
{
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
    ) {
    }

    /** @throws ConfigException */
    public static function from(ConfigReader $c): self
    {
        $c->rejectUnknown([
            'host', 'port', 'timeout', 'username', 'password', 'database', 'key_prefix', 'ttl_ms', 'retry_after_ms',
            'tls',
        ]);
        $prefix = $c->string('key_prefix', 'slave_delay');
        if (!Text::isToken($prefix, '_.:-', 1, 128)) {
            throw new ConfigException($c->key('key_prefix') . ': not 1..128 of [A-Za-z0-9_.:-]');
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
        );
    }
}
