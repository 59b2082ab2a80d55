<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Lagwatch\Router\Tests\Integration\Sandbox;
use RuntimeException;

/**
 * Certificates for the failure cases, made with openssl under <sandbox>-x/certs once per
 * run: another CA (a ca_file the sandbox's servers do not chain to), and server certificates
 * signed by the sandbox's CA that are wrong in one way each: for another name, expired.
 */
final class Certs
{
    /** Another CA's certificate: nothing of the sandbox chains to it. */
    public static function otherCa(): string
    {
        $d = self::dir();
        if (!is_file("$d/other-ca.pem")) {
            OpenSsl::run(array_merge(['req', '-x509'], OpenSsl::EC, [
                '-keyout', "$d/other-ca.key", '-out', "$d/other-ca.pem", '-days', '30', '-subj', '/CN=another CA',
            ]));
        }
        return "$d/other-ca.pem";
    }

    /**
     * A server certificate by the sandbox's CA for wrong.example only (not 127.0.0.1, not
     * localhost): [cert, key].
     *
     * @return array{cert: string, key: string}
     */
    public static function wrongName(): array
    {
        return self::signed('wrong-name', '/CN=wrong.example', 'subjectAltName=DNS:wrong.example', '30');
    }

    /**
     * A server certificate by the sandbox's CA for 127.0.0.1 that expired a day ago: [cert, key].
     *
     * @return array{cert: string, key: string}
     */
    public static function expired(): array
    {
        return self::signed('expired', '/CN=localhost', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-1');
    }

    /** @return array{cert: string, key: string} */
    private static function signed(string $name, string $subject, string $san, string $days): array
    {
        $d = self::dir();
        $ca = Sandbox::dir() . '/tls';
        if (!is_file("$d/$name.pem")) {
            OpenSsl::run(array_merge(['req'], OpenSsl::EC, ['-keyout', "$d/$name.key", '-out', "$d/$name.csr", '-subj', $subject]));
            file_put_contents("$d/$name.ext", $san . "\nextendedKeyUsage=serverAuth\n");
            OpenSsl::run([
                'x509', '-req', '-in', "$d/$name.csr", '-CA', "$ca/ca.pem", '-CAkey', "$ca/ca.key", '-CAcreateserial',
                '-CAserial', "$d/ca.srl", '-out', "$d/$name.pem", '-days', $days, '-extfile', "$d/$name.ext",
            ]);
        }
        return ['cert' => "$d/$name.pem", 'key' => "$d/$name.key"];
    }

    private static function dir(): string
    {
        ExtraServers::prepare();
        $d = ExtraServers::dir() . '/certs';
        if (!is_dir($d) && !mkdir($d, 0700, true) && !is_dir($d)) {
            throw new RuntimeException("cannot create $d");
        }
        return $d;
    }
}
