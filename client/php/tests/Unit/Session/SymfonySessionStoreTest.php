<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Session;

use Lagwatch\Router\Clock;
use Lagwatch\Router\Position\MariaDbGtidPos;
use Lagwatch\Router\Session;
use Lagwatch\Router\Session\SymfonySessionStore;
use PHPUnit\Framework\TestCase;
use Symfony\Component\HttpFoundation\Session\Session as SymfonySession;
use Symfony\Component\HttpFoundation\Session\Storage\MockArraySessionStorage;

require_once 'Symfony/Component/HttpFoundation/autoload.php';

/** The read-your-writes state in Symfony's session (MockArraySessionStorage), with its 60 s life. */
final class SymfonySessionStoreTest extends TestCase
{
    /** @var object{now: int} */
    private object $clock;
    private MockArraySessionStorage $storage;
    private ?SymfonySession $current = null;

    protected function setUp(): void
    {
        $this->clock = new class () implements Clock {
            public int $now = 1796004314440;

            public function nowMs(): int
            {
                return $this->now;
            }
        };
        $this->storage = new MockArraySessionStorage();
    }

    /**
     * One request's view of the user's session: the previous request's session is saved (as
     * Symfony does at the end of a request) and a new Session object opens the same storage.
     */
    private function request(): SymfonySession
    {
        if ($this->current?->isStarted()) {
            $this->current->save();
        }
        return $this->current = new SymfonySession($this->storage);
    }

    private static function written(): Session
    {
        $s = new Session();
        $s->wrote(MariaDbGtidPos::parse('0-1-120'), 5);
        return $s;
    }

    public function testASavedSessionIsFoundByTheNextRequestOfTheSameUser(): void
    {
        $first = new SymfonySessionStore($this->request(), clock: $this->clock);
        self::assertNull($first->load());
        $first->save(self::written());

        $this->clock->now += 59999;
        $loaded = (new SymfonySessionStore($this->request(), clock: $this->clock))->load();
        self::assertNotNull($loaded);
        self::assertSame(self::written()->toString(), $loaded->toString());
        self::assertSame('0-1-120', $loaded->token()?->toString());
    }

    public function testItIsForgottenAfterItsLife(): void
    {
        (new SymfonySessionStore($this->request(), clock: $this->clock))->save(self::written());
        $this->clock->now += SymfonySessionStore::DEFAULT_LIFE_MS;
        $session = $this->request();
        self::assertNull((new SymfonySessionStore($session, clock: $this->clock))->load());
        self::assertFalse($session->has(SymfonySessionStore::DEFAULT_KEY), 'the expired entry is removed');
    }

    public function testALaterSaveReplacesTheTokenAndRenewsTheLife(): void
    {
        $store = new SymfonySessionStore($this->request(), 'rw', 1000, $this->clock);
        $store->save(self::written());
        $this->clock->now += 900;
        $newer = new Session();
        $newer->wrote(MariaDbGtidPos::parse('0-1-121'), 6);
        $store->save($newer);
        $this->clock->now += 900;
        self::assertSame('0-1-121', $store->load()?->token()?->toString());
        self::assertTrue($this->request()->has('rw'));
    }

    public function testClearForgetsIt(): void
    {
        $store = new SymfonySessionStore($this->request(), clock: $this->clock);
        $store->save(self::written());
        $store->clear();
        self::assertNull($store->load());
    }

    /** @return iterable<string, array{mixed}> */
    public static function garbage(): iterable
    {
        yield 'a string' => ['{"v":1}'];
        yield 'no expiry' => [['session' => '{"v":1}']];
        yield 'not a session' => [['session' => '{"v":2}', 'expires_ms' => PHP_INT_MAX]];
        yield 'a token that does not parse' => [['session' => '{"v":1,"kind":"mariadb_gtid","token":"x; DROP"}', 'expires_ms' => PHP_INT_MAX]];
    }

    /** @dataProvider garbage */
    public function testWhatItDidNotWriteLoadsAsNothingAndIsRemoved(mixed $value): void
    {
        $session = $this->request();
        $session->set(SymfonySessionStore::DEFAULT_KEY, $value);
        self::assertNull((new SymfonySessionStore($session, clock: $this->clock))->load());
        self::assertFalse($session->has(SymfonySessionStore::DEFAULT_KEY));
    }
}
