<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Cluster;

use RuntimeException;

/**
 * Certificates made with the openssl CLI in $dir (EC P-256): a CA, a server certificate for
 * 127.0.0.1 and a client certificate signed by it, and another CA nothing chains to.
 */
final class TestCerts
{
    private const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

    public readonly string $ca;
    public readonly string $otherCa;
    /** @var array{cert: string, key: string} */
    public readonly array $server;
    /** @var array{cert: string, key: string} */
    public readonly array $client;

    public function __construct(private readonly string $dir)
    {
        if (!is_dir($dir) && !mkdir($dir, 0700, true) && !is_dir($dir)) {
            throw new RuntimeException("cannot create $dir");
        }
        $this->ca = $this->selfSigned('ca');
        $this->otherCa = $this->selfSigned('other-ca');
        $this->server = $this->signed('server', 'subjectAltName=IP:127.0.0.1');
        $this->client = $this->signed('client', 'extendedKeyUsage=clientAuth');
    }

    /** @return array<string, mixed> PHP's ssl context for a client of the CA's servers, with the client certificate */
    public function streamOptions(): array
    {
        return [
            'cafile' => $this->ca, 'local_cert' => $this->client['cert'], 'local_pk' => $this->client['key'],
            'verify_peer' => true, 'verify_peer_name' => true, 'peer_name' => '127.0.0.1',
        ];
    }

    private function selfSigned(string $name): string
    {
        $this->openssl(array_merge(['req', '-x509'], self::EC, [
            '-keyout', "$this->dir/$name.key", '-out', "$this->dir/$name.pem", '-days', '2', '-subj', "/CN=$name",
        ]));
        return "$this->dir/$name.pem";
    }

    /** @return array{cert: string, key: string} */
    private function signed(string $name, string $extension): array
    {
        $d = $this->dir;
        $this->openssl(array_merge(['req'], self::EC, ['-keyout', "$d/$name.key", '-out', "$d/$name.csr", '-subj', "/CN=$name"]));
        file_put_contents("$d/$name.ext", $extension . "\n");
        $this->openssl([
            'x509', '-req', '-in', "$d/$name.csr", '-CA', "$d/ca.pem", '-CAkey', "$d/ca.key", '-CAcreateserial',
            '-CAserial', "$d/ca.srl", '-out', "$d/$name.pem", '-days', '2', '-extfile', "$d/$name.ext",
        ]);
        return ['cert' => "$d/$name.pem", 'key' => "$d/$name.key"];
    }

    /** @param list<string> $args */
    private function openssl(array $args): void
    {
        $proc = proc_open(array_merge(['openssl'], $args), [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
        if (!is_resource($proc)) {
            throw new RuntimeException('cannot run openssl');
        }
        $out = stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        if (proc_close($proc) !== 0) {
            throw new RuntimeException('openssl ' . implode(' ', $args) . " failed: $out");
        }
    }
}
