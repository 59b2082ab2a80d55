<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Contract\Contract;
use Lagwatch\Router\Contract\ContractReader;
use Lagwatch\Router\Contract\PhpRedisTransport;
use Lagwatch\Router\Contract\RedisTransport;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Exception\PrimaryUnavailableException;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Routing\Decider;
use Lagwatch\Router\Routing\Decision;
use Lagwatch\Router\Routing\Feedback;
use Lagwatch\Router\Routing\ReadYourWrites;
use Lagwatch\Router\Routing\Reason;
use Lagwatch\Router\Routing\Statement;
use Lagwatch\Router\Routing\Target;
use Lagwatch\Router\Sql\Classifier;
use Lagwatch\Router\Sql\SqlClass;
use Lagwatch\Router\Sql\TransactionTracker;

/**
 * A read/write router for one application session over PDO, driven by lagwatch's Redis contract
 * (docs/routing.md): given the SQL about to run, the connection to run it on.
 *
 * - Writes, locking reads, statements in a transaction and forced ones go to the primary; when
 *   lagwatch says its circuit is down (or two servers are writable) they are not sent:
 *   PrimaryUnavailableException, at once.
 * - Reads go to a usable replica: by tier in the order of the limits, at random by weight within
 *   the tier, healthy and (bounded staleness) provably within its limit when it answers; else the
 *   primary, counted and logged once per episode.
 * - Read-your-writes: after a write the session's token is taken on the primary connection that
 *   wrote (after the commit), and later reads go only to replicas proven to have it.
 * - Redis down or lagwatch not running: every read goes to the primary; routing never throws.
 * - Bounded staleness, late answers: a replica read run by query() or run() whose answer comes
 *   back after the decision's deadline (measured_at_ms + max_delay_ms − delay_ms −
 *   clock_skew_ms) is discarded and run again on the primary.
 * - Replica timeouts: a replica whose connect fails, or whose connection times out or breaks under
 *   a read of query() or run(), is skipped for the rest of the request (this Router's life, or
 *   until reset()) and the read runs elsewhere; connect and read timeouts per replica.
 * - TLS (`tls`, `redis.tls`): verified unless said otherwise, never a fallback to plaintext; a
 *   failure is named (TlsReason) and handled as the failure it is: Redis unavailable, a replica
 *   that cannot be connected to, the primary's PDOException (TlsException).
 *
 * Not thread-safe: one Router per application session (per request, or per worker loop).
 */
final class Router
{
    /** Fingerprints longer than this are cut in routeInfo() and the log. */
    private const MAX_FINGERPRINT_BYTES = 1024;
    /** A problem with the contract (a malformed record) is logged at most this often. */
    private const PROBLEM_LOG_INTERVAL_MS = 10000;

    private readonly RouterConfig $config;
    private readonly ContractReader $reader;
    private readonly Decider $decider;
    private readonly Connections $connections;
    private readonly TransactionTracker $transactions;
    private Session $session;
    private bool $tokenOwed = false;
    private ?PositionKind $knownKind = null;
    private ?RouteInfo $last = null;
    private bool $degradedEpisode = false;
    private int $degradedReads = 0;
    private bool $redisEpisode = false;
    /** @var array<string, int> problem text => when it was last logged, unix ms */
    private array $problemLoggedAtMs = [];
    /** @var array<string, int> */
    private array $counters = [
        'decisions' => 0,
        'reads_replica' => 0,
        'reads_master' => 0,
        'degrade_attempts' => 0,
        'degrade_successes' => 0,
        'primary_only' => 0,
        'fail_fast' => 0,
        'asks' => 0,
        'asks_reached' => 0,
        'tokens_taken' => 0,
        'untokened_writes' => 0,
        'replica_connect_errors' => 0,
        'replica_read_errors' => 0,
        'late_answers' => 0,
        'redis_unavailable_reads' => 0,
    ];

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
     *   clock, random     Clock, RandomSource, for tests
     *   connect           Closure(ServerConfig): \PDO, for tests: opens the connections
     * @param ?RedisTransport $redis for tests; default phpredis
     * @throws ConfigException naming the key; nothing is connected yet
     */
    public function __construct(array $config, ?RedisTransport $redis = null)
    {
        $this->config = RouterConfig::from($config);
        $c = $this->config;
        $this->reader = new ContractReader(
            $redis ?? new PhpRedisTransport($c->redis),
            $c->redis->keyPrefix,
            $c->redis->ttlMs,
            array_keys($c->replicas),
            $c->primary->id,
            $c->cacheMs,
            $c->redis->retryAfterMs,
        );
        $this->decider = new Decider($c->boundedStaleness, $c->clockSkewMs, $c->redis->ttlMs);
        $this->connections = new Connections($c->primary, $c->replicas, $c->replicaRetryMs, $c->connect);
        $this->transactions = new TransactionTracker();
        $this->session = new Session();
        $this->warnUnverifiedTls();
    }

    /**
     * Sends what is queued. Never throws: a destructor can run anywhere (PHP's cycle collector
     * runs it in the middle of other code, even while the class of the exception it would throw
     * is being loaded, which turns that exception into an Error).
     */
    public function __destruct()
    {
        try {
            $this->flush();
        } catch (\Throwable) {
            // The counters are lost with the router; routing never fails for them.
        }
    }

    /**
     * The connection to run $sql on, opened if needed.
     *
     * @param array{force_primary?: bool, tag?: string, class?: string, in_transaction?: bool} $context
     *   force_primary: send it to the primary; tag, class: matched against force_primary of the
     *   config; in_transaction: the application's own transaction (the router also follows
     *   BEGIN/COMMIT/ROLLBACK/autocommit it sees, and the primary connection's inTransaction()).
     * @throws PrimaryUnavailableException when lagwatch says the primary cannot take the statement
     *   (see the class) — nothing was sent
     * @throws \PDOException when the primary's connection cannot be opened (a replica's that
     *   cannot is passed over for another server)
     */
    public function connectionFor(string $sql, array $context = []): \PDO
    {
        [$pdo, , $decision] = $this->route($sql, $context);
        $this->count($decision, true);
        return $pdo;
    }

    /**
     * Runs $sql where it belongs ($params: prepared and executed; none: PDO::query) and, after a
     * write outside a transaction, takes the session's token at once on the same connection.
     * A replica read whose answer comes back late, or whose replica times out, runs again (see
     * run()).
     *
     * @param array<int|string, mixed> $params
     * @param array{force_primary?: bool, tag?: string, class?: string, in_transaction?: bool} $context
     * @throws PrimaryUnavailableException see connectionFor()
     * @throws \PDOException from the statement itself; a connection that broke is forgotten
     */
    public function query(string $sql, array $params = [], array $context = []): \PDOStatement
    {
        return $this->run($sql, static function (\PDO $pdo) use ($sql, $params): \PDOStatement {
            if ($params === []) {
                return $pdo->query($sql);
            }
            $stmt = $pdo->prepare($sql);
            $stmt->execute($params);
            return $stmt;
        }, $context);
    }

    /**
     * Runs $sql with $run on the connection it belongs on, for integrations that execute
     * statements themselves (a framework's connection wrapper): $run(\PDO $pdo) executes $sql
     * there and returns its result, which run() returns. With query()'s rules:
     * - a read on a replica with a limit whose answer comes back after the decision's deadline
     *   (bounded staleness: measured_at_ms + max_delay_ms − delay_ms − clock_skew_ms, on this
     *   clock, when $run returns) is discarded and $run runs again on the primary (routeInfo()
     *   reason late_answer; PrimaryUnavailableException when the primary's circuit is down),
     *   counted in late_answers;
     * - a read on a replica whose connection times out or breaks (MySQL client errors 2006, 2013
     *   anywhere in the exception's chain) runs again elsewhere, and that replica is skipped for
     *   the rest of the request (until reset()), counted in replica_read_errors;
     * - after a write outside a transaction the session's token is taken at once.
     * $run may run more than once, but only for a read that a replica did not answer in time.
     *
     * @template T
     * @param callable(\PDO): T $run
     * @param array{force_primary?: bool, tag?: string, class?: string, in_transaction?: bool} $context
     * @return T
     * @throws PrimaryUnavailableException see connectionFor()
     * @throws \Throwable what $run throws, but for a replica's lost connection (above)
     */
    public function run(string $sql, callable $run, array $context = []): mixed
    {
        $late = false;
        for (;;) {
            [$pdo, $class, $decision] = $this->route($sql, $context, $late);
            try {
                $result = $run($pdo);
            } catch (\Throwable $e) {
                $lost = self::connectionLost($e);
                if ($lost) {
                    $this->discard($pdo);
                }
                $this->count($decision, false);
                if ($class->writes()) {
                    $this->settleToken($context);
                }
                if ($lost && $decision->target === Target::Replica && $decision->replica !== null) {
                    $this->replicaFailed($decision->replica->id, $e);
                    continue;
                }
                throw $e;
            }
            $deadline = $this->deadlineMs($decision);
            if ($deadline !== null && ($now = $this->config->clock->nowMs()) > $deadline) {
                $this->count($decision, false);
                ++$this->counters['late_answers'];
                $this->log('debug', 'route: the answer of {replica} came {late_ms} ms after its deadline: discarded,'
                    . ' the read again on the primary', [
                    'replica' => $decision->replica?->id,
                    'late_ms' => $now - $deadline,
                ]);
                $late = true;
                continue;
            }
            $this->count($decision, true);
            if ($class->writes()) {
                $this->settleToken($context);
            }
            return $result;
        }
    }

    /**
     * query() for statements whose result is a count: the number of rows affected.
     *
     * @param array<int|string, mixed> $params
     * @param array{force_primary?: bool, tag?: string, class?: string, in_transaction?: bool} $context
     */
    public function execute(string $sql, array $params = [], array $context = []): int
    {
        return $this->query($sql, $params, $context)->rowCount();
    }

    /** PDO::beginTransaction on the primary: every statement goes there until commit() or rollBack(). */
    public function beginTransaction(): void
    {
        $this->connectionFor('BEGIN')->beginTransaction();
    }

    /** PDO::commit on the primary, then the session's token if the transaction wrote. */
    public function commit(): void
    {
        $pdo = $this->connectionFor('COMMIT');
        $pdo->commit();
        $this->settleToken([]);
    }

    public function rollBack(): void
    {
        $this->connectionFor('ROLLBACK')->rollBack();
    }

    /**
     * Tells the router the session wrote through a connection it did not route the write for
     * (it takes the token on the primary now, or after the open transaction ends). Writes routed
     * by connectionFor() or query() need no call: their token is taken before the next statement.
     */
    public function afterWrite(): void
    {
        if ($this->config->readYourWrites) {
            $this->tokenOwed = true;
        }
        $this->settleToken([]);
    }

    /**
     * A new request for a router kept across requests (a worker loop): the replicas skipped for
     * a failed connect or a timeout are tried again. The session and connections are kept.
     */
    public function reset(): void
    {
        $this->connections->forgetFailures();
    }

    /**
     * The end of the router's use (a request that built it is over): sends the counters and drops
     * its connections, which close once the caller holds none of them. The router stays usable:
     * the next statement opens what it needs.
     */
    public function close(): void
    {
        $this->flush();
        $this->transactions->reset();
        $this->connections->closeAll();
    }

    /**
     * Tells the router $pdo broke (the application saw "server has gone away" on it): the next
     * statement for that server opens a new connection.
     */
    public function discard(\PDO $pdo): void
    {
        if ($this->connections->isPrimary($pdo)) {
            $this->transactions->reset();
        }
        $this->connections->discard($pdo);
    }

    /**
     * The session's read-your-writes state, with the token of the last write taken: keep
     * $router->session()->toString() in the application's session and hand it back with
     * useSession(Session::fromString(...)) on the next request.
     */
    public function session(): Session
    {
        $this->settleToken([]);
        return $this->session;
    }

    public function useSession(Session $session): void
    {
        $this->session = $session;
    }

    /** The last decision (null before the first). */
    public function routeInfo(): ?RouteInfo
    {
        return $this->last;
    }

    /**
     * Counters since the router was made: the rw_stats fields it counted (reads_replica,
     * reads_replica:<id>, reads_master, degrade_attempts, degrade_successes) whether Redis took
     * them or not, and its own (decisions, primary_only (statements that needed the primary:
     * writes, locking reads, transactions, forced), fail_fast, asks, asks_reached, tokens_taken,
     * untokened_writes, replica_connect_errors, replica_read_errors (a replica read that timed out
     * or lost its connection), late_answers (a replica's answer after its deadline, discarded),
     * redis_unavailable_reads) and the contract
     * reader's (refreshes, redis_errors, malformed, missing, served_from_cache, feedback_sent,
     * feedback_lost).
     *
     * @return array<string, int>
     */
    public function stats(): array
    {
        return $this->counters + $this->reader->counters();
    }

    /** Sends the rw_stats counters still queued (they otherwise ride along with the next Redis read). */
    public function flush(): void
    {
        $this->reader->flush($this->config->clock->nowMs());
    }

    /**
     * Decides, connects and explains; the rw_stats count is the caller's (count()), once it
     * knows whether the statement was served.
     *
     * @param array<string, mixed> $context
     * @param bool $late the read again after a replica's late answer: the primary (or fail fast)
     * @return array{\PDO, SqlClass, Decision}
     */
    private function route(string $sql, array $context, bool $late = false): array
    {
        $class = Classifier::classify($sql);
        $this->settleToken($context);
        $now = $this->config->clock->nowMs();
        $contract = $this->reader->snapshot($now);
        $this->noteContract($contract, $now);
        $statement = new Statement(
            $class->read,
            $class->locking,
            $this->inTransaction($context),
            $late || $this->forced($context),
        );
        $excluded = $this->connections->failed($now);
        // A pass that does not return has excluded one more replica (its connection failed), so
        // the decider runs out of replicas to choose and this ends.
        for (;;) {
            $d = $this->decider->decide($statement, $this->session, $contract, $this->config->random, $now, $excluded);
            if ($late) {
                $d = $d->target === Target::FailFast
                    ? $d->with(Target::FailFast, $d->reason, null, true)
                    : $d->with(Target::Primary, Reason::LateAnswer);
            }
            if ($d->target === Target::AskReplica) {
                $d = $this->ask($d, $now, $excluded);
                if ($d === null) {
                    continue;
                }
            }
            if ($d->target === Target::FailFast) {
                $this->finish($d, $class);
                $this->count($d, false);
                ++$this->counters['fail_fast'];
                throw new PrimaryUnavailableException(
                    sprintf(
                        "lagwatch: the primary %s cannot take this statement (circuit %s): not sent",
                        $d->primary !== '' ? $d->primary : $this->config->primary->id,
                        $d->circuit->value,
                    ),
                    $d->circuit->value,
                    $d->reasonLabel(),
                    $d->primary,
                );
            }
            if ($d->target === Target::Replica) {
                $pdo = $this->replica($d->replica->id, $now, $excluded);
                if ($pdo === null) {
                    continue;
                }
            } else {
                try {
                    $pdo = $this->connections->primary();
                } catch (\PDOException $e) {
                    $this->finish($d, $class);
                    $this->count($d, false);
                    throw $e;
                }
            }
            $this->transactions->observe($class);
            if ($class->writes() && $this->config->readYourWrites) {
                $this->tokenOwed = true;
            }
            $this->finish($d, $class);
            if ($d->isRead()) {
                $this->session->settle($contract, $this->config->redis->ttlMs, $this->config->clockSkewMs);
            }
            return [$pdo, $class, $d];
        }
    }

    /**
     * Carries out an AskReplica decision: the replica read when it answers "reached", else its
     * fallback. Null when its connection failed (it is then excluded).
     *
     * @param list<string> $excluded
     */
    private function ask(Decision $d, int $now, array &$excluded): ?Decision
    {
        $pdo = $this->replica($d->replica->id, $now, $excluded);
        if ($pdo === null) {
            return null;
        }
        ++$this->counters['asks'];
        if (ReadYourWrites::ask($pdo, $this->session->token())) {
            ++$this->counters['asks_reached'];
            return $d->with(Target::Replica, Reason::CaughtUp);
        }
        return $d->fallback === Target::FailFast
            ? $d->with(Target::FailFast, Reason::PrimaryCircuitOpen, null, true)
            : $d->with(Target::Primary, Reason::ReadYourWrites);
    }

    /** @param list<string> $excluded */
    private function replica(string $id, int $now, array &$excluded): ?\PDO
    {
        try {
            return $this->connections->replica($id, $now);
        } catch (\PDOException $e) {
            $excluded[] = $id;
            ++$this->counters['replica_connect_errors'];
            $message = $this->config->replicaRetryMs === 0
                ? 'route: cannot connect to replica {replica} ({error}); skipped for the rest of the request'
                : 'route: cannot connect to replica {replica} ({error}); passed over for {retry_ms} ms';
            $this->log('warning', $message, [
                'replica' => $id,
                'error' => $e->getMessage(),
                'retry_ms' => $this->config->replicaRetryMs,
            ]);
            return null;
        }
    }

    /**
     * When a replica read of $d must have its answer by (bounded staleness), unix ms on this
     * clock; null when it has no deadline (the primary, no limit, bounded_staleness off).
     */
    private function deadlineMs(Decision $d): ?int
    {
        $r = $d->replica;
        if ($d->target !== Target::Replica || $r === null || !$this->config->boundedStaleness || $r->maxDelayMs === null) {
            return null;
        }
        return $r->measuredAtMs + $r->maxDelayMs - $r->delayMs - $this->config->clockSkewMs;
    }

    /** A read on replica $id timed out or lost its connection: skipped for the rest of the request. */
    private function replicaFailed(string $id, \Throwable $e): void
    {
        $this->connections->markFailed($id, $this->config->clock->nowMs());
        ++$this->counters['replica_read_errors'];
        $this->log('warning', 'route: a read on replica {replica} failed ({error}); skipped for the rest of'
            . ' the request, the read again elsewhere', [
            'replica' => $id,
            'error' => $e->getMessage(),
        ]);
    }

    /** @param array<string, mixed> $context */
    private function inTransaction(array $context): bool
    {
        return $this->transactions->inTransaction()
            || ($context['in_transaction'] ?? false) === true
            || ($this->connections->openPrimary()?->inTransaction() ?? false);
    }

    /** @param array<string, mixed> $context */
    private function forced(array $context): bool
    {
        if (($context['force_primary'] ?? false) === true) {
            return true;
        }
        foreach (['tag', 'class'] as $k) {
            $v = $context[$k] ?? null;
            if (is_string($v) && in_array($v, $this->config->forcePrimary, true)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Takes the token owed for the writes routed so far, once no transaction is open: on the
     * primary connection that wrote, of the kind the replicas publish. Without one (no kind known,
     * no privilege, an empty @@last_gtid) the session keeps the write's time instead.
     *
     * @param array<string, mixed> $context
     */
    private function settleToken(array $context): void
    {
        if (!$this->tokenOwed || $this->inTransaction($context)) {
            return;
        }
        $this->tokenOwed = false;
        $kind = $this->config->positionKind ?? $this->knownKind;
        $pdo = $this->connections->openPrimary();
        [$token, $why] = $pdo === null || $kind === null
            ? [null, $kind === null ? 'no position kind known yet (no replica record read)' : 'no primary connection']
            : ReadYourWrites::takeToken($pdo, $kind);
        $this->session->wrote($token, $this->config->clock->nowMs());
        if ($token !== null) {
            ++$this->counters['tokens_taken'];
            return;
        }
        ++$this->counters['untokened_writes'];
        $this->log(
            'debug',
            'route: no read-your-writes token after a write ({why}): the session reads from the primary'
            . ' until a replica proves by time that it has the write',
            ['why' => $why],
        );
    }

    /** One warning per connection whose certificate is not checked (verify_server_cert false). */
    private function warnUnverifiedTls(): void
    {
        $c = $this->config;
        $targets = [];
        if ($c->redis->tls->enabled && !$c->redis->tls->verifyServerCert) {
            $targets['redis.tls'] = 'Redis ' . $c->redis->host . ':' . $c->redis->port;
        }
        foreach (['primary' => $c->primary] + $c->replicas as $name => $server) {
            if ($server->tls->enabled && !$server->tls->verifyServerCert) {
                $targets[($name === 'primary' ? 'primary' : 'replicas.' . $name) . '.tls'] = 'MySQL ' . $server->id;
            }
        }
        foreach ($targets as $key => $target) {
            $this->log('warning', 'route: TLS to {target} does not verify its certificate ({key}.verify_server_cert'
                . ' is false): anyone on the path can pose as the server', ['target' => $target, 'key' => $key]);
        }
    }

    /** What a refresh says beyond the decision: Redis episodes, malformed records, the position kind. */
    private function noteContract(Contract $contract, int $now): void
    {
        if (!$contract->readable) {
            if (!$this->redisEpisode) {
                $this->redisEpisode = true;
                $this->log('warning', "route: cannot read lagwatch's contract from Redis ({error}): every read goes"
                    . ' to the primary until it can', [
                    'error' => $this->reader->lastError(),
                ]);
            }
            return;
        }
        if ($this->redisEpisode) {
            $this->redisEpisode = false;
            $this->log('info', "route: lagwatch's contract is readable from Redis again", []);
        }
        $this->knownKind = $contract->positionKind() ?? $this->knownKind;
        foreach ($this->reader->problems() as $problem) {
            $logged = $this->problemLoggedAtMs[$problem] ?? null;
            if ($logged === null || $now - $logged >= self::PROBLEM_LOG_INTERVAL_MS) {
                $this->problemLoggedAtMs[$problem] = $now;
                $this->log('warning', 'route: skipped malformed contract data: {problem}', ['problem' => $problem]);
            }
        }
    }

    /** Records the decision as carried out: routeInfo, the debug line, the degradation episode. */
    private function finish(Decision $d, SqlClass $class): void
    {
        ++$this->counters['decisions'];
        $onReplica = $d->target === Target::Replica && $d->replica !== null;
        $fingerprint = strlen($class->fingerprint) > self::MAX_FINGERPRINT_BYTES
            ? substr($class->fingerprint, 0, self::MAX_FINGERPRINT_BYTES) . '...'
            : $class->fingerprint;
        $this->last = new RouteInfo(
            $fingerprint,
            $d->target === Target::FailFast ? null : ($onReplica ? $d->replica->id : 'primary'),
            $d->target === Target::FailFast ? '' : ($onReplica ? $d->replica->id : $this->config->primary->id),
            $onReplica ? $d->replica->delayMs : null,
            $onReplica ? $d->replica->tier : null,
            $d->reasonLabel(),
            $d->degraded,
            $d->circuit->value,
            $d->reason === Reason::RedisUnavailable ? $this->reader->lastError() : '',
        );
        $this->log('debug', $this->last->logLine(), []);
        if (!$d->isRead()) {
            ++$this->counters['primary_only'];
            return;
        }
        if ($d->reason === Reason::RedisUnavailable) {
            ++$this->counters['redis_unavailable_reads'];
        }
        $this->noteDegradation($d);
    }

    /**
     * Counts a read in rw_stats (queued for the next round trip) and locally; $served: it was
     * answered where it was sent (connectionFor cannot know: a connection handed out counts).
     */
    private function count(Decision $d, bool $served): void
    {
        $fields = Feedback::fields($d, $served);
        foreach ($fields as $f) {
            $this->counters[$f] = ($this->counters[$f] ?? 0) + 1;
        }
        $this->reader->queue(Feedback::commands($this->config->app, $fields));
    }

    /** The no-usable-replica episode: a warning when it starts, an info line when it ends. */
    private function noteDegradation(Decision $d): void
    {
        if ($d->degraded) {
            ++$this->degradedReads;
            if (!$this->degradedEpisode) {
                $this->degradedEpisode = true;
                $this->log('warning', 'route: no usable replica ({reason}): reads go to the primary meanwhile', [
                    'reason' => $d->reasonLabel(),
                ]);
            }
            return;
        }
        if ($this->degradedEpisode) {
            $this->log('info', 'route: a replica is usable again after {reads} reads without one', [
                'reads' => $this->degradedReads,
            ]);
            $this->degradedEpisode = false;
            $this->degradedReads = 0;
        }
    }

    /**
     * Whether $e, or an exception it wraps (a framework's), says the connection itself is gone
     * (MySQL client errors 2006, 2013: a read timeout is one of them).
     */
    private static function connectionLost(\Throwable $e): bool
    {
        for ($x = $e; $x !== null; $x = $x->getPrevious()) {
            if (!$x instanceof \PDOException) {
                continue;
            }
            $code = $x->errorInfo[1] ?? null;
            if (
                $code === 2006 || $code === 2013
                || str_contains($x->getMessage(), 'server has gone away')
                || str_contains($x->getMessage(), 'Lost connection')
            ) {
                return true;
            }
        }
        return false;
    }

    /**
     * @param string $level a PSR-3 level ('debug', 'info', 'warning')
     * @param array<string, mixed> $context
     */
    private function log(string $level, string $message, array $context): void
    {
        $this->config->logger?->log($level, $message, $context);
    }
}
