<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

/** ScriptedPdo's answer: one row. */
final class ScriptedStatement extends \PDOStatement
{
    private bool $done = false;

    /** @param array<string, ?string> $row */
    public function __construct(private readonly array $row)
    {
    }

    public function fetch(int $mode = \PDO::FETCH_DEFAULT, int $cursorOrientation = \PDO::FETCH_ORI_NEXT, int $cursorOffset = 0): mixed
    {
        if ($this->done) {
            return false;
        }
        $this->done = true;
        return match ($mode) {
            \PDO::FETCH_NUM => array_values($this->row),
            \PDO::FETCH_ASSOC => $this->row,
            default => $this->row + array_values($this->row),
        };
    }

    public function closeCursor(): bool
    {
        return true;
    }

    public function fetchColumn(int $column = 0): mixed
    {
        $row = $this->fetch(\PDO::FETCH_NUM);
        return is_array($row) ? ($row[$column] ?? false) : false;
    }
}
