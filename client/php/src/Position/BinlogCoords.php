<?php

declare(strict_types=1);

namespace Lagwatch\Router\Position;

/**
 * Binary log coordinates "BASE.NNNNNN:offset" (base/binlog_coords.h): ordered by the file's
 * sequence number as a number (after 999999 comes 1000000), then by offset; coordinates of two
 * base names are incomparable (another server's log).
 */
final class BinlogCoords implements Position
{
    /** @param string $seq canonical unsigned decimal @param string $offset canonical unsigned decimal */
    private function __construct(
        private readonly string $base,
        private readonly string $seq,
        private readonly string $offset
    ) {
    }

    /**
     * "file:offset", split at the last ':'; the file is BASE.DIGITS (split at its last '.', the
     * base not empty). Quotes, backslashes and control bytes are refused: a file name may be
     * quoted into SQL or a log line.
     *
     * @throws PositionException
     */
    public static function parse(string $text): self
    {
        $colon = strrpos($text, ':');
        if ($colon === false) {
            throw new PositionException(
                'binary log coordinates are file:offset, got ' . Text::quoted($text)
            );
        }
        if (preg_match('/[\'"`\\\\\x00-\x1f\x7f]/', $text) === 1) {
            throw new PositionException(
                'a quote, backslash or control byte in a file name, got ' . Text::quoted($text)
            );
        }
        return self::fromFileAndOffset(substr($text, 0, $colon), substr($text, $colon + 1));
    }

    /**
     * File and Position as SHOW MASTER STATUS returns them.
     *
     * @throws PositionException
     */
    public static function fromFileAndOffset(string $file, string $offset): self
    {
        if (preg_match('/[\'"`\\\\\x00-\x1f\x7f]/', $file) === 1) {
            throw new PositionException(
                'a quote, backslash or control byte in a file name, got ' . Text::quoted($file)
            );
        }
        $dot = strrpos($file, '.');
        $seq = $dot !== false && $dot > 0 ? Text::u64(substr($file, $dot + 1)) : null;
        if ($seq === null) {
            throw new PositionException(
                "binary log file '" . Text::escapeControl($file) . "' has no numeric extension (BASE.NUMBER)"
            );
        }
        $pos = Text::u64($offset);
        if ($pos === null) {
            throw new PositionException("binary log position '" . Text::escapeControl($offset) . "' is not a number");
        }
        return new self(substr($file, 0, $dot), $seq, $pos);
    }

    public function kind(): PositionKind
    {
        return PositionKind::Binlog;
    }

    /** <0 before $other, 0 the same, >0 after; null for another base name. */
    public function compare(self $other): ?int
    {
        if ($this->base !== $other->base) {
            return null;
        }
        return Text::cmpU64($this->seq, $other->seq) ?: Text::cmpU64($this->offset, $other->offset);
    }

    public function includes(Position $other): bool
    {
        if (!$other instanceof self) {
            return false;
        }
        $order = $this->compare($other);
        return $order !== null && $order >= 0;
    }

    public function file(): string
    {
        return $this->base . '.' . str_pad($this->seq, 6, '0', STR_PAD_LEFT);
    }

    public function offset(): string
    {
        return $this->offset;
    }

    public function toString(): string
    {
        return $this->file() . ':' . $this->offset;
    }
}
