<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Session;

use Illuminate\Cache\ArrayStore;
use Illuminate\Cache\Repository;
use Illuminate\Session\ArraySessionHandler;
use Illuminate\Session\Store;
use Lagwatch\Router\Position\MariaDbGtidPos;
use Lagwatch\Router\Session;
use Lagwatch\Router\Session\LaravelSessionStore;
use Lagwatch\Router\Session\PhpSessionStore;
use Lagwatch\Router\Session\Psr16Store;
use Lagwatch\Router\Session\TokenStore;
use Lagwatch\Router\Tests\Unit\MemoryLogger;
use PHPUnit\Framework\TestCase;
use Psr\SimpleCache\CacheInterface;

/** The three token stores: round trip, expiry after their life, clear, and what they refuse. */
final class TokenStoreTest extends TestCase
{
    private const T0 = 1_700_000_000_000;

    private ManualClock $clock;
    /** @var array<string, mixed>|null */
    private ?array $savedSession = null;

    protected function setUp(): void
    {
        $this->clock = new ManualClock(self::T0);
        $this->savedSession = $_SESSION ?? null;
        // A real PHP session (phpunit.xml's session settings), as session_start() gives a request.
        session_id('lwtokenstore' . getmypid());
        self::assertTrue(session_start());
        $_SESSION = [];
    }

    protected function tearDown(): void
    {
        if (session_status() === PHP_SESSION_ACTIVE) {
            session_destroy();
        }
        if ($this->savedSession === null) {
            unset($_SESSION);
        } else {
            $_SESSION = $this->savedSession;
        }
    }

    private static function written(): Session
    {
        $s = new Session();
        $s->wrote(MariaDbGtidPos::parse('0-1-42'), self::T0);
        return $s;
    }

    /** @return array<string, array{callable(ManualClock, int): TokenStore}> */
    public static function stores(): array
    {
        return [
            'php session' => [static fn (ManualClock $c, int $life): TokenStore => new PhpSessionStore('lw', $life, $c)],
            'psr-16 (Illuminate ArrayStore)' => [static fn (ManualClock $c, int $life): TokenStore => new Psr16Store(
                new Repository(new ArrayStore()),
                'client-1',
                $life,
                'lagwatch:rw:',
                $c,
            )],
            'laravel session' => [static fn (ManualClock $c, int $life): TokenStore => new LaravelSessionStore(
                new Store('test', new ArraySessionHandler(10)),
                'lw',
                $life,
                $c,
            )],
        ];
    }

    /** @dataProvider stores */
    public function testASavedSessionIsLoadedWithItsTokenUntilItsLifeEnds(callable $make): void
    {
        $store = $make($this->clock, 60);
        self::assertNull($store->load(), 'nothing saved yet');
        $store->save(self::written());
        $loaded = $store->load();
        self::assertNotNull($loaded);
        self::assertSame(self::written()->toString(), $loaded->toString());
        $this->clock->ms = self::T0 + 59_999;
        self::assertNotNull($store->load(), 'still within 60 s');
        $this->clock->ms = self::T0 + 60_000;
        self::assertNull($store->load(), 'expired after 60 s');
    }

    /** @dataProvider stores */
    public function testTheLifeIsConfigurableAndASaveReplacesTheLastOne(callable $make): void
    {
        $store = $make($this->clock, 5);
        $store->save(self::written());
        $untokened = new Session();
        $untokened->wrote(null, self::T0 + 1000);
        $this->clock->ms = self::T0 + 1000;
        $store->save($untokened);
        self::assertSame($untokened->toString(), $store->load()?->toString());
        $this->clock->ms = self::T0 + 5999;
        self::assertNotNull($store->load());
        $this->clock->ms = self::T0 + 6000;
        self::assertNull($store->load());
    }

    /** @dataProvider stores */
    public function testClearForgetsTheSession(callable $make): void
    {
        $store = $make($this->clock, 60);
        $store->save(self::written());
        $store->clear();
        self::assertNull($store->load());
    }

    /** @dataProvider stores */
    public function testALifeOutOfRangeIsRefused(callable $make): void
    {
        $this->expectException(\InvalidArgumentException::class);
        $make($this->clock, 0);
    }

    public function testPhpSessionStoreKeepsAnEnvelopeUnderItsKeyAndIgnoresWhatItDidNotWrite(): void
    {
        $store = new PhpSessionStore('lw', 60, $this->clock);
        $store->save(self::written());
        self::assertSame(
            ['session' => self::written()->toString(), 'expires_at_ms' => self::T0 + 60_000],
            $_SESSION['lw'],
        );
        foreach (
            [
                'text' => 'garbage',
                'no stamp' => ['session' => self::written()->toString()],
                'bad session' => ['session' => '{"v":1,"kind":"mariadb_gtid","token":"x"}', 'expires_at_ms' => self::T0 + 1],
                'extra field' => ['session' => '{"v":1}', 'expires_at_ms' => self::T0 + 1, 'x' => 1],
                'stamp as text' => ['session' => '{"v":1}', 'expires_at_ms' => (string) (self::T0 + 1)],
            ] as $name => $value
        ) {
            $_SESSION['lw'] = $value;
            self::assertNull($store->load(), $name);
        }
    }

    public function testPhpSessionStoreWithoutASessionLoadsAndSavesNothingAndWarnsOnce(): void
    {
        session_destroy();
        unset($_SESSION);
        $logger = new MemoryLogger();
        $store = new PhpSessionStore('lw', 60, $this->clock, $logger);
        $store->save(self::written());
        self::assertFalse(isset($_SESSION));
        self::assertNull($store->load());
        $store->save(self::written());
        $warnings = $logger->at('warning');
        self::assertCount(1, $warnings, 'once per store (a request), not per save');
        self::assertStringContainsString('no PHP session is active', $warnings[0]);
        self::assertStringContainsString('session_start()', $warnings[0]);
        // The next request's store warns again.
        (new PhpSessionStore('lw', 60, $this->clock, $logger))->save(self::written());
        self::assertCount(2, $logger->at('warning'));
    }

    public function testPhpSessionStoreAfterTheSessionWasWrittenOutKeepsNothingAndWarns(): void
    {
        $logger = new MemoryLogger();
        $store = new PhpSessionStore('lw', 60, $this->clock);
        $store->setLogger($logger);  // as an integration hands it the router's
        $store->save(self::written());
        session_write_close();
        self::assertNotNull($store->load(), 'what PHP read at session_start() is still there to load');
        $untokened = new Session();
        $untokened->wrote(null, self::T0);
        $store->save($untokened);
        self::assertSame(self::written()->toString(), $_SESSION['lw']['session'], '$_SESSION left alone');
        self::assertCount(1, $logger->at('warning'));
        self::assertTrue(session_start(), 'the session again, as PHP stored it');
        self::assertSame(self::written()->toString(), $store->load()?->toString(), 'the second save was not kept');
    }

    public function testPhpSessionStoreWithoutALoggerWarnsThroughErrorLog(): void
    {
        session_destroy();
        $log = (string) tempnam(sys_get_temp_dir(), 'lw-errlog');
        $previous = ini_set('error_log', $log);
        try {
            $store = new PhpSessionStore('lw', 60, $this->clock);
            $store->save(self::written());
            $store->save(self::written());
        } finally {
            ini_set('error_log', (string) $previous);
        }
        $text = (string) file_get_contents($log);
        unlink($log);
        self::assertSame(1, substr_count($text, 'PhpSessionStore cannot keep the read-your-writes token'), $text);
    }

    public function testPsr16StoreUsesTheClientIdsKeyAndTheLifeAsTtl(): void
    {
        $cache = $this->createMock(CacheInterface::class);
        $cache->expects(self::once())->method('set')->with(
            'lagwatch:rw:abc',
            ['session' => self::written()->toString(), 'expires_at_ms' => self::T0 + 30_000],
            30,
        )->willReturn(true);
        $store = new Psr16Store($cache, 'abc', 30, 'lagwatch:rw:', $this->clock);
        self::assertSame('lagwatch:rw:abc', $store->key());
        $store->save(self::written());
    }

    public function testTwoClientsOfOneCacheDoNotSeeEachOthersTokens(): void
    {
        $cache = new Repository(new ArrayStore());
        $a = new Psr16Store($cache, 'a', 60, 'lagwatch:rw:', $this->clock);
        $b = new Psr16Store($cache, 'b', 60, 'lagwatch:rw:', $this->clock);
        $a->save(self::written());
        self::assertNotNull($a->load());
        self::assertNull($b->load());
    }

    public function testAFailingCacheNeitherThrowsNorLoadsAndIsLogged(): void
    {
        $cache = $this->createMock(CacheInterface::class);
        $cache->method('get')->willThrowException(new \RuntimeException('cache down'));
        $cache->method('set')->willThrowException(new \RuntimeException('cache down'));
        $cache->method('delete')->willThrowException(new \RuntimeException('cache down'));
        $logger = new MemoryLogger();
        $store = new Psr16Store($cache, 'abc', 60, 'lagwatch:rw:', $this->clock, $logger);
        $store->save(self::written());
        self::assertNull($store->load());
        $store->clear();
        $warnings = $logger->at('warning');
        self::assertCount(3, $warnings);
        foreach ($warnings as $w) {
            self::assertStringContainsString('cache down', $w);
        }
    }

    /** @return array<string, array{string}> */
    public static function badClientIds(): array
    {
        return ['empty' => [''], 'colon' => ['a:b'], 'slash' => ['a/b'], 'space' => ['a b'], 'newline' => ["a\n"],
            'too long' => [str_repeat('x', 201)]];
    }

    /** @dataProvider badClientIds */
    public function testPsr16StoreRefusesClientIdsThatAreNotKeys(string $id): void
    {
        $this->expectException(\InvalidArgumentException::class);
        new Psr16Store(new Repository(new ArrayStore()), $id);
    }

    public function testTheDefaultLifeIsSixtySeconds(): void
    {
        $session = new Store('test', new ArraySessionHandler(10));
        $store = new LaravelSessionStore($session, 'lw', clock: $this->clock);
        $store->save(self::written());
        self::assertSame(self::T0 + 60_000, $session->get('lw')['expires_at_ms']);
    }
}
