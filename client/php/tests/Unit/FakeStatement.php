<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

/** FakePdo's statement: its queryString is the server that "answered". */
final class FakeStatement extends \PDOStatement
{
    public function __construct(string $server)
    {
        $this->queryString = $server;
    }
}
