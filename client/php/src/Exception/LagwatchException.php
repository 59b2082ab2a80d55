<?php

declare(strict_types=1);

namespace Lagwatch\Router\Exception;

/**
 * Every exception this package throws implements this marker (PSR style): `catch
 * (LagwatchException $e)` sees them all, whatever their namespace and base class —
 * ConfigException and InvalidSessionException (\InvalidArgumentException),
 * PrimaryUnavailableException (\RuntimeException), TlsException (\PDOException), and the ones
 * the router catches itself and never lets through (Contract\MalformedException,
 * Contract\TransportException, Position\PositionException). Exceptions that are not the
 * package's (a PDOException from a statement, what a run() callable throws) pass through as
 * they are.
 */
interface LagwatchException extends \Throwable
{
}
