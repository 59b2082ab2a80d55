<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Doctrine;

use Doctrine\DBAL\DriverManager;
use Lagwatch\Router\Doctrine\RoutedConnection;
use Lagwatch\Router\Session\TokenStore;
use Lagwatch\Router\Tests\Integration\Sandbox;
use Lagwatch\Router\Tests\Integration\SandboxTestCase;

require_once '/usr/share/php/Doctrine/DBAL/autoload.php';
require_once 'Symfony/Component/HttpFoundation/autoload.php';

/**
 * Doctrine DBAL 3.6 (Debian's php-doctrine-dbal) on the sandbox with lagwatch running, through
 * RoutedConnection: each test starts with both replicas healthy.
 */
abstract class DoctrineTestCase extends SandboxTestCase
{
    private static ?string $serverVersion = null;

    public static function setUpBeforeClass(): void
    {
        $admin = Sandbox::get()->admin('primary');
        $admin->exec('CREATE TABLE IF NOT EXISTS lwtest.dc (id INT PRIMARY KEY, v BIGINT NOT NULL)');
        $admin->exec('INSERT IGNORE INTO lwtest.dc VALUES (1, 0), (2, 0), (3, 0)');
        $admin->exec('CREATE TABLE IF NOT EXISTS lwtest.dc_auto (id INT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)');
        self::$serverVersion ??= (string) $admin->query('SELECT VERSION()')->fetchColumn();
    }

    /**
     * A Doctrine connection as an application makes it (one per request): the router's
     * configuration of the sandbox with $changes, the session's state in $store.
     *
     * @param array<string, mixed> $changes
     */
    protected function connection(array $changes = [], ?TokenStore $store = null): RoutedConnection
    {
        $config = $this->config(['app' => 'phpdoctrine'] + $changes);
        // The database is in each server's DSN: the router opens the connections.
        $config['primary']['dsn'] .= ';dbname=lwtest';
        foreach ($config['replicas'] as $id => $replica) {
            $config['replicas'][$id]['dsn'] .= ';dbname=lwtest';
        }
        $conn = DriverManager::getConnection(RoutedConnection::params(
            $config,
            $store,
            ['serverVersion' => self::$serverVersion],
        ));
        self::assertInstanceOf(RoutedConnection::class, $conn);
        return $conn;
    }

    /** Where the last statement of $conn went: 'primary', 'replica1', 'replica2' or null. */
    protected function whereDc(RoutedConnection $conn): ?string
    {
        return $this->where($conn->router());
    }
}
