<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Exception\ConfigException;

/**
 * Typed reads from the configuration array, each failure naming the key.
 *
 * @internal
 */
final class ConfigReader
{
    /** @param array<array-key, mixed> $values */
    public function __construct(private readonly array $values, private readonly string $path = '')
    {
    }

    public function key(string $name): string
    {
        return $this->path === '' ? $name : $this->path . '.' . $name;
    }

    public function has(string $name): bool
    {
        return array_key_exists($name, $this->values) && $this->values[$name] !== null;
    }

    public function section(string $name): self
    {
        $v = $this->values[$name] ?? [];
        if (!is_array($v)) {
            throw new ConfigException($this->key($name) . ': not an array');
        }
        return new self($v, $this->key($name));
    }

    /** @return array<array-key, mixed> */
    public function array(string $name): array
    {
        $v = $this->values[$name] ?? [];
        if (!is_array($v)) {
            throw new ConfigException($this->key($name) . ': not an array');
        }
        return $v;
    }

    /** @return list<string> */
    public function strings(string $name): array
    {
        $out = [];
        foreach ($this->array($name) as $v) {
            if (!is_string($v) || $v === '') {
                throw new ConfigException($this->key($name) . ': not a list of non-empty strings');
            }
            $out[] = $v;
        }
        return $out;
    }

    public function string(string $name, ?string $default = null): string
    {
        $v = $this->values[$name] ?? $default;
        if (!is_string($v) || $v === '') {
            throw new ConfigException($this->key($name) . ($v === null ? ': missing' : ': not a non-empty string'));
        }
        return $v;
    }

    public function optionalString(string $name): ?string
    {
        $v = $this->values[$name] ?? null;
        if ($v !== null && !is_string($v)) {
            throw new ConfigException($this->key($name) . ': not a string');
        }
        return $v;
    }

    public function int(string $name, int $default, int $min, int $max): int
    {
        $v = $this->values[$name] ?? $default;
        if (!is_int($v) || $v < $min || $v > $max) {
            throw new ConfigException($this->key($name) . ': not an integer in [' . $min . ', ' . $max . ']');
        }
        return $v;
    }

    public function float(string $name, float $default, float $min, float $max): float
    {
        $v = $this->values[$name] ?? $default;
        if ((!is_int($v) && !is_float($v)) || $v < $min || $v > $max) {
            throw new ConfigException($this->key($name) . ': not a number in [' . $min . ', ' . $max . ']');
        }
        return (float) $v;
    }

    public function bool(string $name, bool $default): bool
    {
        $v = $this->values[$name] ?? $default;
        if (!is_bool($v)) {
            throw new ConfigException($this->key($name) . ': not true or false');
        }
        return $v;
    }

    /**
     * @template T of object
     * @param class-string<T> $class
     * @return ?T
     */
    public function object(string $name, string $class): ?object
    {
        $v = $this->values[$name] ?? null;
        if ($v !== null && !$v instanceof $class) {
            throw new ConfigException($this->key($name) . ': not a ' . $class);
        }
        return $v;
    }

    /** @param list<string> $known */
    public function rejectUnknown(array $known): void
    {
        foreach (array_keys($this->values) as $k) {
            if (!in_array((string) $k, $known, true)) {
                throw new ConfigException(
                    $this->key((string) $k) . ': unknown key (known: ' . implode(', ', $known) . ')'
                );
            }
        }
    }
}
