<?php

declare(strict_types=1);

namespace Lagwatch\Router;

/** Uniform integers for the weighted choice. Injected so tests are deterministic. */
interface RandomSource
{
    /** A uniformly distributed integer in [0, $n), $n >= 1. */
    public function below(int $n): int;
}
