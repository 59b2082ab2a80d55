<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

/**
 * A stand-in connection for tests without servers: says which server it is; query() runs the
 * test's hook (e.g. moving its clock) and answers with a statement whose queryString is the server.
 */
final class FakePdo extends \PDO
{
    public function __construct(public readonly string $server, private readonly ?\Closure $onQuery = null)
    {
    }

    public function inTransaction(): bool
    {
        return false;
    }

    public function query(string $query, ?int $fetchMode = null, mixed ...$fetchModeArgs): \PDOStatement|false
    {
        if ($this->onQuery !== null) {
            ($this->onQuery)($query);
        }
        return new FakeStatement($this->server);
    }
}
