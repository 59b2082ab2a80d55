<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Contract\ContractReader;
use Lagwatch\Router\Contract\PhpRedisClusterTransport;
use Lagwatch\Router\Contract\PhpRedisTransport;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Exception\PrimaryUnavailableException;
use Lagwatch\Router\Internal\Answers;
use Lagwatch\Router\Internal\Dispatcher;
use Lagwatch\Router\Internal\RouterLog;
use Lagwatch\Router\Internal\RouterStats;
use Lagwatch\Router\Internal\WriteTokens;
use Lagwatch\Router\Routing\Decider;
use Lagwatch\Router\Routing\Decision;
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
    private readonly RouterConfig $config;
    private readonly RouterDependencies $deps;
    private readonly ContractReader $reader;
    private readonly Connections $connections;
    private readonly Dispatcher $dispatcher;
    private readonly TransactionTracker $transactions;
    private readonly RouterLog $log;
    private readonly RouterStats $stats;
    private readonly WriteTokens $tokens;
    private Session $session;

    /**
     * @param array<string, mixed>|RouterConfig $config the configuration (RouterConfig::from()
     *   has the keys; client/php/README.md, "Configuration")
     * @param ?RouterDependencies $dependencies the clock, random source, connector and Redis
     *   transport, for tests; default the real ones
     * @throws ConfigException naming the key; nothing is connected yet
     */
    public function __construct(array|RouterConfig $config, ?RouterDependencies $dependencies = null)
    {
        $this->config = $c = $config instanceof RouterConfig ? $config : RouterConfig::from($config);
        $this->deps = $d = $dependencies ?? new RouterDependencies();
        $this->reader = new ContractReader(
            $d->redis ?? ($c->redis->cluster !== []
                ? new PhpRedisClusterTransport($c->redis)
                : new PhpRedisTransport($c->redis)),
            $c->redis->keyPrefix,
            $c->redis->ttlMs,
            array_keys($c->replicas),
            $c->primary->id,
            $c->cacheMs,
            $c->redis->retryAfterMs,
        );
        $this->connections = new Connections($c->primary, $c->replicas, $c->replicaRetryMs, $d->connect);
        $this->transactions = new TransactionTracker();
        $this->log = new RouterLog($c->logger);
        $this->stats = new RouterStats($this->reader, $c->app);
        $this->dispatcher = new Dispatcher(
            $c,
            $d->random,
            new Decider($c->boundedStaleness, $c->clockSkewMs, $c->redis->ttlMs),
            $this->connections,
            $this->reader,
            $this->stats,
            $this->log,
        );
        $this->tokens = new WriteTokens($c->positionKind, $d->clock, $this->stats, $this->log);
        $this->session = new Session();
        $this->log->unverifiedTls($c);
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
        $this->stats->read($decision, true);
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
            [$pdo, $class, $decision, $decidedAtMs] = $this->route($sql, $context, $late);
            try {
                $result = $run($pdo);
            } catch (\Throwable $e) {
                $lost = Answers::connectionLost($e);
                if ($lost) {
                    $this->discard($pdo);
                }
                $this->stats->read($decision, false);
                if ($class->writes()) {
                    $this->settleToken($context);
                }
                if ($lost && $decision->target === Target::Replica && $decision->replica !== null) {
                    // Skipped for the rest of the request (or replica_retry_ms), the read elsewhere.
                    $this->connections->markFailed($decision->replica->id, $this->deps->clock->nowMs());
                    $this->stats->add('replica_read_errors');
                    $this->log->replicaReadFailed($decision->replica->id, $e);
                    continue;
                }
                throw $e;
            }
            $deadline = Answers::deadlineMs(
                $decision,
                $this->config->boundedStaleness,
                $this->config->clockSkewMs,
                $decidedAtMs,
            );
            if ($deadline !== null && ($now = $this->deps->clock->nowMs()) > $deadline) {
                $this->stats->read($decision, false);
                $this->stats->add('late_answers');
                $this->log->lateAnswer($decision->replica?->id, $now - $deadline);
                $late = true;
                continue;
            }
            $this->stats->read($decision, true);
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
            $this->tokens->owe();
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
        return $this->dispatcher->last();
    }

    /**
     * Counters since the router was made: the rw_stats fields it counted, whether Redis took them
     * or not, its own and the contract reader's (RouterStats::all() lists them).
     *
     * @return array<string, int>
     */
    public function stats(): array
    {
        return $this->stats->all();
    }

    /** Sends the rw_stats counters still queued (they otherwise ride along with the next Redis read). */
    public function flush(): void
    {
        $this->reader->flush($this->deps->clock->nowMs());
    }

    /**
     * Decides, connects and explains; the rw_stats count is the caller's (stats->read()), once it
     * knows whether the statement was served.
     *
     * @param array<string, mixed> $context
     * @param bool $late the read again after a replica's late answer: the primary (or fail fast)
     * @return array{\PDO, SqlClass, Decision, int} the last: when it was decided (unix ms)
     */
    private function route(string $sql, array $context, bool $late = false): array
    {
        $class = Classifier::classify($sql);
        $this->settleToken($context);
        $now = $this->deps->clock->nowMs();
        $contract = $this->reader->snapshot($now);
        $this->log->contract($contract, $this->reader, $now);
        $this->tokens->learn($contract);
        $statement = new Statement(
            $class->read,
            $class->locking,
            $this->inTransaction($context),
            $late || $this->config->forcesPrimary($context),
        );
        [$pdo, $d] = $this->dispatcher->carryOut($statement, $class, $this->session, $contract, $now, $late);
        $this->transactions->observe($class);
        if ($class->writes() && $this->config->readYourWrites) {
            $this->tokens->owe();
        }
        if ($d->isRead()) {
            $this->session->settle($contract, $this->config->redis->ttlMs, $this->config->clockSkewMs);
        }
        return [$pdo, $class, $d, $now];
    }

    /** @param array<string, mixed> $context */
    private function inTransaction(array $context): bool
    {
        return $this->transactions->inTransaction()
            || ($context['in_transaction'] ?? false) === true
            || ($this->connections->openPrimary()?->inTransaction() ?? false);
    }

    /**
     * Takes the token owed for the writes routed so far, once no transaction is open (WriteTokens).
     *
     * @param array<string, mixed> $context
     */
    private function settleToken(array $context): void
    {
        if ($this->tokens->owed() && !$this->inTransaction($context)) {
            $this->tokens->take($this->session, $this->connections->openPrimary());
        }
    }
}
