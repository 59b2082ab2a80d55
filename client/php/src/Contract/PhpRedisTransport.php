<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\RedisConfig;

/**
 * RedisTransport over the phpredis extension: one connection, opened lazily with a short connect
 * and read timeout (RedisConfig::timeoutSeconds) and dropped on any failure, so the next round
 * trip reconnects. Not thread-safe (nothing in PHP is).
 */
final class PhpRedisTransport implements RedisTransport
{
    private ?\Redis $redis = null;

    public function __construct(private readonly RedisConfig $config)
    {
    }

    public function pipeline(array $commands): array
    {
        try {
            $pipe = $this->connection()->multi(\Redis::PIPELINE);
            foreach ($commands as $c) {
                match ($c[0]) {
                    'SMEMBERS' => $pipe->sMembers($c[1]),
                    'HGETALL' => $pipe->hGetAll($c[1]),
                    'PTTL' => $pipe->pttl($c[1]),
                    'HINCRBY' => $pipe->hIncrBy($c[1], $c[2], (int) $c[3]),
                };
            }
            $replies = $pipe->exec();
        } catch (\RedisException $e) {
            $this->close();
            throw new TransportException($this->where() . ': ' . $e->getMessage(), 0, $e);
        }
        if (!is_array($replies) || count($replies) !== count($commands)) {
            $this->close();
            throw new TransportException($this->where() . ': the pipeline returned no replies');
        }
        return array_values($replies);
    }

    public function close(): void
    {
        if ($this->redis !== null) {
            try {
                $this->redis->close();
            } catch (\RedisException) {
                // Already broken: nothing to close.
            }
            $this->redis = null;
        }
    }

    private function where(): string
    {
        return 'Redis ' . $this->config->host . ':' . $this->config->port;
    }

    /** @throws \RedisException */
    private function connection(): \Redis
    {
        if ($this->redis !== null) {
            return $this->redis;
        }
        $r = new \Redis();
        $timeout = $this->config->timeoutSeconds;
        if (!$r->connect($this->config->host, $this->config->port, $timeout, null, 0, $timeout)) {
            throw new \RedisException('cannot connect');
        }
        $r->setOption(\Redis::OPT_READ_TIMEOUT, $timeout);
        if ($this->config->password !== null) {
            $auth = $this->config->username !== null
                ? [$this->config->username, $this->config->password]
                : $this->config->password;
            if (!$r->auth($auth)) {
                throw new \RedisException('AUTH refused');
            }
        }
        if ($this->config->database !== 0 && !$r->select($this->config->database)) {
            throw new \RedisException('SELECT ' . $this->config->database . ' refused');
        }
        $this->redis = $r;
        return $r;
    }
}
