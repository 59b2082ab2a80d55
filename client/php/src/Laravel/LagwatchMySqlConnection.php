<?php

declare(strict_types=1);

namespace Lagwatch\Router\Laravel;

use Closure;
use Lagwatch\Router\Router;
use Lagwatch\Router\Session\TokenStore;
use Lagwatch\Router\Sql\Classifier;
use Illuminate\Database\MySqlConnection;

/**
 * A MySQL connection whose statements go where lagwatch's router says (client/php/README.md,
 * "Laravel"), with Eloquent and the query builder unchanged:
 *
 * - reads (select(), cursor(), so get(), first(), find(), count(), exists(), ...) outside a
 *   transaction: the router's choice per query, a replica within its tier's limit that has the
 *   session's writes, else the primary;
 * - reads Laravel sends to the write connection (useWritePdo(), lockForUpdate(), sharedLock(),
 *   selectFromWriteConnection(), useWriteConnectionWhenReading()) and everything in a
 *   transaction: the primary;
 * - writes (insert, update, delete, statement, affectingStatement, unprepared): the primary, and
 *   the session's read-your-writes token right after (after the commit in a transaction), saved
 *   to the connection's TokenStore for the next request;
 * - `sticky` is ignored: read-your-writes tokens supersede it (they last across requests, and a
 *   replica that has the write serves the reads after it).
 *
 * The connection's PDOs are the router's: getPdo() is its primary connection (opened on first
 * use, not when lagwatch says the primary's circuit is down: PrimaryUnavailableException),
 * getReadPdo() is the primary too (it cannot see the SQL; select() does not use it). A replica
 * read that loses its connection (a hung replica past its read timeout, a restart) is run again
 * on the primary, and that replica is not used by this connection for replica_retry_ms.
 *
 * One per request, as Laravel makes them; a long-lived worker calls resetRequest() between jobs.
 */
class LagwatchMySqlConnection extends MySqlConnection
{
    private Router $router;
    /** @var TokenStore|Closure(): ?TokenStore|null */
    private TokenStore|Closure|null $tokenStore;
    private bool $sessionLoaded = false;
    private bool $unsavedWrite = false;
    private string|false $insertId = false;
    /** @var array<string, int> replica id => when a read on it lost its connection, unix ms */
    private array $failedReplicas = [];
    private int $replicaRetryMs;
    /** @var array<string, int> */
    private array $counters = ['replica_read_failures' => 0, 'replica_reads_rerun' => 0, 'tokens_saved' => 0];

    /**
     * @param array<string, mixed> $config the connection's config, with its `lagwatch` block
     * @param TokenStore|Closure(): ?TokenStore|null $tokenStore where the session's state waits
     *        between requests; a Closure is called at the first statement
     */
    public function __construct(
        string $database,
        string $tablePrefix,
        array $config,
        TokenStore|Closure|null $tokenStore = null,
        ?Router $router = null,
    ) {
        $routerConfig = ConnectionConfig::from($config);
        $this->router = $router ?? new Router($routerConfig);
        $this->replicaRetryMs = is_int($routerConfig['replica_retry_ms'] ?? null) ? $routerConfig['replica_retry_ms'] : 1000;
        $this->tokenStore = $tokenStore;
        parent::__construct($this->primaryResolver(), $database, $tablePrefix, $config);
    }

    /** The router behind this connection (routeInfo(), stats(), session()). */
    public function router(): Router
    {
        return $this->router;
    }

    /** The router's counters and this connection's own (replica_read_failures, replica_reads_rerun, tokens_saved). */
    public function stats(): array
    {
        return $this->router->stats() + $this->counters;
    }

    /** @param TokenStore|Closure(): ?TokenStore|null $store */
    public function setTokenStore(TokenStore|Closure|null $store): static
    {
        $this->tokenStore = $store;
        $this->sessionLoaded = false;
        return $this;
    }

    /**
     * Takes the session's state from the token store, unless this request wrote already (its own
     * state is newer). Done before the first statement; call it again once the framework's
     * session has started if statements ran before (LoadReadYourWrites middleware).
     */
    public function loadSession(): void
    {
        $this->sessionLoaded = true;
        $store = $this->store();
        if ($store === null || $this->router->session()->hasWrites()) {
            return;
        }
        $session = $store->load();
        if ($session !== null) {
            $this->router->useSession($session);
        }
    }

    /**
     * A write the application ran on getPdo() itself: the token is taken now (after the
     * transaction if one is open) and saved.
     */
    public function afterWrite(): void
    {
        $this->router->afterWrite();
        $this->unsavedWrite = true;
        $this->saveSession();
    }

    /** A new unit of work in a long-lived process: the token store is read again and failures forgotten. */
    public function resetRequest(): void
    {
        $this->sessionLoaded = false;
        $this->failedReplicas = [];
    }

    /**
     * The id the last insert (statement()) generated, kept right after it: PDO::lastInsertId() on
     * getPdo() says 0 once the token was taken after the write.
     */
    public function lastInsertId(): string|false
    {
        return $this->insertId;
    }

    public function select($query, $bindings = [], $useReadPdo = true)
    {
        return $this->run($query, $bindings, function ($query, $bindings) use ($useReadPdo) {
            if ($this->pretending()) {
                return [];
            }
            return $this->onReadConnection(
                $query,
                $useReadPdo,
                fn (\PDO $pdo) => $this->executeRead($pdo, $query, $bindings)->fetchAll(),
            );
        });
    }

    public function cursor($query, $bindings = [], $useReadPdo = true)
    {
        $statement = $this->run($query, $bindings, function ($query, $bindings) use ($useReadPdo) {
            if ($this->pretending()) {
                return [];
            }
            return $this->onReadConnection(
                $query,
                $useReadPdo,
                fn (\PDO $pdo) => $this->executeRead($pdo, $query, $bindings),
            );
        });
        while ($record = $statement->fetch()) {
            yield $record;
        }
    }

    public function statement($query, $bindings = [])
    {
        return $this->runWrite($query, $bindings, true, function (\PDO $pdo, $query, $bindings) {
            $statement = $pdo->prepare($query);
            $this->bindValues($statement, $this->prepareBindings($bindings));
            $this->recordsHaveBeenModified();
            $done = $statement->execute();
            $this->insertId = $pdo->lastInsertId();
            return $done;
        });
    }

    public function affectingStatement($query, $bindings = [])
    {
        return $this->runWrite($query, $bindings, 0, function (\PDO $pdo, $query, $bindings) {
            $statement = $pdo->prepare($query);
            $this->bindValues($statement, $this->prepareBindings($bindings));
            $statement->execute();
            $this->recordsHaveBeenModified(($count = $statement->rowCount()) > 0);
            return $count;
        });
    }

    public function unprepared($query)
    {
        return $this->runWrite($query, [], true, function (\PDO $pdo, $query) {
            $this->recordsHaveBeenModified($change = $pdo->exec($query) !== false);
            return $change;
        });
    }

    protected function getDefaultPostProcessor()
    {
        return new LagwatchMySqlProcessor();
    }

    /** After the outermost commit (commit() and transaction() both announce it): the token, saved. */
    protected function fireConnectionEvent($event)
    {
        $result = parent::fireConnectionEvent($event);
        if ($event === 'committed' && $this->transactions === 0) {
            $this->saveSession();
        }
        return $result;
    }

    /** The primary: select() does not come here, and a caller of getReadPdo() has no SQL to route. */
    public function getReadPdo()
    {
        return $this->getPdo();
    }

    /**
     * After a lost connection: the router's primary connection is dropped and opened again on
     * next use (Laravel runs the statement once more; in a transaction it does not).
     */
    public function reconnect()
    {
        $pdo = $this->getRawPdo();
        if ($pdo instanceof \PDO) {
            $this->router->discard($pdo);
        }
        $this->doctrineConnection = null;
        $this->setPdo($this->primaryResolver());
    }

    public function disconnect()
    {
        $this->reconnect();
    }

    /**
     * Routes a read and runs $run on the connection chosen; a replica that loses the connection
     * (error 2006/2013: gone away, lost, read timeout) is passed over and the read run on the
     * primary.
     *
     * @template T
     * @param Closure(\PDO): T $run
     * @return T
     */
    /** Prepares $query on $pdo as Laravel does (fetch mode, bindings) and executes it. */
    private function executeRead(\PDO $pdo, string $query, array $bindings): \PDOStatement
    {
        $statement = $this->prepared($pdo->prepare($query));
        $this->bindValues($statement, $this->prepareBindings($bindings));
        $statement->execute();
        return $statement;
    }

    private function onReadConnection(string $query, bool $useReadPdo, Closure $run): mixed
    {
        $this->beforeStatement();
        if (!$useReadPdo || $this->readOnWriteConnection) {
            return $run($this->primaryFor($query));
        }
        $pdo = $this->router->connectionFor($query, $this->transactions > 0 ? ['in_transaction' => true] : []);
        $replica = $this->servingReplica();
        if ($replica !== null && $this->replicaFailed($replica)) {
            // The router does not know this replica failed for us: its connection is broken.
            ++$this->counters['replica_reads_rerun'];
            return $run($this->router->connectionFor($query, ['force_primary' => true]));
        }
        try {
            return $run($pdo);
        } catch (\PDOException $e) {
            if ($replica === null || !self::connectionLost($e)) {
                throw $e;
            }
            $this->failedReplicas[$replica] = $this->nowMs();
            ++$this->counters['replica_read_failures'];
            ++$this->counters['replica_reads_rerun'];
            $this->logWarning('lagwatch: a read on replica {replica} failed ({error}); run on the primary, the'
                . ' replica passed over for {retry_ms} ms', [
                'replica' => $replica,
                'error' => $e->getMessage(),
                'retry_ms' => $this->replicaRetryMs,
            ]);
            return $run($this->router->connectionFor($query, ['force_primary' => true]));
        }
    }

    /**
     * Runs a write-connection statement on the router's primary; after it, outside a
     * transaction, takes the session's token and saves it.
     *
     * @param mixed $pretended what Laravel returns for it while pretending
     * @param Closure(\PDO, string, array): mixed $run
     */
    private function runWrite(string $query, array $bindings, mixed $pretended, Closure $run): mixed
    {
        $result = $this->run($query, $bindings, function ($query, $bindings) use ($pretended, $run) {
            if ($this->pretending()) {
                return $pretended;
            }
            $this->beforeStatement();
            $pdo = $this->primaryFor($query);
            if (Classifier::classify($query)->writes()) {
                $this->unsavedWrite = true;
            }
            return $run($pdo, $query, $bindings);
        });
        if ($this->transactions === 0 && !$this->pretending()) {
            $this->saveSession();
        }
        return $result;
    }

    /**
     * The primary for a statement Laravel sends to the write connection: routed as what it is
     * (a write, a locking read: the router tracks transactions and owes a token after a write),
     * a plain read forced there.
     */
    private function primaryFor(string $query): \PDO
    {
        $class = Classifier::classify($query);
        $context = $class->read ? ['force_primary' => true] : [];
        if ($this->transactions > 0) {
            $context['in_transaction'] = true;
        }
        return $this->router->connectionFor($query, $context);
    }

    private function beforeStatement(): void
    {
        if (!$this->sessionLoaded) {
            $this->loadSession();
        }
    }

    /** Saves the session to the store after a write, with its token taken (outside a transaction only). */
    private function saveSession(): void
    {
        if (!$this->unsavedWrite) {
            return;
        }
        $session = $this->router->session();
        $store = $this->store();
        if ($store === null || !$session->hasWrites()) {
            return;
        }
        $store->save($session);
        $this->unsavedWrite = false;
        ++$this->counters['tokens_saved'];
    }

    private function store(): ?TokenStore
    {
        if ($this->tokenStore instanceof Closure) {
            $this->tokenStore = ($this->tokenStore)();
        }
        return $this->tokenStore;
    }

    /** The replica id of the router's last decision, null for the primary. */
    private function servingReplica(): ?string
    {
        $selected = $this->router->routeInfo()?->selected;
        return $selected === null || $selected === 'primary' ? null : $selected;
    }

    private function replicaFailed(string $id): bool
    {
        $at = $this->failedReplicas[$id] ?? null;
        if ($at === null) {
            return false;
        }
        if ($this->nowMs() - $at >= $this->replicaRetryMs) {
            unset($this->failedReplicas[$id]);
            return false;
        }
        return true;
    }

    /** The router's primary connection, made on first use: fails fast when lagwatch says the circuit is down. */
    private function primaryResolver(): Closure
    {
        return function (): \PDO {
            $pdo = $this->router->connectionFor('SELECT 1', ['force_primary' => true]);
            $level = $this->getConfig('isolation_level');
            if (is_string($level) && $level !== '') {
                $pdo->prepare("SET SESSION TRANSACTION ISOLATION LEVEL {$level}")->execute();
            }
            return $pdo;
        };
    }

    private function nowMs(): int
    {
        return (int) floor(microtime(true) * 1000);
    }

    /** @param array<string, mixed> $context */
    private function logWarning(string $message, array $context): void
    {
        $logger = $this->getConfig('lagwatch')['logger'] ?? null;
        if ($logger instanceof \Psr\Log\LoggerInterface) {
            $logger->warning($message, $context);
        }
    }

    /** MySQL client errors 2006 (gone away) and 2013 (lost, read timeout). */
    private static function connectionLost(\PDOException $e): bool
    {
        $code = $e->errorInfo[1] ?? null;
        return $code === 2006 || $code === 2013
            || str_contains($e->getMessage(), 'server has gone away')
            || str_contains($e->getMessage(), 'Lost connection');
    }
}
