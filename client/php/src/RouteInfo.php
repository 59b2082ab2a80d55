<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Position\Text;
use Lagwatch\Router\Routing\Decision;
use Lagwatch\Router\Routing\Reason;
use Lagwatch\Router\Routing\Target;
use Lagwatch\Router\Sql\SqlClass;

/** The last routing decision, explained (Router::routeInfo()). Immutable. */
final class RouteInfo
{
    /** Fingerprints longer than this are cut (with "...") in routeInfo() and the log. */
    public const MAX_FINGERPRINT_BYTES = 1024;

    /**
     * @param string $fingerprint the statement with literals as `?`, comments dropped, whitespace collapsed
     * @param ?string $selected 'primary', a replica's "host:port", or null when nothing was sent (fail fast)
     * @param string $server the server's lagwatch id ("host:port"); '' when nothing was sent
     * @param ?int $delayMs the replica's published delay_ms; null for the primary
     * @param ?string $tier the replica's tier; null for the primary
     * @param string $reason "tier1_available", "tier2_fallback", "no_healthy_replica", "in_transaction",
     *        "read_your_writes", "primary_circuit_open", "write", "locking_read", "forced",
     *        "redis_unavailable", "caught_up", "drained_replica", "primary_ambiguous", "late_answer"
     * @param bool $degraded a read that wanted a replica and could not have one
     * @param string $circuit the primary's circuit as read: up, degraded, down, ambiguous, unknown
     * @param string $detail why, beyond the reason: for redis_unavailable what Redis's last round
     *        trip failed with ("Redis 10.0.0.9:6379: TLS unknown_ca: ..." for TLS); '' otherwise
     */
    public function __construct(
        public readonly string $fingerprint,
        public readonly ?string $selected,
        public readonly string $server,
        public readonly ?int $delayMs,
        public readonly ?string $tier,
        public readonly string $reason,
        public readonly bool $degraded,
        public readonly string $circuit,
        public readonly string $detail = '',
    ) {
    }

    /**
     * How $d was carried out for a statement of $class: $primaryId is the configured primary's
     * lagwatch id, $redisError why Redis could not be read (the detail of redis_unavailable).
     */
    public static function of(Decision $d, SqlClass $class, string $primaryId, string $redisError): self
    {
        $onReplica = $d->target === Target::Replica && $d->replica !== null;
        $fingerprint = strlen($class->fingerprint) > self::MAX_FINGERPRINT_BYTES
            ? substr($class->fingerprint, 0, self::MAX_FINGERPRINT_BYTES) . '...'
            : $class->fingerprint;
        return new self(
            $fingerprint,
            $d->target === Target::FailFast ? null : ($onReplica ? $d->replica->id : 'primary'),
            $d->target === Target::FailFast ? '' : ($onReplica ? $d->replica->id : $primaryId),
            $onReplica ? $d->replica->delayMs : null,
            $onReplica ? $d->replica->tier : null,
            $d->reasonLabel(),
            $d->degraded,
            $d->circuit->value,
            $d->reason === Reason::RedisUnavailable ? $redisError : '',
        );
    }

    /** The decision's debug log line: route: SQL fingerprint=… selected=… delay_ms=… reason=… [detail=…] */
    public function logLine(): string
    {
        return sprintf(
            'route: SQL fingerprint=%s selected=%s delay_ms=%s reason=%s%s',
            Text::escapeControl($this->fingerprint),
            $this->selected ?? 'none',
            $this->delayMs === null ? '-' : (string) $this->delayMs,
            $this->reason,
            $this->detail === '' ? '' : ' detail=' . Text::escapeControl($this->detail),
        );
    }
}
