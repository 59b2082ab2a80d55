<?php

declare(strict_types=1);

namespace Lagwatch\Router\Position;

/**
 * Small helpers for outside text: unsigned 64-bit decimals kept as canonical strings (PHP's int
 * is signed, and MariaDB sequence numbers and binary log offsets are unsigned), and quoting of
 * hostile text for error messages and log lines.
 *
 * @internal
 */
final class Text
{
    private const U64_MAX = '18446744073709551615';

    /**
     * $s as the canonical decimal of an unsigned 64-bit number (no leading zeros), or null when it
     * is not one: digits only (no sign, no space), at least one, at most 2^64 - 1. Leading zeros
     * are accepted, as std::from_chars accepts them.
     */
    public static function u64(string $s): ?string
    {
        if ($s === '' || strspn($s, '0123456789') !== strlen($s)) {
            return null;
        }
        $s = ltrim($s, '0');
        if ($s === '') {
            return '0';
        }
        if (strlen($s) > 20 || (strlen($s) === 20 && strcmp($s, self::U64_MAX) > 0)) {
            return null;
        }
        return $s;
    }

    /** Compares two canonical u64 strings: <0, 0, >0. */
    public static function cmpU64(string $a, string $b): int
    {
        return strlen($a) <=> strlen($b) ?: strcmp($a, $b) <=> 0;
    }

    /**
     * A base-10 signed 64-bit integer as std::from_chars reads one: an optional '-', then digits
     * (leading zeros allowed), nothing else, within range. Null otherwise.
     */
    public static function i64(string $s): ?int
    {
        $negative = $s !== '' && $s[0] === '-';
        $digits = $negative ? substr($s, 1) : $s;
        if ($digits === '' || strspn($digits, '0123456789') !== strlen($digits)) {
            return null;
        }
        $digits = ltrim($digits, '0');
        if ($digits === '') {
            return 0;
        }
        $limit = $negative ? '9223372036854775808' : '9223372036854775807';
        if (strlen($digits) > 19 || (strlen($digits) === 19 && strcmp($digits, $limit) > 0)) {
            return null;
        }
        if ($negative && $digits === '9223372036854775808') {
            return PHP_INT_MIN;
        }
        return $negative ? -(int) $digits : (int) $digits;
    }

    /** True when $s has $min..$max characters, each an ASCII letter or digit or one of $extra. */
    public static function isToken(string $s, string $extra, int $min, int $max): bool
    {
        $n = strlen($s);
        if ($n < $min || $n > $max) {
            return false;
        }
        $allowed = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789' . $extra;
        return strspn($s, $allowed) === $n;
    }

    /** $s with every ASCII control byte written as \xNN: it can neither split a log line nor reach a terminal. */
    public static function escapeControl(string $s): string
    {
        return (string) preg_replace_callback(
            '/[\x00-\x1f\x7f]/',
            static fn (array $m): string => sprintf('\\x%02x', ord($m[0])),
            $s
        );
    }

    /** Text from outside in an error message: escaped, quoted, and cut so it cannot grow a log line. */
    public static function quoted(string $s, int $max = 64): string
    {
        $out = '"' . self::escapeControl(substr($s, 0, $max)) . '"';
        if (strlen($s) > $max) {
            $out .= '... (' . strlen($s) . ' bytes)';
        }
        return $out;
    }
}
