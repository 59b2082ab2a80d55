<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Lagwatch\Router\Exception\LagwatchException;
use PHPUnit\Framework\TestCase;

/**
 * composer.json as a PHP developer takes the package: its PSR-4 mapping finds every class of
 * src/ (as an application's autoloader will), its license is the repository's, its requirements,
 * suggestions and Laravel auto-discovery name what the code uses; every exception the package
 * throws is a LagwatchException.
 */
final class PackagingTest extends TestCase
{
    /** @return array<string, mixed> */
    private static function composer(): array
    {
        return json_decode((string) file_get_contents(__DIR__ . '/../../composer.json'), true, 16, JSON_THROW_ON_ERROR);
    }

    /** @return list<class-string> every class, interface and enum of src/ (loaded) */
    private static function classes(): array
    {
        require_once '/usr/share/php/Doctrine/DBAL/autoload.php';
        require_once '/usr/share/php/Symfony/Component/HttpFoundation/autoload.php';
        $src = (string) realpath(__DIR__ . '/../../src');
        $out = [];
        foreach (new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator($src, \FilesystemIterator::SKIP_DOTS)) as $file) {
            $name = 'Lagwatch\\Router\\' . str_replace('/', '\\', substr($file->getPathname(), strlen($src) + 1, -4));
            if (class_exists($name) || interface_exists($name) || enum_exists($name)) {
                $out[] = $name;
            }
        }
        sort($out);
        return $out;
    }

    public function testTheLicenseIsTheRepositorysApacheLicense(): void
    {
        self::assertSame('Apache-2.0', self::composer()['license']);
        $license = (string) file_get_contents(__DIR__ . '/../../../../LICENSE');
        self::assertStringContainsString('Apache License', $license);
        self::assertStringContainsString('Version 2.0, January 2004', $license);
    }

    public function testRequirementsSuggestionsAndAutoDiscoveryNameWhatTheCodeUses(): void
    {
        $composer = self::composer();
        foreach (['ext-pdo', 'ext-pdo_mysql', 'ext-mysqlnd', 'ext-redis', 'ext-openssl', 'psr/log'] as $package) {
            self::assertArrayHasKey($package, $composer['require']);
        }
        foreach (['mysqlnd', 'pdo_mysql', 'redis', 'openssl'] as $ext) {
            self::assertTrue(extension_loaded($ext), "$ext: required, and the tests run with it");
        }
        self::assertSame('^1.1 || ^2.0 || ^3.0', $composer['require']['psr/log']);
        self::assertArrayHasKey('phpunit/phpunit', $composer['require-dev']);
        foreach (['laravel/framework', 'illuminate/database', 'doctrine/dbal', 'symfony/http-foundation', 'psr/simple-cache'] as $package) {
            self::assertArrayHasKey($package, $composer['suggest']);
        }
        self::assertSame(['Lagwatch\\Router\\Laravel\\LagwatchServiceProvider'], $composer['extra']['laravel']['providers']);
        require_once 'Illuminate/Support/autoload.php';
        foreach ($composer['extra']['laravel']['providers'] as $provider) {
            self::assertTrue(is_subclass_of($provider, \Illuminate\Support\ServiceProvider::class), $provider);
        }
        // The tests' PSR-4 prefix is tests/bootstrap.php's (which stands in for Composer's autoloader here).
        self::assertSame('tests/', $composer['autoload-dev']['psr-4']['Lagwatch\\Router\\Tests\\']);
        self::assertSame('bench/', $composer['autoload-dev']['psr-4']['Lagwatch\\Router\\Bench\\']);
        self::assertStringContainsString("'Lagwatch\\\\Router\\\\Tests\\\\' => __DIR__ . '/'", (string) file_get_contents(__DIR__ . '/../bootstrap.php'));
    }

    public function testEveryExceptionOfThePackageIsALagwatchException(): void
    {
        $exceptions = array_values(array_filter(
            self::classes(),
            static fn (string $c): bool => is_subclass_of($c, \Throwable::class) && !(new \ReflectionClass($c))->isInterface(),
        ));
        self::assertGreaterThanOrEqual(7, count($exceptions), implode(', ', $exceptions));
        $unmarked = array_values(array_filter($exceptions, static fn (string $c): bool => !is_subclass_of($c, LagwatchException::class)));
        self::assertSame([], $unmarked, 'exceptions without the marker');
        $named = ['Exception\\ConfigException', 'Exception\\InvalidSessionException', 'Exception\\PrimaryUnavailableException',
            'Exception\\TlsException', 'Contract\\MalformedException', 'Contract\\TransportException'];
        foreach ($named as $name) {
            self::assertContains('Lagwatch\\Router\\' . $name, $exceptions);
        }
        // What the package throws at a caller for its own arguments is a ConfigException.
        foreach (
            [
                static fn () => new \Lagwatch\Router\Session\PhpSessionStore(''),
                static fn () => new \Lagwatch\Router\Session\PhpSessionStore('k', 0),
                static fn () => new \Lagwatch\Router\Router(['app' => 'a', 'primary' => ['host' => 'h', 'port' => 1], 'clock' => null]),
            ] as $i => $make
        ) {
            try {
                $make();
                self::fail("#$i was accepted");
            } catch (LagwatchException $e) {
                self::assertInstanceOf(\InvalidArgumentException::class, $e);
            }
        }
    }

    public function testEveryFileOfSrcIsTheClassItsPathNamesUnderThePsr4Prefix(): void
    {
        $composer = self::composer();
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
