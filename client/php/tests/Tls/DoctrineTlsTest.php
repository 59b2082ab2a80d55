<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Doctrine\DBAL\DriverManager;
use Lagwatch\Router\Doctrine\RoutedConnection;
use Lagwatch\Router\Tests\Integration\Sandbox;

require_once '/usr/share/php/Doctrine/DBAL/autoload.php';

/**
 * Doctrine DBAL 3.6 on the TLS sandbox through RoutedConnection: the router's configuration
 * (its `tls` blocks) says how every server is reached, Doctrine's statements run on those TLS
 * connections.
 */
final class DoctrineTlsTest extends TlsTestCase
{
    public function testReadsGoToReplicasAndWritesToThePrimaryOverTls(): void
    {
        $version = (string) $this->sandbox->adminQuery('primary', 'SELECT VERSION()');
        $conn = DriverManager::getConnection(RoutedConnection::params(
            $this->config(['app' => 'dctls']),
            null,
            ['serverVersion' => $version],
        ));
        self::assertInstanceOf(RoutedConnection::class, $conn);
        $row = null;
        self::assertTrue(Sandbox::waitFor(static function () use ($conn, &$row): bool {
            $row = $conn->fetchAssociative(self::TLS_READ);
            return !in_array($conn->router()->routeInfo()?->selected, ['primary', null], true);
        }, 5.0), 'no read on a replica: ' . json_encode($this->logger->lines));
        self::assertSame($conn->router()->routeInfo()->server, '127.0.0.1:' . $row['port']);
        self::assertNotSame('', $row['cipher']);

        self::assertSame(1, $conn->executeStatement('UPDATE tls_items SET v = v + 1 WHERE id = 2'));
        self::assertSame('write', $conn->router()->routeInfo()->reason);
        $conn->insert('tls_items', ['v' => 5]);
        self::assertGreaterThan(2, (int) $conn->lastInsertId());
        $native = $conn->getNativeConnection();
        self::assertInstanceOf(\PDO::class, $native);
        self::assertSame($this->sandbox->port('primary'), (int) $native->query('SELECT @@port')->fetchColumn());
        self::assertNotSame('', self::sessionTls($native)['Ssl_cipher']);
        $stats = $conn->router()->stats();
        self::assertSame(0, $stats['redis_errors']);
        self::assertSame(0, $stats['replica_connect_errors']);
        self::assertGreaterThanOrEqual(1, $stats['tokens_taken']);
        $conn->close();
    }
}
