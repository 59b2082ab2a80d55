<?php

declare(strict_types=1);

namespace Lagwatch\Router\Session;

use Lagwatch\Router\Clock;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Exception\InvalidSessionException;
use Lagwatch\Router\Session;

/**
 * The form the token stores keep: Session::toString() with the time it expires, so a store whose
 * backend keeps entries longer (a PHP session lives for minutes, a cache may ignore the TTL) still
 * forgets the token after its life. Internal to the stores.
 */
final class StoredSession
{
    /** The default life of a stored token, in seconds (docs/routing.md, "Tokens across requests"). */
    public const DEFAULT_LIFE_SECONDS = 60;
    /** Longer lives keep sessions on the primary for no benefit; a day is plenty. */
    public const MAX_LIFE_SECONDS = 86400;

    /** @throws ConfigException (an \InvalidArgumentException) for a life outside 1..86400 s */
    public static function checkLife(int $lifeSeconds): int
    {
        if ($lifeSeconds < 1 || $lifeSeconds > self::MAX_LIFE_SECONDS) {
            throw new ConfigException('a token store keeps a session 1..' . self::MAX_LIFE_SECONDS
                . ' s, not ' . $lifeSeconds);
        }
        return $lifeSeconds;
    }

    /** @return array{session: string, expires_at_ms: int} */
    public static function wrap(Session $session, int $lifeSeconds, Clock $clock): array
    {
        return ['session' => $session->toString(), 'expires_at_ms' => $clock->nowMs() + $lifeSeconds * 1000];
    }

    /**
     * The session in $stored if it is one wrap() made and it has not expired; null otherwise
     * (nothing stored, expired, another shape, a session that does not parse).
     */
    public static function unwrap(mixed $stored, Clock $clock): ?Session
    {
        if (
            !is_array($stored) || !is_string($stored['session'] ?? null)
            || !is_int($stored['expires_at_ms'] ?? null) || count($stored) !== 2
        ) {
            return null;
        }
        if ($clock->nowMs() >= $stored['expires_at_ms']) {
            return null;
        }
        try {
            return Session::fromString($stored['session']);
        } catch (InvalidSessionException) {
            return null;
        }
    }
}
