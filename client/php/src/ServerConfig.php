<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Contract\ReplicaId;
use Lagwatch\Router\Exception\ConfigException;

/**
 * How to reach one MySQL/MariaDB server: its lagwatch id ("host:port", as lagwatch's Redis keys
 * name it) and how PDO connects to it (the DSN may be a unix socket, so the two can differ).
 */
final class ServerConfig
{
    /**
     * @param array<int, mixed> $options PDO driver options
     * @param ?int $timeoutSeconds the connect timeout (PDO::ATTR_TIMEOUT); null: PDO's default
     * @param ?int $readTimeoutSeconds mysqlnd's net_read_timeout for this connection, which bounds
     *        the handshake and every read (PDO::ATTR_TIMEOUT does neither: a hung server that
     *        accepts the connection blocks it for the ini's default of a day); null: the ini's
     */
    public function __construct(
        public readonly string $id,
        public readonly string $dsn,
        public readonly ?string $user,
        public readonly ?string $password,
        public readonly array $options,
        public readonly ?int $timeoutSeconds = null,
        public readonly ?int $readTimeoutSeconds = null,
    ) {
    }

    /**
     * From ['host' => ..., 'port' => ..., 'dsn' => ..., 'user' => ..., 'password' => ...,
     * 'options' => [...], 'timeout' => s, 'read_timeout' => s]. The id is $id when given (a
     * replica's key in `replicas`), else host:port; the DSN defaults to
     * mysql:host=<host>;port=<port>; the timeouts to $defaultTimeout and $defaultReadTimeout
     * (a replica's: replica_timeout and replica_read_timeout of the router's configuration).
     *
     * @throws ConfigException
     */
    public static function from(
        ConfigReader $c,
        ?string $id = null,
        ?int $defaultTimeout = null,
        ?int $defaultReadTimeout = null,
    ): self {
        $c->rejectUnknown(['host', 'port', 'dsn', 'user', 'password', 'options', 'timeout', 'read_timeout']);
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
        return new self(
            $id,
            $dsn,
            $c->optionalString('user'),
            $c->optionalString('password'),
            $c->array('options'),
            $c->has('timeout') ? $c->int('timeout', 0, 1, 3600) : $defaultTimeout,
            $c->has('read_timeout') ? $c->int('read_timeout', 0, 1, 86400) : $defaultReadTimeout,
        );
    }
}
