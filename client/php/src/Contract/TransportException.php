<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

/** Redis could not be reached or a round trip failed. Caught by the contract reader. */
final class TransportException extends \RuntimeException
{
}
