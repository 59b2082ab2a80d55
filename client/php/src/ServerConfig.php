<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Contract\ReplicaId;
use Lagwatch\Router\Exception\ConfigException;

/**
 * How to reach one MySQL/MariaDB server: its lagwatch id ("host:port", as lagwatch's Redis keys
 * name it) and how PDO connects to it (the DSN may be a unix socket, so the two can differ), over
 * TLS when its `tls` block (or the router's) is enabled.
 */
final class ServerConfig
{
    /**
     * @param array<int, mixed> $options PDO driver options
     * @param ?int $timeoutSeconds the connect timeout (PDO::ATTR_TIMEOUT); null: PDO's default
     * @param ?int $readTimeoutSeconds mysqlnd's net_read_timeout for this connection, which bounds
     *        the handshake and every read (PDO::ATTR_TIMEOUT does neither: a hung server that
     *        accepts the connection blocks it for the ini's default of a day); null: the ini's
     * @param TlsConfig $tls TLS to this server (its PDO attributes are added to $options)
     */
    public function __construct(
        public readonly string $id,
        public readonly string $dsn,
        public readonly ?string $user,
        public readonly ?string $password,
        public readonly array $options,
        public readonly ?int $timeoutSeconds = null,
        public readonly ?int $readTimeoutSeconds = null,
        public readonly TlsConfig $tls = new TlsConfig(),
    ) {
    }

    /**
     * From ['host' => ..., 'port' => ..., 'dsn' => ..., 'user' => ..., 'password' => ...,
     * 'options' => [...], 'timeout' => s, 'read_timeout' => s, 'tls' => [...]]. The id is $id
     * when given (a replica's key in `replicas`), else host:port; the DSN defaults to
     * mysql:host=<host>;port=<port>; the timeouts to $defaultTimeout and $defaultReadTimeout
     * (a replica's: replica_timeout and replica_read_timeout of the router's configuration);
     * `tls` overrides $defaultTls (the router's `tls`) key by key.
     *
     * @throws ConfigException
     */
    public static function from(
        ConfigReader $c,
        ?string $id = null,
        ?int $defaultTimeout = null,
        ?int $defaultReadTimeout = null,
        ?TlsConfig $defaultTls = null,
    ): self {
        $c->rejectUnknown(['host', 'port', 'dsn', 'user', 'password', 'options', 'timeout', 'read_timeout', 'tls']);
        if ($id === null) {
            $id = $c->string('host') . ':' . $c->int('port', 0, 1, 65535);
        } elseif ($c->has('host') || $c->has('port')) {
            if ($c->string('host') . ':' . $c->int('port', 0, 1, 65535) !== $id) {
                throw new ConfigException($c->key('host') . ': host:port differs from the replica id ' . $id);
            }
        }
        if (!ReplicaId::isValid($id)) {
            throw new ConfigException(rtrim($c->key(''), '.') . ": not a lagwatch id host:port: '" . $id . "'");
        }
        $colon = (int) strrpos($id, ':');
        $dsn = $c->has('dsn')
            ? $c->string('dsn')
            : 'mysql:host=' . substr($id, 0, $colon) . ';port=' . substr($id, $colon + 1);
        $tls = TlsConfig::from($c->section('tls'), false, $defaultTls);
        $options = $c->array('options');
        if ($tls->enabled) {
            if (self::dsnHostPort($dsn) === null) {
                throw new ConfigException(rtrim($c->key(''), '.') . ': TLS is enabled but the DSN names no TCP host'
                    . " ('$dsn'): mysqlnd does not do TLS over a unix socket (it fails to connect); set its"
                    . ' tls.enabled false or connect it by host and port');
            }
            foreach (TlsConfig::PDO_ATTRIBUTES as $attribute) {
                if (array_key_exists($attribute, $options)) {
                    throw new ConfigException($c->key('options') . ': sets a PDO::MYSQL_ATTR_SSL_* attribute while'
                        . ' its tls block is enabled: use one or the other');
                }
            }
        }
        return new self(
            $id,
            $dsn,
            $c->optionalString('user'),
            $c->optionalString('password'),
            $options,
            $c->has('timeout') ? $c->int('timeout', 0, 1, 3600) : $defaultTimeout,
            $c->has('read_timeout') ? $c->int('read_timeout', 0, 1, 86400) : $defaultReadTimeout,
            $tls,
        );
    }

    /**
     * The host and port a `mysql:` DSN connects to by TCP (port 3306 unless it says), null for a
     * unix socket or a DSN without a host. mysqlnd connects "localhost" by its socket.
     *
     * @return ?array{string, int}
     */
    public static function dsnHostPort(string $dsn): ?array
    {
        if (!str_starts_with($dsn, 'mysql:')) {
            return null;
        }
        $fields = [];
        foreach (explode(';', substr($dsn, 6)) as $part) {
            $eq = strpos($part, '=');
            if ($eq !== false) {
                $fields[strtolower(trim(substr($part, 0, $eq)))] = trim(substr($part, $eq + 1));
            }
        }
        $host = $fields['host'] ?? '';
        if (isset($fields['unix_socket']) || $host === '' || $host === 'localhost') {
            return null;
        }
        $port = $fields['port'] ?? '3306';
        return ctype_digit($port) ? [trim($host, '[]'), (int) $port] : null;
    }
}
