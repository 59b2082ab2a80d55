<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\RedisConfig;
use Lagwatch\Router\Tls\TlsProbe;
use Lagwatch\Router\Tls\TlsReason;

/**
 * RedisTransport over the phpredis extension: one connection, opened lazily with a short connect
 * and read timeout (RedisConfig::timeoutSeconds) and dropped on any failure, so the next round
 * trip reconnects. Not thread-safe (nothing in PHP is).
 *
 * With `tls` enabled the connection is TLS (`tls://` and a stream context: the CA, the client's
 * certificate, the chain and the name verified unless verify_server_cert is false, TLS 1.2 or
 * 1.3 at least), never plaintext. A TLS failure is a TransportException naming its reason
 * (TlsReason: unknown_ca, name_mismatch, not_tls, client_cert, ...), as is plaintext sent to a
 * TLS-only port (plaintext_refused); TlsProbe finds the reason where phpredis does not say it.
 */
final class PhpRedisTransport implements RedisTransport
{
    private ?\Redis $redis = null;
    /** The connection was opened by the current round trip (its failure may be the handshake's). */
    private bool $connectedNow = false;

    public function __construct(private readonly RedisConfig $config)
    {
    }

    public function pipeline(array $commands): array
    {
        $fresh = $this->redis === null;
        $this->connectedNow = false;
        [$replies, $e, $warnings] = TlsProbe::capture(function () use ($commands) {
            $pipe = $this->connection()->multi(\Redis::PIPELINE);
            foreach ($commands as $c) {
                match ($c[0]) {
                    'SMEMBERS' => $pipe->sMembers($c[1]),
                    'HGETALL' => $pipe->hGetAll($c[1]),
                    'PTTL' => $pipe->pttl($c[1]),
                    'HINCRBY' => $pipe->hIncrBy($c[1], $c[2], (int) $c[3]),
                };
            }
            return $pipe->exec();
        });
        if ($e instanceof TransportException) {
            $this->close();
            throw $e;
        }
        if ($e instanceof \RedisException) {
            $this->close();
            throw $this->failure($e, $warnings, $fresh);
        }
        if ($e !== null) {
            throw $e;
        }
        if (!is_array($replies) || count($replies) !== count($commands)) {
            $this->close();
            throw $this->failure(null, $warnings, $fresh);
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

    /**
     * The TransportException for a failed round trip: TLS's named reason when the connection
     * opened for it failed in its handshake (or in plaintext at a TLS-only port), else what
     * phpredis said.
     */
    private function failure(?\RedisException $e, string $warnings, bool $fresh): TransportException
    {
        $said = $e !== null ? $e->getMessage() : 'the pipeline returned no replies';
        $detail = trim(preg_replace('/\s+/', ' ', $warnings !== '' ? $warnings . '; ' . $said : $said) ?? $said);
        $tls = $this->config->tls;
        $c = $this->config;
        if ($fresh && $tls->enabled) {
            $named = preg_match('/SSL|TLS|crypto|certificate|handshake|cafile|local cert|private key/i', $warnings) === 1
                ? TlsProbe::explainRedis($warnings, $c->host, $c->port, $tls, $c->timeoutSeconds)
                : ($this->connectedNow ? TlsProbe::diagnoseRedis($c->host, $c->port, $tls, $c->timeoutSeconds) : null);
            if ($named !== null) {
                [$reason, $why] = $named;
                return new TransportException($this->where() . ": TLS $reason: $why ($detail)", 0, $e, $reason);
            }
        }
        if ($fresh && !$tls->enabled && $this->connectedNow && TlsProbe::speaksTls($c->host, $c->port, $c->timeoutSeconds)) {
            return new TransportException(
                $this->where() . ': TLS ' . TlsReason::PLAINTEXT_REFUSED . ': the server speaks TLS there and dropped'
                . " the plaintext connection: set redis.tls ($detail)",
                0,
                $e,
                TlsReason::PLAINTEXT_REFUSED,
            );
        }
        return new TransportException($this->where() . ': ' . $detail, 0, $e);
    }

    /** @throws \RedisException|TransportException */
    private function connection(): \Redis
    {
        if ($this->redis !== null) {
            return $this->redis;
        }
        $c = $this->config;
        $r = new \Redis();
        $timeout = $c->timeoutSeconds;
        if ($c->tls->enabled) {
            $unreadable = $c->tls->unreadableFile();
            if ($unreadable !== '') {
                throw new TransportException(
                    $this->where() . ': TLS ' . TlsReason::CONFIG . ": $unreadable",
                    0,
                    null,
                    TlsReason::CONFIG,
                );
            }
            $ok = $r->connect('tls://' . $c->host, $c->port, $timeout, null, 0, $timeout, [
                'stream' => $c->tls->streamOptions($c->host),
            ]);
        } else {
            $ok = $r->connect($c->host, $c->port, $timeout, null, 0, $timeout);
        }
        if (!$ok) {
            throw new \RedisException('cannot connect');
        }
        $this->connectedNow = true;
        $r->setOption(\Redis::OPT_READ_TIMEOUT, $timeout);
        if ($c->password !== null) {
            $auth = $c->username !== null ? [$c->username, $c->password] : $c->password;
            if (!$r->auth($auth)) {
                throw new \RedisException('AUTH refused');
            }
        }
        if ($c->database !== 0 && !$r->select($c->database)) {
            throw new \RedisException('SELECT ' . $c->database . ' refused');
        }
        $this->redis = $r;
        return $r;
    }
}
