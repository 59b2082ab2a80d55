<?php

declare(strict_types=1);

namespace Lagwatch\Router\Laravel;

use Lagwatch\Router\Exception\ConfigException;

/**
 * The Router's configuration from a Laravel `mysql` connection config with a `lagwatch` block
 * (client/php/README.md, "Laravel"). The connection's own keys say how to reach the primary; the
 * block names lagwatch's ids, the replicas and the routing options:
 *
 *   'lagwatch' => [
 *       'app' => 'shop',                          // rw_stats:<app>
 *       'redis' => ['host' => ..., 'port' => ...], // lagwatch's Redis (the Router's `redis`; or
 *                                                 // 'cluster' => [seeds] for a Redis Cluster)
 *       'primary' => '10.0.0.1:3306',             // its lagwatch id; default the connection's host:port
 *       'replicas' => [                           // lagwatch id => how to connect (Laravel's keys)
 *           '10.0.0.2:3306' => [],                // host and port from the id, the connection's credentials
 *           '10.0.0.3:3306' => ['unix_socket' => ..., 'username' => ..., 'password' => ...,
 *                               'timeout' => 1, 'read_timeout' => 2, 'tls' => [...]],
 *       ],
 *       'tls' => ['enabled' => true, 'ca_file' => ...],  // TLS to every server (the Router's `tls`);
 *                                                 // a replica's own `tls` overrides it key by key
 *       'replica_timeout' => 1,                   // s, replicas' connect timeout (PDO::ATTR_TIMEOUT)
 *       'replica_read_timeout' => 2,              // s, replicas' read timeout (mysqlnd, whole seconds)
 *       'token_store' => 'session',               // see LagwatchMySqlConnection
 *       // any other Router option: force_primary, bounded_staleness, clock_skew_ms, cache_ms,
 *       // read_your_writes, position_kind, replica_retry_ms (default the Router's, 0), logger
 *   ]
 *
 * The router's test hooks (clock, random, connect) are not options: Lagwatch::install()'s
 * RouterDependencies.
 *
 * Every server's PDO is made as Laravel's MySqlConnector makes it: the DSN (unix_socket or host and
 * port, dbname), Laravel's default PDO attributes and the connection's `options`, and the session
 * settings Laravel runs after connecting (charset and collation, timezone, sql_mode from `modes` /
 * `strict`) as one PDO::MYSQL_ATTR_INIT_COMMAND, unless `options` sets its own. TLS: Laravel's own
 * way (PDO::MYSQL_ATTR_SSL_* in the connection's `options`, which replicas inherit unless they set
 * `options`) is passed on as it is; the block's `tls` adds the router's checks (the session
 * encrypted, min_version, named failures) and may not be combined with SSL attributes in `options`.
 */
final class ConnectionConfig
{
    /** Keys of the block that are the integration's; the rest go to the Router as they are. */
    private const OWN_KEYS = ['primary', 'replicas', 'replica_read_timeout', 'token_store', 'token_life', 'token_key'];
    /** Keys a replica's entry may set. */
    private const REPLICA_KEYS = ['host', 'port', 'unix_socket', 'database', 'username', 'password', 'options',
        'timeout', 'read_timeout', 'tls'];
    private const DEFAULT_REPLICA_TIMEOUT_S = 1;
    private const DEFAULT_REPLICA_READ_TIMEOUT_S = 2;
    /** Laravel's Connector default PDO attributes. */
    private const LARAVEL_OPTIONS = [
        \PDO::ATTR_CASE => \PDO::CASE_NATURAL,
        \PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION,
        \PDO::ATTR_ORACLE_NULLS => \PDO::NULL_NATURAL,
        \PDO::ATTR_STRINGIFY_FETCHES => false,
        \PDO::ATTR_EMULATE_PREPARES => false,
    ];
    /** MySqlConnector::strictMode for MySQL ≥ 8.0.11 and MariaDB (whose versions compare above). */
    private const STRICT_MODES = 'ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,'
        . 'ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';
    private const STRICT_MODES_57 = 'ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,'
        . 'ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION';

    /**
     * @param array<string, mixed> $config the connection's config as Laravel's ConnectionFactory
     *        passes it (its write config: `read` and `write` merged away)
     * @return array<string, mixed> the Router's configuration
     * @throws ConfigException naming the key
     */
    public static function from(array $config): array
    {
        $block = $config['lagwatch'] ?? null;
        if (!is_array($block)) {
            throw new ConfigException('lagwatch: the connection has no lagwatch block (an array)');
        }
        $router = array_diff_key($block, array_flip(self::OWN_KEYS));
        $router['replica_timeout'] ??= self::DEFAULT_REPLICA_TIMEOUT_S;
        $readTimeout = $block['replica_read_timeout'] ?? self::DEFAULT_REPLICA_READ_TIMEOUT_S;
        if (!is_int($readTimeout) || $readTimeout < 1) {
            throw new ConfigException('lagwatch.replica_read_timeout: whole seconds, at least 1 (mysqlnd\'s'
                . ' net_read_timeout has no finer unit)');
        }

        $host = $config['host'] ?? null;
        if (is_array($host)) {
            if (count($host) !== 1) {
                throw new ConfigException('host: lagwatch routes to one primary; list the replicas in lagwatch.replicas');
            }
            $host = reset($host);
        }
        $primaryId = $block['primary'] ?? (is_string($host) ? $host . ':' . ($config['port'] ?? 3306) : null);
        if (!is_string($primaryId) || !preg_match('/^(.+):(\d{1,5})$/', $primaryId, $m)) {
            throw new ConfigException('lagwatch.primary: the primary\'s lagwatch id host:port (or set host and port)');
        }
        $router['primary'] = ['host' => $m[1], 'port' => (int) $m[2]] + self::server(['host' => $host] + $config);

        $replicas = $block['replicas'] ?? [];
        if (!is_array($replicas)) {
            throw new ConfigException('lagwatch.replicas: an array of lagwatch id => connection settings');
        }
        $router['replicas'] = [];
        foreach ($replicas as $id => $own) {
            if (is_int($id) && is_string($own)) {
                [$id, $own] = [$own, []];
            }
            $id = (string) $id;
            if (!is_array($own) || !preg_match('/^(.+):(\d{1,5})$/', $id, $m)) {
                throw new ConfigException("lagwatch.replicas.$id: a lagwatch id host:port => an array of settings");
            }
            $unknown = array_diff(array_keys($own), self::REPLICA_KEYS);
            if ($unknown !== []) {
                throw new ConfigException("lagwatch.replicas.$id." . reset($unknown) . ': unknown key (one of '
                    . implode(', ', self::REPLICA_KEYS) . ')');
            }
            // A replica is reached by its own address: the connection's host, port and socket are the primary's.
            $base = array_diff_key($config, ['host' => 1, 'port' => 1, 'unix_socket' => 1]);
            $server = self::server(['host' => $m[1], 'port' => (int) $m[2]] + $own + $base);
            $server['timeout'] = $own['timeout'] ?? $router['replica_timeout'];
            $server['read_timeout'] = $own['read_timeout'] ?? $readTimeout;
            if (isset($own['tls'])) {
                $server['tls'] = $own['tls'];
            }
            $router['replicas'][$id] = $server;
        }
        return $router;
    }

    /**
     * One server's Router entry (dsn, user, password, options) from Laravel's keys.
     *
     * @param array<string, mixed> $c
     * @return array<string, mixed>
     */
    private static function server(array $c): array
    {
        $database = (string) ($c['database'] ?? '');
        $dsn = isset($c['unix_socket']) && $c['unix_socket'] !== ''
            ? "mysql:unix_socket={$c['unix_socket']};dbname=$database"
            : "mysql:host={$c['host']};" . (isset($c['port']) ? "port={$c['port']};" : '') . "dbname=$database";
        $options = (is_array($c['options'] ?? null) ? $c['options'] : []) + self::LARAVEL_OPTIONS;
        $init = self::initCommand($c);
        if ($init !== null && !isset($options[\PDO::MYSQL_ATTR_INIT_COMMAND])) {
            $options[\PDO::MYSQL_ATTR_INIT_COMMAND] = $init;
        }
        return [
            'dsn' => $dsn,
            'user' => isset($c['username']) ? (string) $c['username'] : null,
            'password' => isset($c['password']) ? (string) $c['password'] : null,
            'options' => $options,
        ];
    }

    /**
     * What MySqlConnector runs after connecting (names, time_zone, sql_mode), as one SET; null when
     * nothing is configured. isolation_level is not here (LagwatchMySqlConnection sets it on the
     * primary: replicas serve single autocommit reads).
     *
     * @param array<string, mixed> $c
     */
    public static function initCommand(array $c): ?string
    {
        $parts = [];
        if (isset($c['charset'])) {
            $parts[] = "NAMES '{$c['charset']}'" . (isset($c['collation']) ? " COLLATE '{$c['collation']}'" : '');
        }
        if (isset($c['timezone'])) {
            $parts[] = "time_zone = '{$c['timezone']}'";
        }
        if (isset($c['modes']) && is_array($c['modes'])) {
            $parts[] = "SESSION sql_mode = '" . implode(',', $c['modes']) . "'";
        } elseif (isset($c['strict'])) {
            $strict = isset($c['version']) && version_compare((string) $c['version'], '8.0.11') < 0
                ? self::STRICT_MODES_57
                : self::STRICT_MODES;
            $parts[] = "SESSION sql_mode = '" . ($c['strict'] ? $strict : 'NO_ENGINE_SUBSTITUTION') . "'";
        }
        return $parts === [] ? null : 'SET ' . implode(', ', $parts);
    }
}
