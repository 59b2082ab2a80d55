<?php

declare(strict_types=1);

namespace Lagwatch\Router\Internal;

use Lagwatch\Router\Contract\ContractReader;
use Lagwatch\Router\Routing\Decision;
use Lagwatch\Router\Routing\Feedback;
use Lagwatch\Router\Routing\Reason;

/**
 * A Router's counters (Router::stats()) and its rw_stats accounting: each read's fields are
 * counted here and queued as HINCRBY commands that ride along with the contract reader's next
 * round trip (or its flush()).
 *
 * @internal the Router's
 */
final class RouterStats
{
    /** @var array<string, int> */
    private array $counters = [
        'decisions' => 0,
        'reads_replica' => 0,
        'reads_master' => 0,
        'degrade_attempts' => 0,
        'degrade_successes' => 0,
        'primary_only' => 0,
        'fail_fast' => 0,
        'asks' => 0,
        'asks_reached' => 0,
        'tokens_taken' => 0,
        'untokened_writes' => 0,
        'replica_connect_errors' => 0,
        'replica_read_errors' => 0,
        'late_answers' => 0,
        'redis_unavailable_reads' => 0,
    ];

    public function __construct(private readonly ContractReader $reader, private readonly string $app)
    {
    }

    /** +1 to one of the router's own counters. */
    public function add(string $counter): void
    {
        $this->counters[$counter] = ($this->counters[$counter] ?? 0) + 1;
    }

    /** A decision carried out (routeInfo() now explains it): decisions, primary_only, redis_unavailable_reads. */
    public function decided(Decision $d): void
    {
        ++$this->counters['decisions'];
        if (!$d->isRead()) {
            ++$this->counters['primary_only'];
        } elseif ($d->reason === Reason::RedisUnavailable) {
            ++$this->counters['redis_unavailable_reads'];
        }
    }

    /**
     * Counts a read in rw_stats (queued for the next round trip) and locally; $served: it was
     * answered where it was sent (connectionFor cannot know: a connection handed out counts).
     */
    public function read(Decision $d, bool $served): void
    {
        $fields = Feedback::fields($d, $served);
        foreach ($fields as $f) {
            $this->add($f);
        }
        $this->reader->queue(Feedback::commands($this->app, $fields));
    }

    /**
     * Router::stats(): the rw_stats fields counted (reads_replica, reads_replica:<id>,
     * reads_master, degrade_attempts, degrade_successes) whether Redis took them or not; the
     * router's own (decisions, primary_only (statements that needed the primary: writes, locking
     * reads, transactions, forced), fail_fast, asks, asks_reached, tokens_taken,
     * untokened_writes, replica_connect_errors, replica_read_errors (a replica read that timed
     * out or lost its connection), late_answers (a replica's answer after its deadline,
     * discarded), redis_unavailable_reads); and the contract reader's (refreshes, redis_errors,
     * malformed, missing, served_from_cache, feedback_sent, feedback_lost).
     *
     * @return array<string, int>
     */
    public function all(): array
    {
        return $this->counters + $this->reader->counters();
    }
}
