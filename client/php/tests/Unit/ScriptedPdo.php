<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

/**
 * A stand-in connection that answers the statements it was given, each with one row (its columns
 * by name and by position, as PDO::FETCH_BOTH), and refuses any other as a server refuses a
 * statement it does not know (SQLSTATE 42000, error 1064). Records what was asked.
 */
final class ScriptedPdo extends \PDO
{
    /** @var list<string> */
    public array $asked = [];

    /** @param array<string, array<string, ?string>> $answers statement => row */
    public function __construct(private readonly array $answers)
    {
    }

    public function query(string $query, ?int $fetchMode = null, mixed ...$fetchModeArgs): \PDOStatement|false
    {
        $this->asked[] = $query;
        if (!array_key_exists($query, $this->answers)) {
            $e = new \PDOException("SQLSTATE[42000]: Syntax error or access violation: 1064 You have an error in your SQL syntax near '$query'");
            $e->errorInfo = ['42000', 1064, 'You have an error in your SQL syntax'];
            throw $e;
        }
        return new ScriptedStatement($this->answers[$query]);
    }
}
