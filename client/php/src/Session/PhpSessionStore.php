<?php

declare(strict_types=1);

namespace Lagwatch\Router\Session;

use Lagwatch\Router\Clock;
use Lagwatch\Router\Session;
use Lagwatch\Router\SystemClock;

/**
 * A session's read-your-writes state in PHP's own session ($_SESSION[$key]), with the time it
 * expires (60 s by default): for applications on session_start(). The session must be started
 * before save() for PHP to keep it; a request without one loads nothing.
 */
final class PhpSessionStore implements TokenStore
{
    private readonly int $lifeSeconds;
    private readonly Clock $clock;

    /**
     * @param string $key the entry in $_SESSION
     * @param int $lifeSeconds how long a saved token is used (1..86400, default 60)
     * @throws \InvalidArgumentException for an empty key or a life out of range
     */
    public function __construct(
        private readonly string $key = 'lagwatch_rw',
        int $lifeSeconds = StoredSession::DEFAULT_LIFE_SECONDS,
        ?Clock $clock = null,
    ) {
        if ($key === '') {
            throw new \InvalidArgumentException('PhpSessionStore: the $_SESSION key is empty');
        }
        $this->lifeSeconds = StoredSession::checkLife($lifeSeconds);
        $this->clock = $clock ?? new SystemClock();
    }

    public function load(): ?Session
    {
        if (!isset($_SESSION) || !is_array($_SESSION)) {
            return null;
        }
        return StoredSession::unwrap($_SESSION[$this->key] ?? null, $this->clock);
    }

    public function save(Session $session): void
    {
        if (!isset($_SESSION) || !is_array($_SESSION)) {
            // No session started: there is nowhere the next request would look.
            return;
        }
        $_SESSION[$this->key] = StoredSession::wrap($session, $this->lifeSeconds, $this->clock);
    }

    public function clear(): void
    {
        if (isset($_SESSION) && is_array($_SESSION)) {
            unset($_SESSION[$this->key]);
        }
    }
}
