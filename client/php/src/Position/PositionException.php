<?php

declare(strict_types=1);

namespace Lagwatch\Router\Position;

use Lagwatch\Router\Exception\LagwatchException;

/**
 * Text that is not a position of the kind asked for. Raised by Positions::parse; the router
 * catches it (a malformed record is unusable, a malformed token is no token) and never lets it
 * reach the application.
 */
final class PositionException extends \RuntimeException implements LagwatchException
{
}
