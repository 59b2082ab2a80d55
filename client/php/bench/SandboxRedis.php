<?php

declare(strict_types=1);

namespace Lagwatch\Router\Bench;

/**
 * How a router in the benchmark reaches the sandbox's Redis (scripts/sandbox): as its
 * lagwatch-router ACL user, whose password is in the file DIR/env names, and over TLS with the
 * sandbox's CA and client certificate when it was built with --tls (TLS=1 in DIR/env).
 */
final class SandboxRedis
{
    /** @return array<string, mixed> the router's `redis` configuration for the sandbox in $dir */
    public static function config(string $dir, int $basePort): array
    {
        $env = self::env($dir);
        $config = ['host' => '127.0.0.1', 'port' => $basePort + 3, 'key_prefix' => 'slave_delay'];
        if (isset($env['REDIS_ROUTER_USER'], $env['REDIS_ROUTER_PASSWORD_FILE'])) {
            $config['username'] = $env['REDIS_ROUTER_USER'];
            $config['password'] = rtrim((string) file_get_contents($env['REDIS_ROUTER_PASSWORD_FILE']), "\n");
        }
        if (($env['TLS'] ?? '0') === '1') {
            // The connect includes the handshake: 0.05 s (the default) is short for a handshake per
            // request on a loaded 2-core host (flushes lost to timeouts in the tls suite's runs).
            $config['timeout'] = 0.5;
            $config['tls'] = [
                'enabled' => true,
                'ca_file' => $env['TLS_CA'] ?? '',
                'cert_file' => $env['TLS_CLIENT_CERT'] ?? '',
                'key_file' => $env['TLS_CLIENT_KEY'] ?? '',
            ];
        }
        return $config;
    }

    /** @return array<string, string> DIR/env's VAR=value lines */
    public static function env(string $dir): array
    {
        $out = [];
        foreach (file($dir . '/env', FILE_IGNORE_NEW_LINES) ?: [] as $line) {
            if (preg_match('/^([A-Z0-9_]+)=(.*)$/', $line, $m) === 1) {
                $out[$m[1]] = $m[2];
            }
        }
        return $out;
    }
}
