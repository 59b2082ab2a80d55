<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

use PHPUnit\Runner\AfterLastTestHook;

/** Takes the sandbox down after the last test, if a test brought it up. */
final class SandboxExtension implements AfterLastTestHook
{
    public function executeAfterLastTest(): void
    {
        Sandbox::shutdown();
    }
}
