<?php

declare(strict_types=1);

namespace Lagwatch\Router\Session;

use Lagwatch\Router\Clock;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Session;
use Lagwatch\Router\SystemClock;
use Psr\Log\LoggerAwareInterface;
use Psr\Log\LoggerInterface;

/**
 * A session's read-your-writes state in PHP's own session ($_SESSION[$key]), with the time it
 * expires (60 s by default): for applications on session_start().
 *
 * PHP keeps $_SESSION only while a session is active (session_start() called, session_write_close()
 * not yet). A save() without one keeps nothing — the next request would read without the token —
 * so it says so: a warning through the logger (give it the router's: the constructor, or
 * setLogger()), else through PHP's error_log(), once per store (one per request as the
 * integrations make it), and $_SESSION is left alone. It does not throw: the write it follows has
 * committed, and failing the request for its token would make the application think the write
 * failed. load() reads $_SESSION whenever PHP has filled it (after session_write_close() too).
 */
final class PhpSessionStore implements TokenStore, LoggerAwareInterface
{
    private readonly int $lifeSeconds;
    private readonly Clock $clock;
    private bool $warned = false;

    /**
     * @param string $key the entry in $_SESSION
     * @param int $lifeSeconds how long a saved token is used (1..86400, default 60)
     * @param ?LoggerInterface $logger where a save without a session is reported (the router's);
     *        none: error_log()
     * @throws ConfigException (an \InvalidArgumentException) for an empty key or a life out of range
     */
    public function __construct(
        private readonly string $key = 'lagwatch_rw',
        int $lifeSeconds = StoredSession::DEFAULT_LIFE_SECONDS,
        ?Clock $clock = null,
        private ?LoggerInterface $logger = null,
    ) {
        if ($key === '') {
            throw new ConfigException('PhpSessionStore: the $_SESSION key is empty');
        }
        $this->lifeSeconds = StoredSession::checkLife($lifeSeconds);
        $this->clock = $clock ?? new SystemClock();
    }

    public function setLogger(LoggerInterface $logger): void
    {
        $this->logger = $logger;
    }

    public function load(): ?Session
    {
        if (!isset($_SESSION) || !is_array($_SESSION)) {
            return null;
        }
        return StoredSession::unwrap($_SESSION[$this->key] ?? null, $this->clock);
    }

    /** Keeps $session in $_SESSION; with no session active, keeps nothing and warns (once). */
    public function save(Session $session): void
    {
        if (session_status() !== PHP_SESSION_ACTIVE) {
            $this->warnNoSession();
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

    private function warnNoSession(): void
    {
        if ($this->warned) {
            return;
        }
        $this->warned = true;
        $message = 'lagwatch: PhpSessionStore cannot keep the read-your-writes token: no PHP session is'
            . ' active (call session_start() before the first write, and save before session_write_close());'
            . ' the next request reads without it';
        if ($this->logger !== null) {
            $this->logger->warning($message, ['key' => $this->key]);
            return;
        }
        error_log($message);
    }
}
