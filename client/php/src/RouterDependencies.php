<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Contract\RedisTransport;

/**
 * What a Router uses besides its configuration: the clock, the random source, how connections
 * are opened and how Redis is spoken to. The defaults are the real ones (the system clock, PHP's
 * secure random engine, PDO with the configuration's timeouts and TLS, phpredis); tests and
 * benchmarks replace them here, never in the configuration array:
 *
 *   new Router($config, new RouterDependencies(clock: $clock, random: new SeededRandom(42)));
 *
 * Immutable; one may be shared by several routers (they then share its clock and random source).
 */
final class RouterDependencies
{
    /**
     * @param Clock $clock the wall clock, unix ms (bounded staleness, untokened writes)
     * @param RandomSource $random the weighted choice among replicas
     * @param ?\Closure(ServerConfig): \PDO $connect opens a server's connection; null: PDO with the
     *        server's timeouts and TLS (Connections::connect)
     * @param ?RedisTransport $redis how lagwatch's contract is read; null: phpredis to the
     *        configuration's `redis` (RedisCluster when it has `cluster`)
     */
    public function __construct(
        public readonly Clock $clock = new SystemClock(),
        public readonly RandomSource $random = new SeededRandom(),
        public readonly ?\Closure $connect = null,
        public readonly ?RedisTransport $redis = null,
    ) {
    }
}
