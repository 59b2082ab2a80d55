<?php

declare(strict_types=1);

namespace Lagwatch\Router\Position;

/**
 * A MariaDB GTID position: "domain-server-seq" per replication domain, e.g. "0-1-120,1-2-7" (the
 * text of @@gtid_slave_pos, @@gtid_binlog_pos and @@last_gtid). Mirrors base/gtid.h.
 */
final class MariaDbGtidPos implements Position
{
    private const U32_MAX = 4294967295;

    /** @param array<int, array{server: int, seq: string}> $byDomain sorted by domain */
    private function __construct(private readonly array $byDomain)
    {
    }

    /**
     * Parses the text; empty (or blank) text is the empty position. Items are separated by ','
     * with spaces, tabs and newlines around them ignored; domain and server are unsigned 32-bit,
     * seq unsigned 64-bit; a domain may appear once.
     *
     * @throws PositionException naming what is wrong, the text quoted and escaped
     */
    public static function parse(string $text): self
    {
        $text = trim($text, " \n\t");
        $whole = $text;
        $bad = static fn (string $why): PositionException => new PositionException(
            'malformed GTID position "' . Text::escapeControl(substr($whole, 0, 80)) . '": ' . $why
        );
        $byDomain = [];
        while ($text !== '') {
            $comma = strpos($text, ',');
            $item = trim($comma === false ? $text : substr($text, 0, $comma), " \n\t");
            $text = $comma === false ? '' : substr($text, $comma + 1);
            if ($comma !== false && trim($text, " \n\t") === '') {
                throw $bad('trailing comma');
            }
            $d1 = strpos($item, '-');
            $d2 = $d1 === false ? false : strpos($item, '-', $d1 + 1);
            if ($d2 === false) {
                throw $bad('expected domain-server-seq');
            }
            $domain = self::u32(substr($item, 0, $d1));
            $server = self::u32(substr($item, $d1 + 1, $d2 - $d1 - 1));
            $seq = Text::u64(substr($item, $d2 + 1));
            if ($domain === null || $server === null || $seq === null) {
                throw $bad('non-numeric part');
            }
            if (isset($byDomain[$domain])) {
                throw $bad('domain listed twice');
            }
            $byDomain[$domain] = ['server' => $server, 'seq' => $seq];
        }
        ksort($byDomain);
        return new self($byDomain);
    }

    private static function u32(string $s): ?int
    {
        $n = Text::u64($s);
        return $n === null || strlen($n) > 10 || (int) $n > self::U32_MAX ? null : (int) $n;
    }

    public function kind(): PositionKind
    {
        return PositionKind::MariaDbGtid;
    }

    public function isEmpty(): bool
    {
        return $this->byDomain === [];
    }

    public function includes(Position $other): bool
    {
        if (!$other instanceof self) {
            return false;
        }
        foreach ($other->byDomain as $domain => $want) {
            $have = $this->byDomain[$domain] ?? null;
            if ($have === null || Text::cmpU64($have['seq'], $want['seq']) < 0) {
                return false;
            }
        }
        return true;
    }

    public function toString(): string
    {
        $items = [];
        foreach ($this->byDomain as $domain => $g) {
            $items[] = $domain . '-' . $g['server'] . '-' . $g['seq'];
        }
        return implode(',', $items);
    }
}
