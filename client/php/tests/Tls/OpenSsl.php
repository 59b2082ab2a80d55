<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use RuntimeException;

/** The openssl CLI, for the tests' certificates. */
final class OpenSsl
{
    /** EC P-256 keys, unencrypted: `openssl req` arguments. */
    public const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

    /**
     * Runs `openssl $args`; its output in the exception when it fails.
     *
     * @param list<string> $args
     */
    public static function run(array $args): void
    {
        $proc = proc_open(array_merge(['openssl'], $args), [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
        if (!is_resource($proc)) {
            throw new RuntimeException('cannot run openssl');
        }
        $out = stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        if (proc_close($proc) !== 0) {
            throw new RuntimeException('openssl ' . implode(' ', $args) . " failed:\n$out");
        }
    }
}
