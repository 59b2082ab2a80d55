<?php

declare(strict_types=1);

namespace Lagwatch\Router\Exception;

/** Session::fromString was given text that is not a session's (corrupted or forged storage). */
final class InvalidSessionException extends \InvalidArgumentException implements LagwatchException
{
}
