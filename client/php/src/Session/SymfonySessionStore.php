<?php

declare(strict_types=1);

namespace Lagwatch\Router\Session;

use Lagwatch\Router\Clock;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Exception\InvalidSessionException;
use Lagwatch\Router\Session;
use Lagwatch\Router\SystemClock;
use Symfony\Component\HttpFoundation\Session\SessionInterface;

/**
 * A TokenStore in Symfony's session (symfony/http-foundation's SessionInterface, e.g.
 * $request->getSession()): the router's session as Session::toString() with its expiry, under
 * one attribute ("_lagwatch_router" by default). It is kept for $lifeMs (60 s by default, as
 * docs/routing.md's "Tokens across requests" says) and then forgotten: the next read may go to
 * any usable replica, which is safe once the write is older than the tier's limit plus the key's
 * TTL. Saving writes the attribute (Symfony then writes the session at the end of the request).
 *
 * Not thread-safe (neither is the session).
 */
final class SymfonySessionStore implements TokenStore
{
    public const DEFAULT_KEY = '_lagwatch_router';
    public const DEFAULT_LIFE_MS = 60000;

    private readonly Clock $clock;

    public function __construct(
        private readonly SessionInterface $session,
        private readonly string $key = self::DEFAULT_KEY,
        private readonly int $lifeMs = self::DEFAULT_LIFE_MS,
        ?Clock $clock = null,
    ) {
        if ($lifeMs < 1) {
            throw new ConfigException('lifeMs: at least 1 ms');
        }
        $this->clock = $clock ?? new SystemClock();
    }

    public function load(): ?Session
    {
        $v = $this->session->get($this->key);
        if (!is_array($v) || !is_string($v['session'] ?? null) || !is_int($v['expires_ms'] ?? null)) {
            if ($v !== null) {
                $this->session->remove($this->key);
            }
            return null;
        }
        if ($this->clock->nowMs() >= $v['expires_ms']) {
            $this->session->remove($this->key);
            return null;
        }
        try {
            return Session::fromString($v['session']);
        } catch (InvalidSessionException) {
            $this->session->remove($this->key);
            return null;
        }
    }

    public function save(Session $session): void
    {
        $this->session->set($this->key, [
            'session' => $session->toString(),
            'expires_ms' => $this->clock->nowMs() + $this->lifeMs,
        ]);
    }

    public function clear(): void
    {
        $this->session->remove($this->key);
    }
}
