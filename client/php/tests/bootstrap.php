<?php

declare(strict_types=1);

// Autoloading without Composer (the tests run offline): PSR-4 for the library and its tests, as
// composer.json declares it, and PSR-3's interfaces from Debian's php-psr-log.
spl_autoload_register(static function (string $class): void {
    $roots = [
        'Lagwatch\\Router\\Tests\\' => __DIR__ . '/',
        'Lagwatch\\Router\\' => __DIR__ . '/../src/',
    ];
    foreach ($roots as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }
            return;
        }
    }
});

if (!interface_exists(\Psr\Log\LoggerInterface::class)) {
    require '/usr/share/php/Psr/Log/autoload.php';
}

// Laravel's Illuminate components and PSR-16 from Debian's php-laravel-framework (the token stores'
// tests and the laravel suite); without the package those tests fail on the missing classes.
foreach (['Psr/SimpleCache', 'Illuminate/Container', 'Illuminate/Config', 'Illuminate/Events', 'Illuminate/Database', 'Illuminate/Cache', 'Illuminate/Session'] as $package) {
    if (stream_resolve_include_path($package . '/autoload.php') !== false) {
        require_once $package . '/autoload.php';
    }
}
