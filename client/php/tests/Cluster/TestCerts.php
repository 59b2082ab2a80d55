<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Cluster;

use Lagwatch\Router\Tests\Tls\OpenSsl;
use RuntimeException;

/**
 * Certificates made with the openssl CLI in $dir (EC P-256): a CA, a server certificate for
 * 127.0.0.1 and a client certificate signed by it, and another CA nothing chains to.
 */
final class TestCerts
{
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
        OpenSsl::run(array_merge(['req', '-x509'], OpenSsl::EC, [
            '-keyout', "$this->dir/$name.key", '-out', "$this->dir/$name.pem", '-days', '2', '-subj', "/CN=$name",
        ]));
        return "$this->dir/$name.pem";
    }

    /** @return array{cert: string, key: string} */
    private function signed(string $name, string $extension): array
    {
        $d = $this->dir;
        OpenSsl::run(array_merge(['req'], OpenSsl::EC, ['-keyout', "$d/$name.key", '-out', "$d/$name.csr", '-subj', "/CN=$name"]));
        file_put_contents("$d/$name.ext", $extension . "\n");
        OpenSsl::run([
            'x509', '-req', '-in', "$d/$name.csr", '-CA', "$d/ca.pem", '-CAkey', "$d/ca.key", '-CAcreateserial',
            '-CAserial', "$d/ca.srl", '-out', "$d/$name.pem", '-days', '2', '-extfile', "$d/$name.ext",
        ]);
        return ['cert' => "$d/$name.pem", 'key' => "$d/$name.key"];
    }
}
