<?php

declare(strict_types=1);

namespace Lagwatch\Router\Laravel;

use Closure;
use Lagwatch\Router\Router;
use Lagwatch\Router\RouterDependencies;
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
 * getReadPdo() is the primary too (it cannot see the SQL; select() does not use it).
 *
 * Replica reads run through Router::run(), as Doctrine's RoutedConnection does: an answer that
 * comes back after its bounded-staleness deadline (a replica that hung just after it was chosen)
 * is discarded and the read runs again on the primary (late_answers); a replica whose connection
 * times out or breaks is skipped by the router (for the request, or replica_retry_ms) and the read
 * runs again elsewhere (replica_read_errors).
 *
 * One per request, as Laravel makes them; a long-lived worker calls resetRequest() between jobs,
 * and disconnect() (DB::disconnect(), DB::purge()) closes every server's connection.
 */
class LagwatchMySqlConnection extends MySqlConnection
{
    private Router $router;
    /** @var TokenStore|Closure(): ?TokenStore|null */
    private TokenStore|Closure|null $tokenStore;
    private bool $sessionLoaded = false;
    private bool $unsavedWrite = false;
    private string|false $insertId = false;
    /** @var array<string, int> */
    private array $counters = ['tokens_saved' => 0];

    /**
     * @param array<string, mixed> $config the connection's config, with its `lagwatch` block
     * @param TokenStore|Closure(): ?TokenStore|null $tokenStore where the session's state waits
     *        between requests; a Closure is called at the first statement
     * @param ?Router $router the router to use (its configuration is then the router's own);
     *        default one made from the `lagwatch` block
     * @param ?RouterDependencies $dependencies the router's clock, random source, ... (tests)
     */
    public function __construct(
        string $database,
        string $tablePrefix,
        array $config,
        TokenStore|Closure|null $tokenStore = null,
        ?Router $router = null,
        ?RouterDependencies $dependencies = null,
    ) {
        $routerConfig = ConnectionConfig::from($config);
        $this->router = $router ?? new Router($routerConfig, $dependencies);
        $this->tokenStore = $tokenStore;
        parent::__construct($this->primaryResolver(), $database, $tablePrefix, $config);
    }

    /** The router behind this connection (routeInfo(), stats(), session()). */
    public function router(): Router
    {
        return $this->router;
    }

    /** The router's counters and this connection's own (tokens_saved). */
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

    /**
     * A new unit of work in a long-lived process: the token store is read again and the replicas
     * the router skipped after a failure are tried again (Router::reset()).
     */
    public function resetRequest(): void
    {
        $this->sessionLoaded = false;
        $this->router->reset();
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

    /**
     * Closes every server's connection, the replicas' too (Router::close(): rw_stats sent, the
     * connections dropped): for a long-lived worker between jobs, DB::disconnect(), DB::purge().
     * The next statement opens what it needs.
     */
    public function disconnect()
    {
        $this->router->close();
        $this->doctrineConnection = null;
        $this->setPdo($this->primaryResolver());
    }

    /** Prepares $query on $pdo as Laravel does (fetch mode, bindings) and executes it. */
    private function executeRead(\PDO $pdo, string $query, array $bindings): \PDOStatement
    {
        $statement = $this->prepared($pdo->prepare($query));
        $this->bindValues($statement, $this->prepareBindings($bindings));
        $statement->execute();
        return $statement;
    }

    /**
     * Runs a read: on the primary when Laravel asked for the write connection, else through
     * Router::run() — a replica's late answer is discarded and read again on the primary, a
     * replica that loses the connection is skipped and the read runs elsewhere.
     *
     * @template T
     * @param Closure(\PDO): T $run
     * @return T
     */
    private function onReadConnection(string $query, bool $useReadPdo, Closure $run): mixed
    {
        $this->beforeStatement();
        if (!$useReadPdo || $this->readOnWriteConnection) {
            return $run($this->primaryFor($query));
        }
        return $this->router->run($query, $run, $this->transactions > 0 ? ['in_transaction' => true] : []);
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
}
