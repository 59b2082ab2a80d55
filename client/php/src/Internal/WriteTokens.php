<?php

declare(strict_types=1);

namespace Lagwatch\Router\Internal;

use Lagwatch\Router\Clock;
use Lagwatch\Router\Contract\Contract;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Routing\ReadYourWrites;
use Lagwatch\Router\Session;

/**
 * The read-your-writes token a Router owes its session after a write (docs/routing.md,
 * "Read-your-writes"): owed once a write is routed, taken once no transaction is open, on the
 * primary connection that wrote, of the kind the replicas publish (or the configured one). Without
 * one (no kind known, no privilege, an empty @@last_gtid) the session keeps the write's time.
 *
 * @internal the Router's
 */
final class WriteTokens
{
    private bool $owed = false;
    /** The position kind the replicas' records carry, from the last readable contract. */
    private ?PositionKind $knownKind = null;

    public function __construct(
        private readonly ?PositionKind $configuredKind,
        private readonly Clock $clock,
        private readonly RouterStats $stats,
        private readonly RouterLog $log,
    ) {
    }

    public function owe(): void
    {
        $this->owed = true;
    }

    public function owed(): bool
    {
        return $this->owed;
    }

    /** The kind of position the replicas publish, kept from a readable contract. */
    public function learn(Contract $contract): void
    {
        if ($contract->readable) {
            $this->knownKind = $contract->positionKind() ?? $this->knownKind;
        }
    }

    /** Takes the owed token on $primary (the connection that wrote) into $session; no longer owed. */
    public function take(Session $session, ?\PDO $primary): void
    {
        $this->owed = false;
        $kind = $this->configuredKind ?? $this->knownKind;
        [$token, $why] = $primary === null || $kind === null
            ? [null, $kind === null ? 'no position kind known yet (no replica record read)' : 'no primary connection']
            : ReadYourWrites::takeToken($primary, $kind);
        $session->wrote($token, $this->clock->nowMs());
        if ($token !== null) {
            $this->stats->add('tokens_taken');
            return;
        }
        $this->stats->add('untokened_writes');
        $this->log->untokenedWrite($why);
    }
}
