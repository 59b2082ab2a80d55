<?php

declare(strict_types=1);

namespace Lagwatch\Router;

/**
 * The router's PDO connections, one per server, opened on first use and reused. A replica whose
 * connect failed is not tried again for a while (replica_retry_ms), so a dead replica that is
 * still healthy in Redis (for up to a probe interval) costs one connect timeout, not one per read.
 * Not thread-safe.
 */
final class Connections
{
    /** @var array<string, \PDO> by server id */
    private array $open = [];
    /** @var array<string, int> replica id => when its connect failed, unix ms */
    private array $failedAtMs = [];

    /** @param array<string, ServerConfig> $replicas */
    public function __construct(
        private readonly ServerConfig $primary,
        private readonly array $replicas,
        private readonly int $retryMs,
    ) {
    }

    /**
     * The primary's connection, opened if needed.
     *
     * @throws \PDOException when it cannot be opened
     */
    public function primary(): \PDO
    {
        return $this->open[$this->primary->id] ??= self::connect($this->primary);
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
            $pdo = self::connect($this->replicas[$id]);
        } catch (\PDOException $e) {
            $this->failedAtMs[$id] = $nowMs;
            throw $e;
        }
        unset($this->failedAtMs[$id]);
        return $this->open[$id] = $pdo;
    }

    /** @return list<string> the replicas not to try now: their connect failed within replica_retry_ms */
    public function failed(int $nowMs): array
    {
        $out = [];
        foreach ($this->failedAtMs as $id => $at) {
            if ($nowMs - $at < $this->retryMs) {
                $out[] = (string) $id;
            }
        }
        return $out;
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

    /**
     * Opens a connection with the server's timeouts: the connect timeout as PDO::ATTR_TIMEOUT
     * (unless its options set one), the read timeout as mysqlnd.net_read_timeout, which mysqlnd
     * copies into the connection when it opens it (so it is set around the connect only).
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
            return new \PDO($server->dsn, $server->user, $server->password, $options);
        }
        $previous = ini_set('mysqlnd.net_read_timeout', (string) $server->readTimeoutSeconds);
        try {
            return new \PDO($server->dsn, $server->user, $server->password, $options);
        } finally {
            if ($previous !== false) {
                ini_set('mysqlnd.net_read_timeout', $previous);
            }
        }
    }
}
