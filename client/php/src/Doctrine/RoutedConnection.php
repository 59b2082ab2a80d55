<?php

declare(strict_types=1);

namespace Lagwatch\Router\Doctrine;

use Doctrine\Common\EventManager;
use Doctrine\DBAL\Cache\QueryCacheProfile;
use Doctrine\DBAL\Configuration;
use Doctrine\DBAL\Connection;
use Doctrine\DBAL\Connections\PrimaryReadReplicaConnection;
use Doctrine\DBAL\Driver;
use Doctrine\DBAL\Driver\Connection as DriverConnection;
use Doctrine\DBAL\Driver\PDO\Connection as PdoDriverConnection;
use Doctrine\DBAL\Result;
use Doctrine\DBAL\Statement;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Router;
use Lagwatch\Router\Session\TokenStore;
use Lagwatch\Router\Sql\Classifier;

/**
 * Doctrine DBAL 3.x's PrimaryReadReplicaConnection with lagwatch's router choosing the server of
 * each statement (a `wrapperClass`, over the pdo_mysql driver):
 *
 * - executeQuery() (and the fetch*()/iterate*() helpers on it) outside a transaction: the
 *   router's decision for that statement — a replica usable now and proven to have the session's
 *   writes, else the primary; a locking read or a write sent through executeQuery() goes to the
 *   primary (stock Doctrine would send it to its replica); an answer after its bounded-staleness
 *   deadline, or a replica that times out, is read again elsewhere (Router::run()).
 * - PrimaryReadReplicaConnection's rules for the rest: executeStatement(), insert()/update()/
 *   delete(), prepare(), transactions and savepoints on the primary, every statement inside a
 *   transaction too; after ensureConnectedToPrimary() every statement of this connection goes to
 *   the primary (until ensureConnectedToReplica() with keepReplica).
 * - Not stock Doctrine's stickiness after a write: the router takes the session's read-your-writes
 *   token after each write (after the commit) and later reads go to replicas proven to have it.
 * - The token across requests: with a TokenStore, the session is loaded when the connection is
 *   made and saved after each write (after the commit).
 *
 * The router owns the PDO connections (its timeouts, failures, read-your-writes asks, TLS from its
 * `tls` blocks: Doctrine's own driverOptions are not used to connect); each is handed to Doctrine
 * as a pdo_mysql driver connection, so the platform, types and exception conversion are Doctrine's
 * own.
 *
 *   $conn = DriverManager::getConnection(RoutedConnection::params($routerConfig, $store));
 *
 * Not thread-safe; one per request (as Doctrine's connection).
 */
class RoutedConnection extends PrimaryReadReplicaConnection
{
    private readonly Router $router;
    private readonly ?TokenStore $store;
    /** ensureConnectedToPrimary() was called: everything to the primary. */
    private bool $pinned = false;
    /** tokens_taken + untokened_writes when the session was last saved. */
    private int $savedWrites = 0;
    /**
     * The primary connection's insert id right after the last write this class ran there,
     * before the router's token query (which resets mysqlnd's); null: unknown (after prepare()).
     */
    private string|false|null $insertId = null;
    /** @var \WeakMap<\PDO, DriverConnection> */
    private \WeakMap $drivers;

    /**
     * DriverManager::getConnection()'s parameters for a RoutedConnection: pdo_mysql, $doctrine
     * merged in (e.g. `serverVersion`, which spares a connect to detect the platform), and the
     * router's configuration (Router::__construct) or a Router, with an optional TokenStore.
     *
     * @param array<string, mixed>|Router $router
     * @param array<string, mixed> $doctrine
     * @return array<string, mixed>
     */
    public static function params(array|Router $router, ?TokenStore $store = null, array $doctrine = []): array
    {
        return [
            'wrapperClass' => self::class,
            'driver' => 'pdo_mysql',
            'lagwatch' => ['router' => $router, 'store' => $store],
        ] + $doctrine;
    }

    /**
     * @internal made by DriverManager::getConnection() (params()): `lagwatch` => ['router' =>
     *   the router's configuration or a Router, 'store' => ?TokenStore]; `primary` and `replica`
     *   are not needed (the router's configuration names the servers)
     * @param array<string, mixed> $params
     */
    public function __construct(
        #[\SensitiveParameter]
        array $params,
        Driver $driver,
        ?Configuration $config = null,
        ?EventManager $eventManager = null,
    ) {
        $lagwatch = $params['lagwatch'] ?? null;
        if (!is_array($lagwatch) || !isset($lagwatch['router'])) {
            throw new ConfigException("lagwatch: ['router' => config or Router, 'store' => ?TokenStore] missing");
        }
        $router = $lagwatch['router'];
        $this->router = $router instanceof Router ? $router : new Router($router);
        $store = $lagwatch['store'] ?? null;
        if ($store !== null && !$store instanceof TokenStore) {
            throw new ConfigException('lagwatch.store: not a ' . TokenStore::class);
        }
        $this->store = $store;
        $this->drivers = new \WeakMap();
        // PrimaryReadReplicaConnection insists on these; the router's configuration is what connects.
        $params['primary'] ??= [];
        $params['replica'] ??= [[]];
        parent::__construct($params, $driver, $config, $eventManager);
        $session = $this->store?->load();
        if ($session !== null) {
            $this->router->useSession($session);
        }
    }

    /** The router: routeInfo(), stats(), session(), afterWrite() for writes made around Doctrine. */
    /**
     * Closes Doctrine's connections and the router's (it owns the PDO connections Doctrine used).
     * The driver wrappers go too: each holds its PDO, the key it is filed under, and PHP 8.2 never
     * frees a WeakMap entry whose value refers to its key, so they would keep every connection open.
     */
    public function close()
    {
        parent::close();
        $this->drivers = new \WeakMap();
        $this->router->close();
    }

    public function router(): Router
    {
        return $this->router;
    }

    /**
     * Saves the session's read-your-writes state in the TokenStore if a write happened since the
     * last save (done after each write and commit; call it after a prepared write).
     */
    public function saveSession(): void
    {
        if ($this->store === null || $this->isTransactionActive()) {
            return;
        }
        $session = $this->router->session();
        $stats = $this->router->stats();
        $writes = $stats['tokens_taken'] + $stats['untokened_writes'];
        if ($writes !== $this->savedWrites) {
            $this->savedWrites = $writes;
            $this->store->save($session);
        }
    }

    /**
     * {@inheritDoc}
     * The router's choice for $sql (see the class).
     */
    public function executeQuery(string $sql, array $params = [], $types = [], ?QueryCacheProfile $qcp = null): Result
    {
        if ($qcp !== null) {
            return $this->executeCacheQuery($sql, $params, $types, $qcp);  // runs executeQuery() on a miss
        }
        $result = $this->router->run($sql, function (\PDO $pdo) use ($sql, $params, $types): Result {
            $this->use($pdo);
            $result = Connection::executeQuery($sql, $params, $types);
            if ($this->router->routeInfo()?->reason === 'write') {
                $this->noteInsertId($pdo);
            }
            return $result;
        }, $this->context());
        $this->saveSession();
        return $result;
    }

    /**
     * {@inheritDoc}
     * The primary (a plain read sent here too, as PrimaryReadReplicaConnection does).
     */
    public function executeStatement($sql, array $params = [], array $types = [])
    {
        $context = $this->context();
        $context['force_primary'] = $context['force_primary'] || Classifier::classify($sql)->read;
        $result = $this->router->run($sql, function (\PDO $pdo) use ($sql, $params, $types): int|string {
            $this->use($pdo);
            $result = Connection::executeStatement($sql, $params, $types);
            $this->noteInsertId($pdo);
            return $result;
        }, $context);
        $this->saveSession();
        return $result;
    }

    /** {@inheritDoc} On the primary (a prepared statement may write). */
    public function prepare(string $sql): Statement
    {
        $this->use($this->router->connectionFor($sql, ['force_primary' => true] + $this->context()));
        $this->insertId = null;
        return Connection::prepare($sql);
    }

    /** {@inheritDoc} */
    public function beginTransaction()
    {
        $this->usePrimary($this->getTransactionNestingLevel() === 0 ? 'BEGIN' : 'SAVEPOINT lagwatch');
        return Connection::beginTransaction();
    }

    /** {@inheritDoc} Then the session's token, saved in the store. */
    public function commit()
    {
        $outer = $this->getTransactionNestingLevel() === 1;
        $this->usePrimary($outer ? 'COMMIT' : 'RELEASE SAVEPOINT lagwatch');
        $result = Connection::commit();
        $this->saveSession();
        return $result;
    }

    /** {@inheritDoc} */
    public function rollBack()
    {
        $outer = $this->getTransactionNestingLevel() <= 1;
        $this->usePrimary($outer ? 'ROLLBACK' : 'ROLLBACK TO SAVEPOINT lagwatch');
        return Connection::rollBack();
    }

    /** {@inheritDoc} */
    public function createSavepoint($savepoint)
    {
        $this->usePrimary('SAVEPOINT lagwatch');
        Connection::createSavepoint($savepoint);
    }

    /** {@inheritDoc} */
    public function releaseSavepoint($savepoint)
    {
        $this->usePrimary('RELEASE SAVEPOINT lagwatch');
        Connection::releaseSavepoint($savepoint);
    }

    /** {@inheritDoc} */
    public function rollbackSavepoint($savepoint)
    {
        $this->usePrimary('ROLLBACK TO SAVEPOINT lagwatch');
        Connection::rollbackSavepoint($savepoint);
    }

    /**
     * {@inheritDoc}
     * The primary's, as it was right after the last write (the router's token query after a
     * write, and reads on the primary, would otherwise reset mysqlnd's), whatever ran since.
     */
    public function lastInsertId($name = null)
    {
        if ($name === null && $this->insertId !== null) {
            return $this->insertId;
        }
        if (isset($this->connections['primary'])) {
            $this->_conn = $this->connections['primary'];
        } else {
            $this->usePrimary('SELECT LAST_INSERT_ID()');
        }
        return Connection::lastInsertId($name);
    }

    /**
     * PrimaryReadReplicaConnection's: from now on every statement of this connection goes to the
     * primary (the router still fails fast when lagwatch says the primary is down).
     */
    public function ensureConnectedToPrimary(): bool
    {
        $this->pinned = true;
        $wasPrimary = $this->isConnectedToPrimary();
        $this->usePrimary('SELECT 1');
        return !$wasPrimary;
    }

    /**
     * PrimaryReadReplicaConnection's: with keepReplica, reads are the router's choice again after
     * ensureConnectedToPrimary(); without, the primary stays (as in Doctrine). Connects nothing:
     * the next read is routed.
     */
    public function ensureConnectedToReplica(): bool
    {
        if ($this->keepReplica && $this->getTransactionNestingLevel() === 0) {
            $this->pinned = false;
        }
        return false;
    }

    /**
     * For a connect Doctrine makes by itself (getNativeConnection(), quote(), the platform's
     * version without `serverVersion`): the router's connection for a plain read, or the primary.
     *
     * @param string $connectionName
     */
    protected function connectTo($connectionName)
    {
        $pdo = $connectionName === 'primary'
            ? $this->router->connectionFor('SELECT 1', ['force_primary' => true] + $this->context())
            : $this->router->connectionFor('SELECT 1', $this->context());
        return $this->driver($pdo);
    }

    private function noteInsertId(\PDO $pdo): void
    {
        if ($this->router->routeInfo()?->selected === 'primary') {
            $this->insertId = $pdo->lastInsertId();
        }
    }

    /** @return array{force_primary: bool, in_transaction: bool} */
    private function context(): array
    {
        return ['force_primary' => $this->pinned, 'in_transaction' => $this->isTransactionActive()];
    }

    private function usePrimary(string $sql): void
    {
        $this->use($this->router->connectionFor($sql, ['force_primary' => true] + $this->context()));
    }

    /** Makes $pdo (the router's choice) the connection Doctrine runs the next statement on. */
    private function use(\PDO $pdo): void
    {
        $driver = $this->driver($pdo);
        $this->_conn = $driver;
        $this->connections[$this->router->routeInfo()?->selected === 'primary' ? 'primary' : 'replica'] = $driver;
    }

    /** Doctrine's pdo_mysql driver connection over the router's PDO (one per PDO). */
    private function driver(\PDO $pdo): DriverConnection
    {
        return $this->drivers[$pdo] ??= new PdoDriverConnection($pdo);
    }
}
