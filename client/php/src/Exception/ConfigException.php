<?php

declare(strict_types=1);

namespace Lagwatch\Router\Exception;

/**
 * A configuration is invalid — the Router's, an integration's (a Laravel `lagwatch` block, Doctrine's
 * `lagwatch` parameter) or a token store's arguments; the message names the key. Thrown at
 * construction only, before anything is connected.
 */
final class ConfigException extends \InvalidArgumentException implements LagwatchException
{
}
