<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Session;

use Lagwatch\Router\Clock;

/** A clock the test sets. */
final class ManualClock implements Clock
{
    public function __construct(public int $ms)
    {
    }

    public function nowMs(): int
    {
        return $this->ms;
    }
}
