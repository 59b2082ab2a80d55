<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Random\Engine\Mt19937;
use Random\Randomizer;

/** A RandomSource from PHP's Randomizer: seeded (Mersenne Twister) for tests, else the secure engine. */
final class SeededRandom implements RandomSource
{
    private readonly Randomizer $randomizer;

    public function __construct(?int $seed = null)
    {
        $this->randomizer = $seed === null ? new Randomizer() : new Randomizer(new Mt19937($seed));
    }

    public function below(int $n): int
    {
        return $this->randomizer->getInt(0, $n - 1);
    }
}
