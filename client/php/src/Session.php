<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Contract\Contract;
use Lagwatch\Router\Contract\ReplicaRecord;
use Lagwatch\Router\Exception\InvalidSessionException;
use Lagwatch\Router\Position\Position;
use Lagwatch\Router\Position\PositionException;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Position\Positions;

/**
 * A session's read-your-writes state (docs/routing.md, "Read-your-writes"): after a write, either
 * a token (the primary's position taken after it) or, when none could be taken, the time of the
 * write on the router's wall clock. A new write replaces both: its token includes everything the
 * session wrote before. Serialisable with toString() so an application can keep it across
 * requests ($_SESSION, a cache): positions never go back, so an old token stays valid.
 *
 * Not thread-safe; one per application session.
 */
final class Session
{
    private const VERSION = 1;
    private const MAX_TEXT_BYTES = 1 << 21;
    /** A bound of days proves nothing useful, and would overflow the arithmetic. */
    private const MAX_USEFUL_DELAY_MS = 1 << 30;

    private ?Position $token = null;
    private ?int $untokenedWriteMs = null;

    public function token(): ?Position
    {
        return $this->token;
    }

    /** When the session's last write happened, unix ms on the router's clock, if it has no token. */
    public function untokenedWriteMs(): ?int
    {
        return $this->untokenedWriteMs;
    }

    /** Whether the session has written something replicas must be proven to have. */
    public function hasWrites(): bool
    {
        return $this->token !== null || $this->untokenedWriteMs !== null;
    }

    /** Records a committed write: its token, or null when none could be taken (then $nowMs is kept). */
    public function wrote(?Position $token, int $nowMs): void
    {
        $this->token = $token;
        $this->untokenedWriteMs = $token === null ? $nowMs : null;
    }

    /**
     * Whether $record proves the replica has the session's writes: its published position
     * includes the token (same kind only); or, without a token, its measurement came after the
     * write by more than its bound: fetched − ttl − delay_ms − clock skew ≥ the write's time (a
     * live key was measured less than ttl before it was read). True for a session that wrote
     * nothing.
     */
    public function seenBy(ReplicaRecord $record, int $ttlMs, int $clockSkewMs): bool
    {
        if ($this->token !== null) {
            return $record->position !== null && $record->position->includes($this->token);
        }
        if ($this->untokenedWriteMs !== null) {
            if ($record->delayMs > self::MAX_USEFUL_DELAY_MS) {
                return false;
            }
            return $record->fetchedAtMs - $ttlMs - $record->delayMs - $clockSkewMs >= $this->untokenedWriteMs;
        }
        return true;
    }

    /**
     * Drops the token once every member of `<prefix>:replicas` publishes a position that includes
     * it, usable or not (a lagging replica can come back within its limit still lacking it), and
     * the untokened time once every member's record proves the write. Optional: keeping them is
     * always correct. A member the router has no record of keeps them.
     */
    public function settle(Contract $contract, int $ttlMs, int $clockSkewMs): void
    {
        if (!$this->hasWrites() || $contract->members === []) {
            return;
        }
        foreach ($contract->members as $id) {
            $r = $contract->replicas[$id] ?? null;
            if ($r === null || !$this->seenBy($r, $ttlMs, $clockSkewMs)) {
                return;
            }
        }
        $this->token = null;
        $this->untokenedWriteMs = null;
    }

    /**
     * The session as text: JSON, {"v":1} with "kind" and "token" or "write_ms" after a write.
     */
    public function toString(): string
    {
        $data = ['v' => self::VERSION];
        if ($this->token !== null) {
            $data['kind'] = $this->token->kind()->value;
            $data['token'] = $this->token->toString();
        } elseif ($this->untokenedWriteMs !== null) {
            $data['write_ms'] = $this->untokenedWriteMs;
        }
        return json_encode($data, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES);
    }

    /**
     * The session toString() wrote. The token is parsed as its kind again, so nothing from the
     * storage reaches SQL unchecked.
     *
     * @throws InvalidSessionException for anything else (other fields, a token that does not parse)
     */
    public static function fromString(string $text): self
    {
        if (strlen($text) > self::MAX_TEXT_BYTES) {
            throw new InvalidSessionException('a session is at most ' . self::MAX_TEXT_BYTES . ' bytes');
        }
        try {
            $data = json_decode($text, true, 4, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw new InvalidSessionException('a session is JSON: ' . $e->getMessage());
        }
        if (!is_array($data) || ($data['v'] ?? null) !== self::VERSION) {
            throw new InvalidSessionException('not a session of version ' . self::VERSION);
        }
        $session = new self();
        $keys = array_keys($data);
        sort($keys);
        if ($keys === ['v']) {
            return $session;
        }
        if ($keys === ['v', 'write_ms']) {
            if (!is_int($data['write_ms']) || $data['write_ms'] < 0) {
                throw new InvalidSessionException('write_ms: not a non-negative integer');
            }
            $session->untokenedWriteMs = $data['write_ms'];
            return $session;
        }
        if ($keys !== ['kind', 'token', 'v'] || !is_string($data['kind']) || !is_string($data['token'])) {
            throw new InvalidSessionException('a session holds v and either kind and token, or write_ms');
        }
        $kind = PositionKind::tryFrom($data['kind']);
        if ($kind === null || $kind === PositionKind::None) {
            throw new InvalidSessionException('kind: not a position kind with tokens');
        }
        try {
            $session->token = Positions::parse($kind, $data['token']);
        } catch (PositionException $e) {
            throw new InvalidSessionException('token: ' . $e->getMessage());
        }
        return $session;
    }
}
