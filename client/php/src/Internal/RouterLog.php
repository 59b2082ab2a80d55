<?php

declare(strict_types=1);

namespace Lagwatch\Router\Internal;

use Lagwatch\Router\Contract\Contract;
use Lagwatch\Router\Contract\ContractReader;
use Lagwatch\Router\RouteInfo;
use Lagwatch\Router\RouterConfig;
use Lagwatch\Router\Routing\Decision;
use Psr\Log\LoggerInterface;

/**
 * What a Router says through its PSR-3 logger, and when: episodes are logged when they start and
 * end (Redis unreadable, no usable replica), not per statement; a malformed record at most every
 * 10 s; TLS without verification once per Router; a debug line per decision.
 *
 * @internal the Router's
 */
final class RouterLog
{
    /** A problem with the contract (a malformed record) is logged at most this often. */
    private const PROBLEM_LOG_INTERVAL_MS = 10000;

    private bool $redisEpisode = false;
    private bool $degradedEpisode = false;
    private int $degradedReads = 0;
    /** @var array<string, int> problem text => when it was last logged, unix ms */
    private array $problemLoggedAtMs = [];

    public function __construct(private readonly ?LoggerInterface $logger)
    {
    }

    /**
     * @param string $level a PSR-3 level ('debug', 'info', 'warning')
     * @param array<string, mixed> $context
     */
    public function log(string $level, string $message, array $context = []): void
    {
        $this->logger?->log($level, $message, $context);
    }

    /** One warning per connection whose certificate is not checked (verify_server_cert false). */
    public function unverifiedTls(RouterConfig $c): void
    {
        $targets = [];
        if ($c->redis->tls->enabled && !$c->redis->tls->verifyServerCert) {
            $targets['redis.tls'] = $c->redis->describe();
        }
        foreach (['primary' => $c->primary] + $c->replicas as $name => $server) {
            if ($server->tls->enabled && !$server->tls->verifyServerCert) {
                $targets[($name === 'primary' ? 'primary' : 'replicas.' . $name) . '.tls'] = 'MySQL ' . $server->id;
            }
        }
        foreach ($targets as $key => $target) {
            $this->log('warning', 'route: TLS to {target} does not verify its certificate ({key}.verify_server_cert'
                . ' is false): anyone on the path can pose as the server', ['target' => $target, 'key' => $key]);
        }
    }

    /** What a refresh says beyond the decision: the Redis episode, malformed records. */
    public function contract(Contract $contract, ContractReader $reader, int $now): void
    {
        if (!$contract->readable) {
            if (!$this->redisEpisode) {
                $this->redisEpisode = true;
                $this->log('warning', "route: cannot read lagwatch's contract from Redis ({error}): every read goes"
                    . ' to the primary until it can', [
                    'error' => $reader->lastError(),
                ]);
            }
            return;
        }
        if ($this->redisEpisode) {
            $this->redisEpisode = false;
            $this->log('info', "route: lagwatch's contract is readable from Redis again", []);
        }
        foreach ($reader->problems() as $problem) {
            $logged = $this->problemLoggedAtMs[$problem] ?? null;
            if ($logged === null || $now - $logged >= self::PROBLEM_LOG_INTERVAL_MS) {
                $this->problemLoggedAtMs[$problem] = $now;
                $this->log('warning', 'route: skipped malformed contract data: {problem}', ['problem' => $problem]);
            }
        }
    }

    /** A decision carried out: its debug line and, for a read, the no-usable-replica episode. */
    public function decision(RouteInfo $info, Decision $d): void
    {
        $this->log('debug', $info->logLine(), []);
        if (!$d->isRead()) {
            return;
        }
        if ($d->degraded) {
            ++$this->degradedReads;
            if (!$this->degradedEpisode) {
                $this->degradedEpisode = true;
                $this->log('warning', 'route: no usable replica ({reason}): reads go to the primary meanwhile', [
                    'reason' => $d->reasonLabel(),
                ]);
            }
            return;
        }
        if ($this->degradedEpisode) {
            $this->log('info', 'route: a replica is usable again after {reads} reads without one', [
                'reads' => $this->degradedReads,
            ]);
            $this->degradedEpisode = false;
            $this->degradedReads = 0;
        }
    }

    public function replicaConnectFailed(string $id, \Throwable $e, int $retryMs): void
    {
        $message = $retryMs === 0
            ? 'route: cannot connect to replica {replica} ({error}); skipped for the rest of the request'
            : 'route: cannot connect to replica {replica} ({error}); passed over for {retry_ms} ms';
        $this->log('warning', $message, ['replica' => $id, 'error' => $e->getMessage(), 'retry_ms' => $retryMs]);
    }

    public function replicaReadFailed(string $id, \Throwable $e): void
    {
        $this->log('warning', 'route: a read on replica {replica} failed ({error}); skipped for the rest of'
            . ' the request, the read again elsewhere', [
            'replica' => $id,
            'error' => $e->getMessage(),
        ]);
    }

    public function lateAnswer(?string $replica, int $lateMs): void
    {
        $this->log('debug', 'route: the answer of {replica} came {late_ms} ms after its deadline: discarded,'
            . ' the read again on the primary', ['replica' => $replica, 'late_ms' => $lateMs]);
    }

    public function untokenedWrite(string $why): void
    {
        $this->log(
            'debug',
            'route: no read-your-writes token after a write ({why}): the session reads from the primary'
            . ' until a replica proves by time that it has the write',
            ['why' => $why],
        );
    }
}
