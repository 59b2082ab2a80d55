<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\Exception\LagwatchException;
use Lagwatch\Router\Position\Text;

/**
 * A hash that breaks the contract, naming the field and quoting (escaped, cut) what it held.
 * Raised by RecordParser; the contract reader counts it and treats the record as unusable.
 */
final class MalformedException extends \RuntimeException implements LagwatchException
{
    public static function field(string $field, string $why, string $value): self
    {
        return new self($field . ': ' . $why . ', got ' . Text::quoted($value));
    }
}
