<?php

declare(strict_types=1);

namespace Lagwatch\Router\Routing;

/** What the decider knows of a statement. Immutable. */
final class Statement
{
    public function __construct(
        public readonly bool $read = false,
        public readonly bool $locking = false,
        public readonly bool $inTransaction = false,
        public readonly bool $forced = false,
    ) {
    }
}
