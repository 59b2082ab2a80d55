<?php

declare(strict_types=1);

namespace Lagwatch\Router\Bench;

use Lagwatch\Router\Router;
use PDO;
use RuntimeException;

/** The library's Router as a BenchClient: one long-lived router, the session kept in it. */
final class RouterClient implements BenchClient
{
    public function __construct(private readonly Router $router)
    {
    }

    public function write(int $id): void
    {
        if ($this->router->execute(BenchClient::WRITE_SQL, [$id]) !== 1) {
            throw new RuntimeException("order $id does not exist");
        }
    }

    public function read(int $id): array
    {
        $row = $this->router->query(BenchClient::READ_SQL, [$id])->fetch(PDO::FETCH_NUM);
        if (!is_array($row)) {
            throw new RuntimeException("order $id: no row");
        }
        return [(string) $this->router->routeInfo()?->selected, (int) $row[0], (int) $row[1]];
    }

    public function versionOnPrimary(int $id): int
    {
        return (int) $this->router->query(
            'SELECT version FROM lwbench.orders WHERE id = ?',
            [$id],
            ['force_primary' => true],
        )->fetchColumn();
    }

    public function close(): void
    {
        $this->router->flush();
    }
}
