<?php

declare(strict_types=1);

namespace Lagwatch\Router;

/**
 * The router's wall clock in unix milliseconds: compared with the agent's measured_at_ms (bounded
 * staleness) and kept in sessions across requests (the no-token rule). Injected for tests.
 */
interface Clock
{
    public function nowMs(): int;
}
