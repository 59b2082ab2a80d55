<?php

declare(strict_types=1);

namespace Lagwatch\Router;

use Lagwatch\Router\Exception\ConfigException;

/**
 * A `tls` block: TLS to Redis (`redis.tls`) or to MySQL (`tls` for every server, `primary.tls`,
 * `replicas.<id>.tls`), with the agent's key names (docs/configuration.md, "TLS to MySQL and
 * Redis"): enabled, ca_file, cert_file, key_file, verify_server_cert, min_version, and MySQL's
 * required or Redis's server_name. Immutable.
 */
final class TlsConfig
{
    private const COMMON_KEYS = ['enabled', 'ca_file', 'cert_file', 'key_file', 'verify_server_cert', 'min_version'];
    public const MYSQL_KEYS = [...self::COMMON_KEYS, 'required'];
    public const REDIS_KEYS = [...self::COMMON_KEYS, 'server_name'];
    /** The PDO attributes a MySQL block sets: a server's `options` may not set them as well. */
    public const PDO_ATTRIBUTES = [
        \PDO::MYSQL_ATTR_SSL_CA, \PDO::MYSQL_ATTR_SSL_CAPATH, \PDO::MYSQL_ATTR_SSL_CERT, \PDO::MYSQL_ATTR_SSL_KEY,
        \PDO::MYSQL_ATTR_SSL_CIPHER, \PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT,
    ];

    /**
     * @param ?string $caFile null: the system's trust store
     * @param string $minVersion '1.2' or '1.3'
     * @param ?string $serverName Redis only: the name its certificate must carry; null: the host
     */
    public function __construct(
        public readonly bool $enabled = false,
        public readonly ?string $caFile = null,
        public readonly ?string $certFile = null,
        public readonly ?string $keyFile = null,
        public readonly bool $verifyServerCert = true,
        public readonly string $minVersion = '1.2',
        public readonly ?string $serverName = null,
    ) {
    }

    /**
     * From a `tls` block; every key it gives overrides $defaults' (a server's block over the
     * router's `tls`), so ['enabled' => false] turns TLS off for one server.
     *
     * @param bool $redis a Redis block (server_name; no required) or a MySQL one (required; no server_name)
     * @throws ConfigException naming the key
     */
    public static function from(ConfigReader $c, bool $redis, ?self $defaults = null): self
    {
        $c->rejectUnknown($redis ? self::REDIS_KEYS : self::MYSQL_KEYS);
        $d = $defaults ?? new self();
        $file = static function (string $key, ?string $default) use ($c): ?string {
            if (!$c->has($key)) {
                return $default;
            }
            return $c->string($key);
        };
        $min = $c->has('min_version') ? $c->optionalString('min_version') : $d->minVersion;
        if ($min !== '1.2' && $min !== '1.3') {
            throw new ConfigException($c->key('min_version') . ': "1.2" or "1.3" (a string)');
        }
        if (!$redis && !$c->bool('required', true)) {
            throw new ConfigException($c->key('required') . ': false cannot be had with mysqlnd: once a TLS'
                . ' attribute is set it refuses a server that offers no TLS (client/php/README.md, "TLS");'
                . ' set enabled false for a server to be reached in plaintext');
        }
        $tls = new self(
            $c->bool('enabled', $d->enabled),
            $file('ca_file', $d->caFile),
            $file('cert_file', $d->certFile),
            $file('key_file', $d->keyFile),
            $c->bool('verify_server_cert', $d->verifyServerCert),
            $min,
            $redis && $c->has('server_name') ? $c->string('server_name') : $d->serverName,
        );
        if (($tls->certFile === null) !== ($tls->keyFile === null)) {
            throw new ConfigException(rtrim($c->key(''), '.') . ': cert_file and key_file go together (both or neither)');
        }
        return $tls;
    }

    /**
     * The PDO attributes of this block for mysqlnd ([] when TLS is off): SSL_CA (ca_file, else
     * the system's trust store), SSL_CERT and SSL_KEY, and SSL_VERIFY_SERVER_CERT always said.
     * Any SSL attribute makes mysqlnd ask for TLS; without ca_file the system's CA file (php.ini's
     * openssl.cafile, else OpenSSL's default file) is named, or its CA directory as SSL_CAPATH.
     *
     * @return array<int, mixed>
     */
    public function pdoAttributes(): array
    {
        if (!$this->enabled) {
            return [];
        }
        $out = [];
        if ($this->caFile !== null) {
            $out[\PDO::MYSQL_ATTR_SSL_CA] = $this->caFile;
        } else {
            $locations = openssl_get_cert_locations();
            $file = (string) ini_get('openssl.cafile');
            $file = $file !== '' ? $file : (string) ($locations['default_cert_file'] ?? '');
            if ($file !== '' && is_file($file)) {
                $out[\PDO::MYSQL_ATTR_SSL_CA] = $file;
            } else {
                $dir = (string) ini_get('openssl.capath');
                $out[\PDO::MYSQL_ATTR_SSL_CAPATH] = $dir !== '' ? $dir : (string) ($locations['default_cert_dir'] ?? '');
            }
        }
        if ($this->certFile !== null && $this->keyFile !== null) {
            $out[\PDO::MYSQL_ATTR_SSL_CERT] = $this->certFile;
            $out[\PDO::MYSQL_ATTR_SSL_KEY] = $this->keyFile;
        }
        $out[\PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT] = $this->verifyServerCert;
        return $out;
    }

    /**
     * PHP's `ssl` stream context options for this block (phpredis's `stream` context, the
     * probes of TlsProbe): the CA, the client's certificate, verification of the chain and of
     * the name (server_name, else $peerName; with neither, no peer_name: PHP then checks the host
     * each connection is opened to, as a Redis Cluster's nodes need), and the protocol versions
     * from min_version.
     *
     * @return array<string, mixed>
     */
    public function streamOptions(?string $peerName): array
    {
        $o = [
            'verify_peer' => $this->verifyServerCert,
            'verify_peer_name' => $this->verifyServerCert,
            'allow_self_signed' => false,
            'SNI_enabled' => true,
            'crypto_method' => $this->cryptoMethod(),
            'disable_compression' => true,
        ];
        $name = $this->serverName ?? $peerName;
        if ($name !== null) {
            $o['peer_name'] = $name;
        }
        if ($this->caFile !== null) {
            $o['cafile'] = $this->caFile;
        }
        if ($this->certFile !== null && $this->keyFile !== null) {
            $o['local_cert'] = $this->certFile;
            $o['local_pk'] = $this->keyFile;
        }
        return $o;
    }

    /** The protocol versions allowed: TLS 1.2 and 1.3, or 1.3 only. */
    public function cryptoMethod(): int
    {
        return $this->minVersion === '1.3'
            ? STREAM_CRYPTO_METHOD_TLSv1_3_CLIENT
            : STREAM_CRYPTO_METHOD_TLSv1_2_CLIENT | STREAM_CRYPTO_METHOD_TLSv1_3_CLIENT;
    }

    /** The name the server's certificate must carry when connecting to $host. */
    public function peerName(string $host): string
    {
        return $this->serverName ?? $host;
    }

    /** Why a file this block names cannot be used ('' when all can be read). */
    public function unreadableFile(): string
    {
        foreach (['ca_file' => $this->caFile, 'cert_file' => $this->certFile, 'key_file' => $this->keyFile] as $k => $f) {
            if ($f !== null && !is_readable($f)) {
                return $k . ' ' . $f . (file_exists($f) ? ' cannot be read' : ' does not exist');
            }
        }
        return '';
    }
}
