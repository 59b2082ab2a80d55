<?php

declare(strict_types=1);

namespace Lagwatch\Router\Position;

/**
 * A MySQL GTID set (the text of @@GLOBAL.gtid_executed), and set inclusion. The grammar and its
 * limits are those of base/gtid_set.h, which cites MySQL's own parser:
 *
 *   set      := member? (',' member?)*         empty members are allowed
 *   member   := uuid (':' item)*               a uuid with no interval adds nothing
 *   item     := tag | interval                 a tag applies to the intervals after it
 *   uuid     := 8-4-4-4-12 hex digits, either case
 *   tag      := [A-Za-z_][A-Za-z0-9_]{0,31}    case-insensitive
 *   interval := n | n '-' m                    1 <= n <= m <= 2^63 - 2, no leading zero or sign
 *
 * with ASCII whitespace (newlines included) between any two tokens.
 */
final class MysqlGtidSet implements Position
{
    public const MAX_TEXT_BYTES = 1 << 20;
    public const MAX_INTERVALS = 1 << 16;
    public const MAX_GNO = 9223372036854775806;
    private const MAX_TAG_LENGTH = 32;
    private const SPACE = " \t\n\v\f\r";

    /**
     * By source (32 lower-case hex digits, ':' and the lower-case tag, '' untagged), sorted as
     * MySQL sorts them; per source its intervals sorted, merged, disjoint and not adjacent.
     *
     * @param array<string, list<array{int, int}>> $sources
     */
    private function __construct(private readonly array $sources)
    {
    }

    /** @throws PositionException saying what is wrong and at which byte */
    public static function parse(string $text): self
    {
        return (new MysqlGtidSetParser($text))->run(
            static fn (array $sources): self => new self(self::normalise($sources))
        );
    }

    /**
     * @param array<string, list<array{int, int}>> $raw
     * @return array<string, list<array{int, int}>>
     */
    private static function normalise(array $raw): array
    {
        ksort($raw, SORT_STRING);
        $out = [];
        foreach ($raw as $source => $intervals) {
            usort($intervals, static fn (array $a, array $b): int => $a[0] <=> $b[0]);
            $merged = [];
            foreach ($intervals as [$first, $last]) {
                $n = count($merged);
                // Overlapping or adjacent (last + 1 cannot overflow: last <= 2^63 - 2).
                if ($n > 0 && $first <= $merged[$n - 1][1] + 1) {
                    $merged[$n - 1][1] = max($merged[$n - 1][1], $last);
                } else {
                    $merged[] = [$first, $last];
                }
            }
            $out[$source] = $merged;
        }
        return $out;
    }

    public function kind(): PositionKind
    {
        return PositionKind::MysqlGtid;
    }

    public function isEmpty(): bool
    {
        return $this->sources === [];
    }

    public function includes(Position $other): bool
    {
        if (!$other instanceof self) {
            return false;
        }
        foreach ($other->sources as $source => $wanted) {
            $have = $this->sources[$source] ?? null;
            if ($have === null) {
                return false;
            }
            $i = 0;
            $n = count($have);
            foreach ($wanted as [$first, $last]) {
                while ($i < $n && $have[$i][1] < $first) {
                    ++$i;
                }
                if ($i === $n || $have[$i][0] > $first || $have[$i][1] < $last) {
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * MySQL's own text: uuids ascending in lower case, each once, separated by ",\n"; the untagged
     * intervals first, then each tag ascending with its intervals.
     */
    public function toString(): string
    {
        $out = '';
        $previousUuid = null;
        foreach ($this->sources as $source => $intervals) {
            [$uuid, $tag] = explode(':', $source, 2);
            if ($uuid !== $previousUuid) {
                if ($previousUuid !== null) {
                    $out .= ",\n";
                }
                $out .= substr($uuid, 0, 8) . '-' . substr($uuid, 8, 4) . '-' . substr($uuid, 12, 4) . '-'
                    . substr($uuid, 16, 4) . '-' . substr($uuid, 20);
                $previousUuid = $uuid;
            }
            if ($tag !== '') {
                $out .= ':' . $tag;
            }
            foreach ($intervals as [$first, $last]) {
                $out .= ':' . $first . ($last !== $first ? '-' . $last : '');
            }
        }
        return $out;
    }

    /** @internal for the parser */
    public static function isSpace(string $c): bool
    {
        return $c !== '' && strpos(self::SPACE, $c) !== false;
    }

    /** @internal for the parser */
    public static function maxTagLength(): int
    {
        return self::MAX_TAG_LENGTH;
    }
}
