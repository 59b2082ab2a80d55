<?php

declare(strict_types=1);

namespace Lagwatch\Router;

/**
 * The router's PDO connections, one per server, opened on first use and reused. A replica whose
 * connect failed, or whose connection timed out or broke under a read, is not tried again for the
 * rest of the request: until forgetFailures() (Router::reset()) or, with replica_retry_ms above 0,
 * that long. So a dead or hung replica that is still healthy in Redis (for up to a probe
 * interval) costs one timeout per request, not one per read.
 * Not thread-safe.
 */
final class Connections
{
    /** @var array<string, \PDO> by server id */
    private array $open = [];
    /** @var array<string, int> replica id => when its connect failed, unix ms */
    private array $failedAtMs = [];

    /**
     * @param array<string, ServerConfig> $replicas
     * @param int $retryMs how long a failed replica is passed over; 0: until forgetFailures()
     * @param ?\Closure(ServerConfig): \PDO $connect opens a connection (tests); default connect()
     */
    public function __construct(
        private readonly ServerConfig $primary,
        private readonly array $replicas,
        private readonly int $retryMs,
        private readonly ?\Closure $connect = null,
    ) {
    }

    /**
     * The primary's connection, opened if needed.
     *
     * @throws \PDOException when it cannot be opened
     */
    public function primary(): \PDO
    {
        return $this->open[$this->primary->id] ??= $this->open($this->primary);
    }

    /** The primary's connection if it is open (no connect). */
    public function openPrimary(): ?\PDO
    {
        return $this->open[$this->primary->id] ?? null;
    }

    /**
     * A replica's connection, opened if needed.
     *
     * @throws \PDOException when it cannot be opened; the failure is remembered
     */
    public function replica(string $id, int $nowMs): \PDO
    {
        if (isset($this->open[$id])) {
            return $this->open[$id];
        }
        try {
            $pdo = $this->open($this->replicas[$id]);
        } catch (\PDOException $e) {
            $this->failedAtMs[$id] = $nowMs;
            throw $e;
        }
        unset($this->failedAtMs[$id]);
        return $this->open[$id] = $pdo;
    }

    /**
     * @return list<string> the replicas not to try now: their connect failed, or a read on them
     *   timed out, since forgetFailures() (and within replica_retry_ms when that is above 0)
     */
    public function failed(int $nowMs): array
    {
        $out = [];
        foreach ($this->failedAtMs as $id => $at) {
            if ($this->retryMs === 0 || $nowMs - $at < $this->retryMs) {
                $out[] = (string) $id;
            }
        }
        return $out;
    }

    /** Passes replica $id over from now on (a read on it timed out or its connection broke). */
    public function markFailed(string $id, int $nowMs): void
    {
        $this->failedAtMs[$id] = $nowMs;
    }

    /** Tries every replica again (a new request in a long-lived process). */
    public function forgetFailures(): void
    {
        $this->failedAtMs = [];
    }

    /** The id of the server $pdo is connected to ('' if it is not one of ours). */
    public function idOf(\PDO $pdo): string
    {
        foreach ($this->open as $id => $p) {
            if ($p === $pdo) {
                return (string) $id;
            }
        }
        return '';
    }

    public function isPrimary(\PDO $pdo): bool
    {
        return $this->idOf($pdo) === $this->primary->id && $this->primary->id !== '';
    }

    /** Forgets a connection that broke; the next use reconnects. */
    public function discard(\PDO $pdo): void
    {
        $id = $this->idOf($pdo);
        if ($id !== '') {
            unset($this->open[$id]);
        }
    }

    /** Drops every open connection (each closes once nothing else holds it). */
    public function closeAll(): void
    {
        $this->open = [];
    }

    /**
     * Opens a connection: the injected connector's, else connect().
     *
     * @throws \PDOException
     */
    private function open(ServerConfig $server): \PDO
    {
        return $this->connect !== null ? ($this->connect)($server) : self::connect($server);
    }

    /**
     * Opens a connection with the server's timeouts: the connect timeout as PDO::ATTR_TIMEOUT
     * (unless its options set one), the read timeout as mysqlnd.net_read_timeout, which mysqlnd
     * copies into the connection when it opens it (so it is set around the connect only; whole
     * seconds). mysqlnd's warnings for a failed connect are silenced: the PDOException says it.
     *
     * @throws \PDOException
     */
    private static function connect(ServerConfig $server): \PDO
    {
        $options = $server->options + [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION];
        if ($server->timeoutSeconds !== null) {
            $options += [\PDO::ATTR_TIMEOUT => $server->timeoutSeconds];
        }
        if ($server->readTimeoutSeconds === null) {
            return @new \PDO($server->dsn, $server->user, $server->password, $options);
        }
        $previous = ini_set('mysqlnd.net_read_timeout', (string) $server->readTimeoutSeconds);
        try {
            return @new \PDO($server->dsn, $server->user, $server->password, $options);
        } finally {
            if ($previous !== false) {
                ini_set('mysqlnd.net_read_timeout', $previous);
            }
        }
    }
}
