<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Contract\ContractReader;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Routing\Feedback;
use Psr\Log\LoggerInterface;

/**
 * The Router's configuration, validated (see Router::__construct for the array it comes from).
 * Immutable.
 */
final class RouterConfig
{
    public const KEYS = [
        'app', 'primary', 'replicas', 'redis', 'force_primary', 'bounded_staleness', 'clock_skew_ms',
        'cache_ms', 'read_your_writes', 'position_kind', 'replica_retry_ms', 'replica_timeout',
        'replica_read_timeout', 'logger', 'clock', 'random', 'connect', 'tls',
    ];

    /**
     * @param array<string, ServerConfig> $replicas by lagwatch id
     * @param list<string> $forcePrimary classes and tags whose statements always go to the primary
     * @param ?PositionKind $positionKind the token's kind; null: the one the replicas publish
     */
    public function __construct(
        public readonly string $app,
        public readonly ServerConfig $primary,
        public readonly array $replicas,
        public readonly RedisConfig $redis,
        public readonly array $forcePrimary,
        public readonly bool $boundedStaleness,
        public readonly int $clockSkewMs,
        public readonly int $cacheMs,
        public readonly bool $readYourWrites,
        public readonly ?PositionKind $positionKind,
        public readonly int $replicaRetryMs,
        public readonly ?LoggerInterface $logger,
        public readonly Clock $clock,
        public readonly RandomSource $random,
        public readonly ?\Closure $connect = null,
    ) {
    }

    /**
     * @param array<string, mixed> $config
     * @throws ConfigException naming the key
     */
    public static function from(array $config): self
    {
        $c = new ConfigReader($config);
        $c->rejectUnknown(self::KEYS);
        $app = $c->string('app');
        if (!Feedback::isValidApp($app)) {
            throw new ConfigException('app: not 1..64 of [A-Za-z0-9_.:-] (it names rw_stats:<app>)');
        }
        $tls = TlsConfig::from($c->section('tls'), false);
        $primary = ServerConfig::from($c->section('primary'), null, null, null, $tls);
        $replicas = [];
        $section = $c->section('replicas');
        $replicaTimeout = $c->int('replica_timeout', 2, 1, 3600);
        $replicaReadTimeout = $c->int('replica_read_timeout', 2, 0, 86400);
        foreach (array_keys($c->array('replicas')) as $id) {
            $id = (string) $id;
            $replicas[$id] = ServerConfig::from(
                $section->section($id),
                $id,
                $replicaTimeout,
                $replicaReadTimeout === 0 ? null : $replicaReadTimeout,
                $tls,
            );
        }
        $kindText = $c->string('position_kind', 'auto');
        $kind = $kindText === 'auto' ? null : PositionKind::tryFrom($kindText);
        if ($kindText !== 'auto' && $kind === null) {
            throw new ConfigException('position_kind: not auto, mariadb_gtid, mysql_gtid, binlog or none');
        }
        return new self(
            $app,
            $primary,
            $replicas,
            RedisConfig::from($c->section('redis')),
            $c->strings('force_primary'),
            $c->bool('bounded_staleness', true),
            $c->int('clock_skew_ms', 0, 0, 3600000),
            $c->int('cache_ms', 0, 0, ContractReader::MAX_CACHE_MS),
            $c->bool('read_your_writes', true),
            $kind,
            $c->int('replica_retry_ms', 0, 0, 3600000),
            $c->object('logger', LoggerInterface::class),
            $c->object('clock', Clock::class) ?? new SystemClock(),
            $c->object('random', RandomSource::class) ?? new SeededRandom(),
            $c->object('connect', \Closure::class),
        );
    }
}
