<?php

declare(strict_types=1);

namespace Lagwatch\Router\Session;

use Lagwatch\Router\Clock;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Session;
use Lagwatch\Router\SystemClock;
use Psr\Log\LoggerInterface;
use Psr\SimpleCache\CacheInterface;

/**
 * A session's read-your-writes state in any PSR-16 cache under `<prefix><client id>` (default
 * `lagwatch:rw:<client id>`), with the cache's TTL and an expiry stamp of its own (60 s by
 * default): for clients without a server-side session, as MediaWiki's ChronologyProtector keeps
 * the primary's position under a client id. The client id is the application's: a session or
 * device cookie, an API key, a hash of the user id.
 *
 * PSR-16 reserves `{}()/\@:` in keys: a strict implementation (Symfony's Psr16Cache) rejects the
 * default prefix's colons; pass another prefix (e.g. 'lagwatch.rw.') for those. Illuminate's
 * cache Repository accepts it. A cache that fails never fails the request: load() returns null,
 * save() and clear() log a warning (with a logger) and return.
 */
final class Psr16Store implements TokenStore
{
    private const RESERVED = '{}()/\\@:';
    private const MAX_CLIENT_ID_BYTES = 200;

    private readonly string $cacheKey;
    private readonly int $lifeSeconds;
    private readonly Clock $clock;

    /**
     * @throws ConfigException (an \InvalidArgumentException) for an empty or over-long client id, one with PSR-16's
     *         reserved characters or control characters, or a life out of 1..86400 s
     */
    public function __construct(
        private readonly CacheInterface $cache,
        string $clientId,
        int $lifeSeconds = StoredSession::DEFAULT_LIFE_SECONDS,
        string $prefix = 'lagwatch:rw:',
        ?Clock $clock = null,
        private readonly ?LoggerInterface $logger = null,
    ) {
        if (
            $clientId === '' || strlen($clientId) > self::MAX_CLIENT_ID_BYTES
            || strpbrk($clientId, self::RESERVED) !== false || preg_match('/[\x00-\x20\x7f]/', $clientId) === 1
        ) {
            throw new ConfigException('Psr16Store: a client id is 1..' . self::MAX_CLIENT_ID_BYTES
                . ' bytes without spaces, control characters or ' . self::RESERVED);
        }
        $this->cacheKey = $prefix . $clientId;
        $this->lifeSeconds = StoredSession::checkLife($lifeSeconds);
        $this->clock = $clock ?? new SystemClock();
    }

    /** The cache key this store uses. */
    public function key(): string
    {
        return $this->cacheKey;
    }

    public function load(): ?Session
    {
        try {
            $stored = $this->cache->get($this->cacheKey);
        } catch (\Throwable $e) {
            $this->warn('load', $e);
            return null;
        }
        return StoredSession::unwrap($stored, $this->clock);
    }

    public function save(Session $session): void
    {
        try {
            $this->cache->set(
                $this->cacheKey,
                StoredSession::wrap($session, $this->lifeSeconds, $this->clock),
                $this->lifeSeconds,
            );
        } catch (\Throwable $e) {
            $this->warn('save', $e);
        }
    }

    public function clear(): void
    {
        try {
            $this->cache->delete($this->cacheKey);
        } catch (\Throwable $e) {
            $this->warn('clear', $e);
        }
    }

    private function warn(string $what, \Throwable $e): void
    {
        $this->logger?->warning('lagwatch: PSR-16 token store: {what} failed ({error}); the next request'
            . ' reads without this session\'s token', ['what' => $what, 'error' => $e->getMessage()]);
    }
}
