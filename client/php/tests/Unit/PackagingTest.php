<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use PHPUnit\Framework\TestCase;

/** composer.json's PSR-4 mapping finds every class of src/, as an application's autoloader will. */
final class PackagingTest extends TestCase
{
    public function testEveryFileOfSrcIsTheClassItsPathNamesUnderThePsr4Prefix(): void
    {
        $composer = json_decode((string) file_get_contents(__DIR__ . '/../../composer.json'), true, 16, JSON_THROW_ON_ERROR);
        self::assertSame(['Lagwatch\\Router\\' => 'src/'], $composer['autoload']['psr-4']);
        self::assertSame('>=8.2', $composer['require']['php']);
        // The framework integrations' base classes: Debian's packages (scripts/deps).
        require_once '/usr/share/php/Doctrine/DBAL/autoload.php';
        require_once '/usr/share/php/Symfony/Component/HttpFoundation/autoload.php';
        $src = realpath(__DIR__ . '/../../src');
        $files = new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator($src, \FilesystemIterator::SKIP_DOTS));
        $count = 0;
        foreach ($files as $file) {
            self::assertSame('php', $file->getExtension(), $file->getPathname());
            $relative = substr($file->getPathname(), strlen($src) + 1, -4);
            $name = 'Lagwatch\\Router\\' . str_replace('/', '\\', $relative);
            $text = (string) file_get_contents($file->getPathname());
            self::assertStringContainsString("declare(strict_types=1);", $text, $relative);
            self::assertTrue(class_exists($name) || interface_exists($name) || enum_exists($name), $name);
            ++$count;
        }
        self::assertGreaterThan(30, $count);
    }
}
