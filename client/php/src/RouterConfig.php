<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Contract\ContractReader;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Routing\Feedback;
use Psr\Log\LoggerInterface;

/**
 * The Router's configuration, validated, from the array an application writes (from(), below;
 * client/php/README.md, "Configuration"). Immutable. What is not configuration — the clock, the
 * random source, the connector, the Redis transport, for tests — is RouterDependencies.
 */
final class RouterConfig
{
    public const KEYS = [
        'app', 'primary', 'replicas', 'redis', 'force_primary', 'bounded_staleness', 'clock_skew_ms',
        'cache_ms', 'read_your_writes', 'position_kind', 'replica_retry_ms', 'replica_timeout',
        'replica_read_timeout', 'logger', 'tls',
    ];
    /** A failed replica is skipped for the router's life (one request) unless replica_retry_ms says otherwise. */
    public const DEFAULT_REPLICA_RETRY_MS = 0;
    /** Test hooks that were configuration keys once: RouterDependencies takes them now. */
    private const DEPENDENCY_KEYS = ['clock', 'random', 'connect'];

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
    ) {
    }

    /**
     * @param array<string, mixed> $config
     *   app               string, required: the `<app>` of rw_stats:<app> (1..64 of [A-Za-z0-9_.:-])
     *   primary           ['host' => ..., 'port' => ..., 'dsn' => ..., 'user' => ..., 'password' => ...,
     *                     'options' => [PDO options], 'timeout' => s, 'read_timeout' => s]: host and
     *                     port are its lagwatch id; dsn defaults to mysql:host=<host>;port=<port>;
     *                     timeout is PDO::ATTR_TIMEOUT (connect), read_timeout bounds the handshake
     *                     and every read (mysqlnd.net_read_timeout for this connection; without it
     *                     a hung server blocks the connection for the ini's default of a day)
     *   replicas          ['<host>:<port>' => [the same but host and port], ...] keyed by lagwatch
     *                     id; the DSN may differ (a unix socket)
     *   redis             ['host' => '127.0.0.1', 'port' => 6379, 'timeout' => 0.05 (s, connect and
     *                     read), 'username', 'password', 'database' => 0, 'key_prefix' => 'slave_delay',
     *                     'ttl_ms' => 1000, 'retry_after_ms' => 200, 'tls' => [enabled, ca_file,
     *                     cert_file, key_file, verify_server_cert, min_version, server_name]]
     *   tls               [enabled, ca_file, cert_file, key_file, verify_server_cert, min_version,
     *                     required]: TLS to every server; primary.tls and replicas.<id>.tls override
     *                     it key by key (TlsConfig; client/php/README.md, "TLS")
     *   force_primary     list of classes and tags (context 'class' / 'tag') always sent to the primary
     *   bounded_staleness bool, default true
     *   clock_skew_ms     int, default 0: how far this host's clock may be from the agent's
     *   cache_ms          int 0..25, default 0: reuse the contract this long (see ContractReader)
     *   read_your_writes  bool, default true
     *   position_kind     'auto' (default: what the replicas publish), 'mariadb_gtid', 'mysql_gtid', 'binlog', 'none'
     *   replica_retry_ms  int, default 0: a replica whose connect failed or whose read timed out is
     *                     not tried again until reset() (0), or for this long (a router kept
     *                     across requests that does not call reset())
     *   replica_timeout   int seconds, default 2: the replicas' connect timeout unless they set one
     *   replica_read_timeout int seconds, default 2: the replicas' read timeout unless they set
     *                     read_timeout (0: mysqlnd.net_read_timeout of php.ini); whole seconds
     *   logger            Psr\Log\LoggerInterface, optional
     * @throws ConfigException naming the key (`clock`, `random` and `connect` are refused with a
     *   pointer to RouterDependencies)
     */
    public static function from(array $config): self
    {
        foreach (self::DEPENDENCY_KEYS as $key) {
            if (array_key_exists($key, $config)) {
                throw new ConfigException($key . ': not a configuration key; a test hook goes in the Router\'s'
                    . ' second argument: new Router($config, new RouterDependencies(' . $key . ': ...))');
            }
        }
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
            $c->int('replica_retry_ms', self::DEFAULT_REPLICA_RETRY_MS, 0, 3600000),
            $c->object('logger', LoggerInterface::class),
        );
    }

    /**
     * Whether a statement with $context (Router::connectionFor()'s) is forced to the primary: its
     * force_primary flag, or a tag or class listed in force_primary.
     *
     * @param array<string, mixed> $context
     */
    public function forcesPrimary(array $context): bool
    {
        if (($context['force_primary'] ?? false) === true) {
            return true;
        }
        foreach (['tag', 'class'] as $k) {
            $v = $context[$k] ?? null;
            if (is_string($v) && in_array($v, $this->forcePrimary, true)) {
                return true;
            }
        }
        return false;
    }
}
