<?php

declare(strict_types=1);

namespace Lagwatch\Router\Internal;

use Lagwatch\Router\Connections;
use Lagwatch\Router\Contract\Contract;
use Lagwatch\Router\Contract\ContractReader;
use Lagwatch\Router\Exception\PrimaryUnavailableException;
use Lagwatch\Router\RandomSource;
use Lagwatch\Router\RouteInfo;
use Lagwatch\Router\RouterConfig;
use Lagwatch\Router\Routing\Decider;
use Lagwatch\Router\Routing\Decision;
use Lagwatch\Router\Routing\ReadYourWrites;
use Lagwatch\Router\Routing\Reason;
use Lagwatch\Router\Routing\Statement;
use Lagwatch\Router\Routing\Target;
use Lagwatch\Router\Session;
use Lagwatch\Router\Sql\SqlClass;

/**
 * Carries out a Router's decisions: the decider's choice for a statement, a replica asked
 * whether it has the session's token (AskReplica), the connection opened — a replica whose
 * connect fails is passed over and the decider asked again without it — or the statement refused
 * at once when the primary cannot take it (PrimaryUnavailableException). Each decision carried
 * out is explained: routeInfo() (last()), the counters, the debug line and episodes.
 *
 * @internal the Router's
 */
final class Dispatcher
{
    private ?RouteInfo $last = null;

    public function __construct(
        private readonly RouterConfig $config,
        private readonly RandomSource $random,
        private readonly Decider $decider,
        private readonly Connections $connections,
        private readonly ContractReader $reader,
        private readonly RouterStats $stats,
        private readonly RouterLog $log,
    ) {
    }

    /** The last decision carried out, explained (null before the first). */
    public function last(): ?RouteInfo
    {
        return $this->last;
    }

    /**
     * The connection for $statement (of $class) and the decision it was sent by; the rw_stats
     * count of a read is the caller's once it knows whether the read was served (a refused one
     * is counted here).
     *
     * @param bool $late the read again after a replica's late answer: the primary (or fail fast)
     * @return array{\PDO, Decision}
     * @throws PrimaryUnavailableException nothing was sent
     * @throws \PDOException the primary's connection could not be opened
     */
    public function carryOut(Statement $statement, SqlClass $class, Session $session, Contract $contract, int $now, bool $late): array
    {
        $excluded = $this->connections->failed($now);
        // A pass that does not return has excluded one more replica (its connection failed), so
        // the decider runs out of replicas to choose and this ends.
        for (;;) {
            $d = $this->decider->decide($statement, $session, $contract, $this->random, $now, $excluded);
            if ($late) {
                $d = $d->target === Target::FailFast
                    ? $d->with(Target::FailFast, $d->reason, null, true)
                    : $d->with(Target::Primary, Reason::LateAnswer);
            }
            if ($d->target === Target::AskReplica) {
                $d = $this->ask($d, $session, $now, $excluded);
                if ($d === null) {
                    continue;
                }
            }
            if ($d->target === Target::FailFast) {
                $this->finish($d, $class);
                $this->stats->read($d, false);
                $this->stats->add('fail_fast');
                throw new PrimaryUnavailableException(
                    sprintf(
                        "lagwatch: the primary %s cannot take this statement (circuit %s): not sent",
                        $d->primary !== '' ? $d->primary : $this->config->primary->id,
                        $d->circuit->value,
                    ),
                    $d->circuit->value,
                    $d->reasonLabel(),
                    $d->primary,
                );
            }
            if ($d->target === Target::Replica) {
                $pdo = $this->replica($d->replica->id, $now, $excluded);
                if ($pdo === null) {
                    continue;
                }
            } else {
                try {
                    $pdo = $this->connections->primary();
                } catch (\PDOException $e) {
                    $this->finish($d, $class);
                    $this->stats->read($d, false);
                    throw $e;
                }
            }
            $this->finish($d, $class);
            return [$pdo, $d];
        }
    }

    /**
     * Carries out an AskReplica decision: the replica read when it answers "reached", else its
     * fallback. Null when its connection failed (it is then excluded).
     *
     * @param list<string> $excluded
     */
    private function ask(Decision $d, Session $session, int $now, array &$excluded): ?Decision
    {
        $pdo = $this->replica($d->replica->id, $now, $excluded);
        if ($pdo === null) {
            return null;
        }
        $this->stats->add('asks');
        if (ReadYourWrites::ask($pdo, $session->token())) {
            $this->stats->add('asks_reached');
            return $d->with(Target::Replica, Reason::CaughtUp);
        }
        return $d->fallback === Target::FailFast
            ? $d->with(Target::FailFast, Reason::PrimaryCircuitOpen, null, true)
            : $d->with(Target::Primary, Reason::ReadYourWrites);
    }

    /** @param list<string> $excluded */
    private function replica(string $id, int $now, array &$excluded): ?\PDO
    {
        try {
            return $this->connections->replica($id, $now);
        } catch (\PDOException $e) {
            $excluded[] = $id;
            $this->stats->add('replica_connect_errors');
            $this->log->replicaConnectFailed($id, $e, $this->config->replicaRetryMs);
            return null;
        }
    }

    /** Records the decision as carried out: routeInfo, the counters, the debug line, the episode. */
    private function finish(Decision $d, SqlClass $class): void
    {
        $this->last = RouteInfo::of($d, $class, $this->config->primary->id, $this->reader->lastError());
        $this->stats->decided($d);
        $this->log->decision($this->last, $d);
    }
}
