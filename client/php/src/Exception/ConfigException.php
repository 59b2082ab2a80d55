<?php

declare(strict_types=1);

namespace Lagwatch\Router\Exception;

/** The Router's configuration is invalid; the message names the key. Thrown at construction only. */
final class ConfigException extends \InvalidArgumentException
{
}
