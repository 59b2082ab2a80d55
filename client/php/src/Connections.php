<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Exception\TlsException;
use Lagwatch\Router\Tls\TlsProbe;
use Lagwatch\Router\Tls\TlsReason;

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
     * With the server's `tls` enabled: its PDO attributes (TlsConfig::pdoAttributes), a failed
     * connect named by TlsProbe when TLS was the cause (a TlsException), and the session checked
     * once connected — encrypted, at min_version or above — before anything else runs on it.
     *
     * @throws \PDOException a TlsException for TLS
     */
    private static function connect(ServerConfig $server): \PDO
    {
        $options = $server->options + $server->tls->pdoAttributes() + [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION];
        if ($server->timeoutSeconds !== null) {
            $options += [\PDO::ATTR_TIMEOUT => $server->timeoutSeconds];
        }
        $unreadable = $server->tls->enabled ? $server->tls->unreadableFile() : '';
        if ($unreadable !== '') {
            throw new TlsException('TLS ' . TlsReason::CONFIG . " with MySQL {$server->id}: $unreadable", TlsReason::CONFIG);
        }
        $started = microtime(true);
        try {
            $pdo = self::openPdo($server, $options);
        } catch (\PDOException $e) {
            throw $server->tls->enabled ? self::tlsFailure($server, $e, microtime(true) - $started) : $e;
        }
        if ($server->tls->enabled) {
            self::checkTls($server, $pdo);
        }
        return $pdo;
    }

    /**
     * @param array<int, mixed> $options
     * @throws \PDOException
     */
    private static function openPdo(ServerConfig $server, array $options): \PDO
    {
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

    /**
     * The exception for a connect with TLS that failed: a TlsException naming the reason when
     * TLS was the cause — mysqlnd says "Cannot connect to MySQL using SSL" for a failed handshake
     * and "MySQL server has gone away" (at once) for a server that offers no TLS, which it then
     * leaves before logging in — else $e as it is (refused, timed out, access denied, ...).
     */
    private static function tlsFailure(ServerConfig $server, \PDOException $e, float $elapsedS): \PDOException
    {
        $message = $e->getMessage();
        $ssl = str_contains($message, 'using SSL');
        // A read timeout says "gone away" too, but not this soon (net_read_timeout is 1 s or more).
        if (!$ssl && !(str_contains($message, '[2006]') && $elapsedS < 0.5)) {
            return $e;
        }
        $address = ServerConfig::dsnHostPort($server->dsn);
        $diagnosis = $address === null ? null : TlsProbe::diagnoseMysql(
            $address[0],
            $address[1],
            $server->tls,
            (float) min($server->timeoutSeconds ?? 2, 2),
        );
        if ($diagnosis === null) {
            return $ssl ? new TlsException("TLS handshake with MySQL {$server->id}: the TLS handshake failed"
                . " ($message)", TlsReason::HANDSHAKE, $e) : $e;
        }
        [$reason, $why] = $diagnosis;
        return new TlsException("TLS $reason with MySQL {$server->id}: $why (PDO: $message)", $reason, $e);
    }

    /**
     * Refuses a session that is not what the `tls` block asks for (one round trip per
     * connection): Ssl_cipher empty (not encrypted) or Ssl_version below min_version. mysqlnd
     * has no TLS version option for PDO, so min_version is checked here, after the login.
     *
     * @throws TlsException
     */
    private static function checkTls(ServerConfig $server, \PDO $pdo): void
    {
        try {
            $stmt = $pdo->query("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')");
            $status = $stmt === false ? false : $stmt->fetchAll(\PDO::FETCH_KEY_PAIR);
        } catch (\PDOException $e) {
            throw new TlsException("TLS with MySQL {$server->id}: cannot check the session's TLS: "
                . $e->getMessage(), TlsReason::HANDSHAKE, $e);
        }
        if (!is_array($status)) {
            throw new TlsException("TLS with MySQL {$server->id}: cannot check the session's TLS", TlsReason::HANDSHAKE);
        }
        $cipher = (string) ($status['Ssl_cipher'] ?? '');
        $version = (string) ($status['Ssl_version'] ?? '');
        if ($cipher === '') {
            throw new TlsException('TLS ' . TlsReason::NOT_TLS . " with MySQL {$server->id}: the session is not"
                . ' encrypted (Ssl_cipher is empty)', TlsReason::NOT_TLS);
        }
        if (
            preg_match('/^TLSv(\d+(?:\.\d+)?)$/', $version, $m) !== 1
            || version_compare($m[1], $server->tls->minVersion, '<')
        ) {
            throw new TlsException('TLS ' . TlsReason::HANDSHAKE . " with MySQL {$server->id}: the session is"
                . " '$version', below min_version {$server->tls->minVersion}", TlsReason::HANDSHAKE);
        }
    }
}
