<?php

declare(strict_types=1);

namespace Lagwatch\Router\Session;

use Illuminate\Contracts\Session\Session as IlluminateSession;
use Lagwatch\Router\Clock;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Session;
use Lagwatch\Router\SystemClock;

/**
 * A session's read-your-writes state in Laravel's session (Illuminate\Contracts\Session\Session,
 * under $key), with the time it expires (60 s by default). Laravel's StartSession middleware
 * writes the session out at the end of the request's handling, before the response is sent, so
 * a token saved during the request is there for the next one.
 */
final class LaravelSessionStore implements TokenStore
{
    private readonly int $lifeSeconds;
    private readonly Clock $clock;

    /** @throws ConfigException (an \InvalidArgumentException) for an empty key or a life out of 1..86400 s */
    public function __construct(
        private readonly IlluminateSession $session,
        private readonly string $key = 'lagwatch_rw',
        int $lifeSeconds = StoredSession::DEFAULT_LIFE_SECONDS,
        ?Clock $clock = null,
    ) {
        if ($key === '') {
            throw new ConfigException('LaravelSessionStore: the session key is empty');
        }
        $this->lifeSeconds = StoredSession::checkLife($lifeSeconds);
        $this->clock = $clock ?? new SystemClock();
    }

    public function load(): ?Session
    {
        return StoredSession::unwrap($this->session->get($this->key), $this->clock);
    }

    public function save(Session $session): void
    {
        $this->session->put($this->key, StoredSession::wrap($session, $this->lifeSeconds, $this->clock));
    }

    public function clear(): void
    {
        $this->session->forget($this->key);
    }
}
