<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Illuminate\Container\Container;
use Illuminate\Database\Capsule\Manager as Capsule;
use Illuminate\Events\Dispatcher;
use Lagwatch\Router\Laravel\Lagwatch;
use Lagwatch\Router\Laravel\LagwatchMySqlConnection;
use Lagwatch\Router\Tests\Integration\Sandbox;

/**
 * Laravel (Illuminate Database 8.83) on the TLS sandbox: the lagwatch block's `tls` for every
 * server (a replica's own overriding it), or Laravel's own `options` with PDO::MYSQL_ATTR_SSL_*,
 * which the block's replicas inherit. Reads on replicas and writes on the primary, each over TLS.
 */
final class LaravelTlsTest extends TlsTestCase
{
    /**
     * A `mysql` connection to the primary by TCP with a lagwatch block naming both replicas.
     *
     * @param array<string, mixed> $lagwatch merged over the block
     * @param array<string, mixed> $own merged over the connection's keys
     */
    private function connection(array $lagwatch = [], array $own = []): LagwatchMySqlConnection
    {
        $s = $this->sandbox;
        Lagwatch::install();
        $capsule = new Capsule(new Container());
        $capsule->addConnection(array_replace([
            'driver' => 'mysql',
            'host' => '127.0.0.1',
            'port' => $s->port('primary'),
            'database' => 'lwtest',
            'username' => self::USER,
            'password' => self::password(),
            'charset' => 'utf8mb4',
            'collation' => 'utf8mb4_unicode_ci',
            'prefix' => '',
            'strict' => true,
            'lagwatch' => array_replace([
                'app' => 'lvtls',
                'redis' => $s->routerRedis(),
                'replicas' => [$s->id('replica1') => [], $s->id('replica2') => []],
                'tls' => $s->tlsBlock(),
                'logger' => $this->logger,
            ], $lagwatch),
        ], $own));
        $capsule->setEventDispatcher(new Dispatcher(new Container()));
        $c = $capsule->getConnection();
        self::assertInstanceOf(LagwatchMySqlConnection::class, $c);
        return $c;
    }

    /** Reads TLS_READ through Laravel until a replica serves: [port, cipher]. */
    private function readOnAReplicaThrough(LagwatchMySqlConnection $c): array
    {
        $row = null;
        self::assertTrue(Sandbox::waitFor(static function () use ($c, &$row): bool {
            $row = $c->selectOne(self::TLS_READ);
            return !in_array($c->router()->routeInfo()?->selected, ['primary', null], true);
        }, 5.0), 'no read on a replica: ' . json_encode($this->logger->lines));
        self::assertSame($c->router()->routeInfo()->server, '127.0.0.1:' . $row->port);
        return [(int) $row->port, (string) $row->cipher];
    }

    private function assertWritesOnThePrimaryOverTls(LagwatchMySqlConnection $c): void
    {
        $id = $c->table('tls_items')->insertGetId(['v' => 7]);
        self::assertGreaterThan(2, $id);
        self::assertSame('primary', $c->router()->routeInfo()->selected);
        self::assertSame(1, $c->table('tls_items')->where('id', $id)->update(['v' => 8]));
        self::assertSame('write', $c->router()->routeInfo()->reason);
        self::assertNotSame('', self::sessionTls($c->getPdo())['Ssl_cipher']);
        self::assertSame($this->sandbox->port('primary'), (int) $c->getPdo()->query('SELECT @@port')->fetchColumn());
        // The session's token: the read after the write sees it, wherever it runs.
        self::assertSame(8, (int) $c->table('tls_items')->where('id', $id)->value('v'));
    }

    public function testWithTheBlocksTlsReadsGoToReplicasAndWritesToThePrimaryOverTls(): void
    {
        $c = $this->connection();
        [, $cipher] = $this->readOnAReplicaThrough($c);
        self::assertNotSame('', $cipher);
        $this->assertWritesOnThePrimaryOverTls($c);
        self::assertSame(0, $c->stats()['redis_errors']);
        self::assertSame(0, $c->stats()['replica_connect_errors']);
    }

    public function testWithLaravelsOwnSslOptionsTheReplicasInheritThem(): void
    {
        $s = $this->sandbox;
        $c = $this->connection(['tls' => null], ['options' => [
            \PDO::MYSQL_ATTR_SSL_CA => $s->env('TLS_CA'),
            \PDO::MYSQL_ATTR_SSL_CERT => $s->env('TLS_CLIENT_CERT'),
            \PDO::MYSQL_ATTR_SSL_KEY => $s->env('TLS_CLIENT_KEY'),
        ]]);
        $seen = [];
        self::assertTrue(Sandbox::waitFor(function () use ($c, &$seen): bool {
            [$port, $cipher] = $this->readOnAReplicaThrough($c);
            self::assertNotSame('', $cipher);
            $seen[$port] = true;
            return count($seen) === 2;
        }, 10.0), json_encode($seen));
        $this->assertWritesOnThePrimaryOverTls($c);
    }

    public function testAReplicasOwnTlsOverridesTheBlocksAndItsFailureIsNamedAndSkipped(): void
    {
        $r1 = $this->sandbox->id('replica1');
        $c = $this->connection(['replicas' => [
            $r1 => ['tls' => ['ca_file' => Certs::otherCa()]],
            $this->sandbox->id('replica2') => [],
        ]]);
        for ($i = 0; $i < 20; ++$i) {
            $port = (int) $c->selectOne(self::TLS_READ)->port;
            self::assertNotSame($this->sandbox->port('replica1'), $port);
        }
        self::assertSame($this->sandbox->port('replica2'), $this->readOnAReplicaThrough($c)[0]);
        self::assertSame(1, $c->stats()['replica_connect_errors']);
        self::assertCount(1, $this->warningsWith("route: cannot connect to replica $r1 (TLS unknown_ca with MySQL $r1: "));
    }
}
