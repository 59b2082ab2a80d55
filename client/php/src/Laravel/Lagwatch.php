<?php

declare(strict_types=1);

namespace Lagwatch\Router\Laravel;

use Closure;
use Illuminate\Contracts\Container\Container;
use Illuminate\Database\Connection;
use Illuminate\Database\MySqlConnection;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\RouterDependencies;
use Lagwatch\Router\Session\LaravelSessionStore;
use Lagwatch\Router\Session\PhpSessionStore;
use Lagwatch\Router\Session\TokenStore;
use Psr\Log\LoggerInterface;

/**
 * Puts `mysql` connections with a `lagwatch` block on LagwatchMySqlConnection: a resolver for the
 * mysql driver (Illuminate\Database\Connection::resolverFor, which Capsule and a full app's
 * DatabaseManager both use); connections without the block stay Laravel's own (or whatever
 * resolver was registered before). The full app calls it from LagwatchServiceProvider; a Capsule
 * application calls Lagwatch::install() once before its first connection.
 *
 * The block's `token_store`: a TokenStore; a Closure returning one (given the container, if
 * any), called at the connection's first statement; 'session' (Laravel's session, needs the
 * container's `session.store`); 'php' ($_SESSION); null or absent: the token lives for the request
 * only. `token_life` (s, default 60) and `token_key` (default 'lagwatch_rw') apply to 'session'
 * and 'php'; 'php' warns through the block's `logger` when it is asked to save with no PHP
 * session started (PhpSessionStore).
 *
 * The routers' test hooks (clock, random source, connector) are not block keys: install()'s
 * RouterDependencies, for every connection made after.
 */
final class Lagwatch
{
    private static ?Closure $previous = null;
    private static bool $installed = false;
    private static ?Container $container = null;
    private static ?RouterDependencies $dependencies = null;

    /**
     * Installs the resolver (idempotent); $container resolves `token_store` => 'session';
     * $dependencies (tests, benchmarks) go to the router of every lagwatch connection made from
     * now on. Each argument given replaces the one of an earlier call.
     */
    public static function install(?Container $container = null, ?RouterDependencies $dependencies = null): void
    {
        self::$container = $container ?? self::$container;
        self::$dependencies = $dependencies ?? self::$dependencies;
        if (self::$installed) {
            return;
        }
        self::$installed = true;
        self::$previous = Connection::getResolver('mysql');
        Connection::resolverFor('mysql', static function ($pdo, $database, $prefix, $config) {
            if (!isset($config['lagwatch'])) {
                return self::$previous !== null
                    ? (self::$previous)($pdo, $database, $prefix, $config)
                    : new MySqlConnection($pdo, $database, $prefix, $config);
            }
            // Laravel's PDO resolver ($pdo) is not used: the router opens the connections.
            return new LagwatchMySqlConnection(
                (string) $database,
                (string) $prefix,
                $config,
                self::tokenStore($config['lagwatch']['token_store'] ?? null, $config['lagwatch']),
                null,
                self::$dependencies,
            );
        });
    }

    /**
     * @param array<string, mixed> $block
     * @return TokenStore|Closure(): ?TokenStore|null
     * @throws ConfigException
     */
    private static function tokenStore(mixed $spec, array $block): TokenStore|Closure|null
    {
        $life = $block['token_life'] ?? 60;
        $key = $block['token_key'] ?? 'lagwatch_rw';
        if (!is_int($life) || !is_string($key)) {
            throw new ConfigException('lagwatch.token_life: seconds (int); lagwatch.token_key: a string');
        }
        $container = self::$container;
        return match (true) {
            $spec === null, $spec instanceof TokenStore => $spec,
            $spec instanceof Closure => static fn (): ?TokenStore => $spec($container),
            $spec === 'php' => new PhpSessionStore($key, $life, null, self::logger($block)),
            $spec === 'session' => $container === null
                ? throw new ConfigException("lagwatch.token_store 'session' needs Laravel's container"
                    . ' (LagwatchServiceProvider, or Lagwatch::install($container))')
                : static fn (): TokenStore => new LaravelSessionStore($container->make('session.store'), $key, $life),
            default => throw new ConfigException("lagwatch.token_store: a TokenStore, a Closure, 'session' or 'php'"),
        };
    }

    /** @param array<string, mixed> $block */
    private static function logger(array $block): ?LoggerInterface
    {
        $logger = $block['logger'] ?? null;
        return $logger instanceof LoggerInterface ? $logger : null;
    }
}
