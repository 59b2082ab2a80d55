<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Laravel;

use Illuminate\Config\Repository as Config;
use Illuminate\Container\Container;
use Illuminate\Database\DatabaseServiceProvider;
use Illuminate\Events\EventServiceProvider;
use Illuminate\Session\ArraySessionHandler;
use Illuminate\Session\Store;
use Lagwatch\Router\Laravel\LagwatchMySqlConnection;
use Lagwatch\Router\Laravel\LagwatchServiceProvider;
use Lagwatch\Router\Laravel\LoadReadYourWrites;
use Lagwatch\Router\Session\LaravelSessionStore;
use Lagwatch\Router\Session\PhpSessionStore;

/**
 * Read-your-writes through Laravel: Eloquent save then find in one request, and a write in one
 * request read back by the next, the two sharing only a session (Capsule, and a booted container
 * with Laravel's session), with a replica held behind that must never serve the session.
 */
final class ReadYourWritesTest extends LaravelTestCase
{
    private const THINK_MS = [0, 0, 1, 5, 20, 50];

    public function testEloquentSaveThenFindReadsTheWriteWithinARequest(): void
    {
        $held = $this->sandbox->admin('replica2');
        $held->exec('FLUSH TABLES WITH READ LOCK');
        try {
            $c = $this->lagwatch($this->capsule());
            $by = [];
            for ($i = 1; $i <= 60; ++$i) {
                $item = Item::query()->findOrFail(1);
                $item->version = $item->version + 1;
                $item->save();
                usleep(1000 * self::THINK_MS[$i % count(self::THINK_MS)]);
                $again = Item::query()->find(1);
                $where = $this->served($c) . ' ' . $c->router()->routeInfo()->reason;
                self::assertSame($item->version, $again->version, "read $i ($where) missed the write");
                $by[$where] = ($by[$where] ?? 0) + 1;
            }
            self::assertArrayNotHasKey('replica2 tier1_available', $by, json_encode($by));
            self::assertArrayNotHasKey('replica2 caught_up', $by, json_encode($by));
            self::assertSame(60, $c->router()->stats()['tokens_taken'], json_encode($by));
        } finally {
            $held->exec('UNLOCK TABLES');
        }
    }

    public function testTheNextRequestSharingOnlyTheSessionReadsTheWrite(): void
    {
        $session = new Store('lv', new ArraySessionHandler(10));
        $held = $this->sandbox->admin('replica2');
        $held->exec('FLUSH TABLES WITH READ LOCK');
        try {
            for ($i = 0; $i < 25; ++$i) {
                // Request 1: the write.
                $first = $this->lagwatch($this->capsule(['token_store' => new LaravelSessionStore($session)]));
                Item::query()->whereKey(2)->increment('version');
                $expected = (int) $this->sandbox->adminQuery('primary', 'SELECT version FROM lwtest.lv_items WHERE id = 2');
                $token = $first->router()->session()->toString();
                unset($first);

                // Request 2: a new Capsule and connection; only the session is shared.
                $next = $this->lagwatch($this->capsule(['token_store' => new LaravelSessionStore($session)]));
                $v = (int) Item::query()->find(2)->version;
                $where = $this->served($next) . ' ' . $next->router()->routeInfo()->reason;
                self::assertSame($token, $next->router()->session()->toString(), 'the token came with the session');
                self::assertSame($expected, $v, "the next request ($where) missed the write");
                self::assertNotSame('replica2', $this->served($next), $where);
            }
        } finally {
            $held->exec('UNLOCK TABLES');
        }
        // Without the session, the next request has no token at all.
        $bare = $this->lagwatch($this->capsule());
        $bare->select('SELECT 1');
        self::assertFalse($bare->router()->session()->hasWrites());
    }

    public function testPhpSessionStoreCarriesTheTokenInSession(): void
    {
        // A real PHP session (phpunit.xml's session settings), written out between the requests.
        session_id('lwlaravel' . getmypid());
        self::assertTrue(session_start());
        $_SESSION = [];
        try {
            $first = $this->lagwatch($this->capsule(['token_store' => 'php']));
            Item::query()->whereKey(1)->increment('version');
            self::assertArrayHasKey('lagwatch_rw', $_SESSION);
            session_write_close();
            self::assertTrue(session_start());
            $next = $this->lagwatch($this->capsule(['token_store' => 'php']));
            $next->select('SELECT 1');
            self::assertSame($first->router()->session()->toString(), $next->router()->session()->toString());
            self::assertNotNull($next->router()->session()->token());
            // The store had a session to keep the token in: it did not warn. (Other warnings,
            // such as a replica briefly unhealthy on a loaded host, are not this test's.)
            $storeWarnings = array_filter($this->logger->at('warning'), static fn (string $w): bool => str_contains($w, 'PhpSessionStore'));
            self::assertSame([], array_values($storeWarnings));
        } finally {
            session_destroy();
            unset($_SESSION);
        }
    }

    public function testPhpSessionStoreWithoutASessionWarnsThroughTheBlocksLoggerOnce(): void
    {
        self::assertNotSame(PHP_SESSION_ACTIVE, session_status());
        $c = $this->lagwatch($this->capsule(['token_store' => 'php']));
        Item::query()->whereKey(1)->increment('version');
        Item::query()->whereKey(2)->increment('version');
        self::assertFalse(isset($_SESSION), 'nothing kept');
        self::assertSame(2, $c->stats()['tokens_saved'], 'both writes handed to the store');
        $warnings = array_values(array_filter(
            $this->logger->at('warning'),
            static fn (string $l): bool => str_contains($l, 'PhpSessionStore'),
        ));
        self::assertCount(1, $warnings, 'once per request');
        self::assertStringContainsString('no PHP session is active', $warnings[0]);
    }

    /** A "full app": the container with Laravel's own providers, the token in Laravel's session. */
    public function testAFullAppWithTheServiceProviderAndLaravelsSession(): void
    {
        $session = new Store('lv', new ArraySessionHandler(10));
        $app = function () use ($session): Container {
            $app = new Container();
            Container::setInstance($app);
            $app->instance('config', new Config(['database' => [
                'default' => 'mysql',
                'connections' => ['mysql' => $this->connectionConfig(['token_store' => 'session'])],
            ]]));
            $app->instance('session.store', $session);
            foreach ([EventServiceProvider::class, DatabaseServiceProvider::class, LagwatchServiceProvider::class] as $p) {
                $provider = new $p($app);
                $provider->register();
            }
            (new DatabaseServiceProvider($app))->boot();
            return $app;
        };
        try {
            $one = $app();
            $c = $one['db']->connection();
            self::assertInstanceOf(LagwatchMySqlConnection::class, $c);
            Item::query()->whereKey(1)->increment('version');
            $expected = (int) $this->sandbox->adminQuery('primary', 'SELECT version FROM lwtest.lv_items WHERE id = 1');
            self::assertNotNull($session->get('lagwatch_rw'), 'the token is in the session');

            $two = $app();
            $next = $two['db']->connection();
            // The middleware after StartSession; the connection would also load at its first statement.
            (new LoadReadYourWrites($two['db']))->handle(null, static fn () => null);
            self::assertSame($c->router()->session()->toString(), $next->router()->session()->toString());
            self::assertSame($expected, (int) Item::query()->find(1)->version);
        } finally {
            Container::setInstance(null);
        }
    }
}
