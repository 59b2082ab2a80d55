<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

use Lagwatch\Router\Router;
use Lagwatch\Router\RouterDependencies;
use Lagwatch\Router\Tests\Unit\MemoryLogger;
use PHPUnit\Framework\TestCase;

/**
 * A test on the sandbox: each starts with lagwatch running (on the sandbox's own configuration)
 * and both replicas healthy in Redis.
 */
abstract class SandboxTestCase extends TestCase
{
    protected Sandbox $sandbox;
    protected MemoryLogger $logger;

    protected function setUp(): void
    {
        $this->sandbox = Sandbox::get();
        if ($this->sandbox->lagwatchCustomised()) {
            $this->sandbox->stopLagwatch();
            $this->sandbox->startLagwatch();
        }
        $this->logger = new MemoryLogger();
    }

    /**
     * The router's configuration for the sandbox: the primary and both replicas by unix socket as
     * root, under their lagwatch ids; app "phptest".
     *
     * @param array<string, mixed> $changes merged over it
     * @return array<string, mixed>
     */
    protected function config(array $changes = []): array
    {
        $s = $this->sandbox;
        $server = static fn (string $name): array => ['dsn' => 'mysql:unix_socket=' . $s->socket($name), 'user' => 'root', 'password' => ''];
        return array_replace([
            'app' => 'phptest',
            'primary' => ['host' => '127.0.0.1', 'port' => $s->port('primary')] + $server('primary'),
            'replicas' => [$s->id('replica1') => $server('replica1'), $s->id('replica2') => $server('replica2')],
            'redis' => $s->routerRedis(),
            'logger' => $this->logger,
        ], $changes);
    }

    /** @param array<string, mixed> $changes */
    protected function router(array $changes = [], ?RouterDependencies $dependencies = null): Router
    {
        return new Router($this->config($changes), $dependencies);
    }

    /** Where the router sent the last statement: 'primary', a replica's name, or null. */
    protected function where(Router $router): ?string
    {
        $selected = $router->routeInfo()?->selected;
        return match ($selected) {
            $this->sandbox->id('replica1') => 'replica1',
            $this->sandbox->id('replica2') => 'replica2',
            default => $selected,
        };
    }
}
