<?php

declare(strict_types=1);

namespace Lagwatch\Router\Position;

/**
 * One pass over a GTID set's text, collecting each interval under its source (see MysqlGtidSet).
 *
 * @internal
 */
final class MysqlGtidSetParser
{
    private int $pos = 0;
    private int $intervals = 0;
    /** @var array<string, list<array{int, int}>> */
    private array $sources = [];

    public function __construct(private readonly string $text)
    {
    }

    /**
     * @template T
     * @param callable(array<string, list<array{int, int}>>): T $build
     * @return T
     * @throws PositionException
     */
    public function run(callable $build): mixed
    {
        if (strlen($this->text) > MysqlGtidSet::MAX_TEXT_BYTES) {
            throw $this->bad('longer than ' . MysqlGtidSet::MAX_TEXT_BYTES . ' bytes');
        }
        for (;;) {
            $this->skipSpace();
            while ($this->peek() === ',') {
                ++$this->pos;
                $this->skipSpace();
            }
            if ($this->atEnd()) {
                return $build($this->sources);
            }
            $this->parseMember();
            if (!$this->atEnd() && $this->peek() !== ',') {
                throw $this->bad("expected ',' or ':'");
            }
        }
    }

    private function atEnd(): bool
    {
        return $this->pos >= strlen($this->text);
    }

    private function peek(): string
    {
        return $this->atEnd() ? '' : $this->text[$this->pos];
    }

    private function skipSpace(): void
    {
        while (!$this->atEnd() && MysqlGtidSet::isSpace($this->text[$this->pos])) {
            ++$this->pos;
        }
    }

    private function bad(string $why): PositionException
    {
        return new PositionException(
            'malformed GTID set "' . Text::escapeControl(substr($this->text, 0, 80)) . '": at byte '
            . $this->pos . ': ' . $why
        );
    }

    private static function isDigit(string $c): bool
    {
        return $c !== '' && strspn($c, '0123456789') === 1;
    }

    private static function isLetter(string $c): bool
    {
        return $c !== '' && strspn($c, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ') === 1;
    }

    /** uuid (':' (tag | interval))*, and the whitespace after it. */
    private function parseMember(): void
    {
        $uuid = $this->parseUuid();
        if ($uuid === null) {
            throw $this->bad('expected a UUID (hex digits 8-4-4-4-12)');
        }
        $this->pos += 36;
        $tag = '';
        $this->skipSpace();
        while ($this->peek() === ':') {
            ++$this->pos;
            $this->skipSpace();
            $c = $this->peek();
            if (self::isLetter($c) || $c === '_') {
                $tag = $this->parseTag();
            } elseif (self::isDigit($c)) {
                $this->parseInterval($uuid . ':' . $tag);
            } else {
                throw $this->bad("expected a tag or a transaction number after ':'");
            }
            $this->skipSpace();
        }
    }

    /** The 32 lower-case hex digits of the uuid at the current byte, or null. */
    private function parseUuid(): ?string
    {
        $s = substr($this->text, $this->pos, 36);
        if (strlen($s) !== 36 || $s[8] !== '-' || $s[13] !== '-' || $s[18] !== '-' || $s[23] !== '-') {
            return null;
        }
        $hex = substr($s, 0, 8) . substr($s, 9, 4) . substr($s, 14, 4) . substr($s, 19, 4) . substr($s, 24, 12);
        return strspn($hex, '0123456789abcdefABCDEF') === 32 ? strtolower($hex) : null;
    }

    private function parseTag(): string
    {
        $tag = '';
        for ($c = $this->peek(); self::isLetter($c) || self::isDigit($c) || $c === '_'; $c = $this->peek()) {
            if (strlen($tag) === MysqlGtidSet::maxTagLength()) {
                throw $this->bad('a tag longer than 32 characters');
            }
            $tag .= strtolower($c);
            ++$this->pos;
        }
        return $tag;
    }

    /** 1..MAX_GNO in decimal, no leading zero. */
    private function parseGno(): int
    {
        if (!self::isDigit($this->peek())) {
            throw $this->bad('expected a transaction number');
        }
        if ($this->peek() === '0') {
            $next = $this->text[$this->pos + 1] ?? '';
            throw $this->bad(self::isDigit($next)
                ? 'a transaction number with a leading zero'
                : 'transaction number 0 (they start at 1)');
        }
        $start = $this->pos;
        $v = 0;
        for (; self::isDigit($this->peek()); ++$this->pos) {
            $digit = ord($this->peek()) - ord('0');
            if ($v > intdiv(MysqlGtidSet::MAX_GNO - $digit, 10)) {
                $this->pos = $start;
                throw $this->bad('a transaction number over 2^63 - 2');
            }
            $v = $v * 10 + $digit;
        }
        return $v;
    }

    private function parseInterval(string $source): void
    {
        $first = $this->parseGno();
        $last = $first;
        $this->skipSpace();
        if ($this->peek() === '-') {
            ++$this->pos;
            $this->skipSpace();
            $at = $this->pos;
            $last = $this->parseGno();
            if ($last < $first) {
                $this->pos = $at;
                throw $this->bad('an interval that ends before it starts');
            }
        }
        if ($this->intervals === MysqlGtidSet::MAX_INTERVALS) {
            throw $this->bad('more than ' . MysqlGtidSet::MAX_INTERVALS . ' intervals');
        }
        ++$this->intervals;
        $this->sources[$source][] = [$first, $last];
    }
}
