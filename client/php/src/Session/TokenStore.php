<?php

declare(strict_types=1);

namespace Lagwatch\Router\Session;

use Lagwatch\Router\Session;

/**
 * Where a session's read-your-writes state lives between requests (docs/routing.md, "Tokens across
 * requests"): the framework's session, PHP's $_SESSION, or a cache under a client id. The stored
 * form is Session::toString(); a store keeps it for a short, documented time (60 s by default) and
 * forgets it after.
 *
 * Implementations never throw for a missing, expired or unreadable entry: load() returns null and
 * the request starts without a token.
 */
interface TokenStore
{
    /** The session saved by an earlier request, or null (none, expired, or not a valid session). */
    public function load(): ?Session;

    /** Keeps $session for the next request of the same user (replacing what was there). */
    public function save(Session $session): void;

    /** Forgets the saved session. */
    public function clear(): void;
}
