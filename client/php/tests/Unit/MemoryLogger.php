<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Psr\Log\AbstractLogger;

/** A PSR-3 logger keeping every line, with {placeholders} filled in. */
final class MemoryLogger extends AbstractLogger
{
    /** @var list<array{string, string}> level, message */
    public array $lines = [];

    /** @param array<string, mixed> $context */
    public function log($level, $message, array $context = []): void
    {
        $replace = [];
        foreach ($context as $k => $v) {
            $replace['{' . $k . '}'] = is_scalar($v) ? (string) $v : json_encode($v);
        }
        $this->lines[] = [(string) $level, strtr((string) $message, $replace)];
    }

    /** @return list<string> the messages at $level */
    public function at(string $level): array
    {
        return array_values(array_map(
            static fn (array $l): string => $l[1],
            array_filter($this->lines, static fn (array $l): bool => $l[0] === $level)
        ));
    }
}
