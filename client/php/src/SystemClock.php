<?php

declare(strict_types=1);

namespace Lagwatch\Router;

final class SystemClock implements Clock
{
    public function nowMs(): int
    {
        return (int) floor(microtime(true) * 1000);
    }
}
