<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\Router;
use Lagwatch\Router\RouterConfig;
use Lagwatch\Router\RouterDependencies;
use Lagwatch\Router\Tls\TlsReason;
use PHPUnit\Framework\TestCase;

/**
 * The `tls` blocks without servers: their keys and checks, what they turn into for mysqlnd (PDO
 * attributes) and phpredis (stream options), the warning for an unverified certificate, and the
 * reasons named from OpenSSL's words. TLS on real servers: tests/Tls.
 */
final class TlsConfigTest extends TestCase
{
    private const CA = '/etc/lagwatch/ca.pem';

    /** @param array<string, mixed> $changes */
    private static function config(array $changes = []): array
    {
        return array_replace_recursive([
            'app' => 'shop',
            'primary' => ['host' => '10.0.0.1', 'port' => 3306, 'dsn' => 'mysql:host=127.0.0.1;port=1'],
            'replicas' => ['10.0.0.11:3306' => [], '10.0.0.12:3306' => []],
        ], $changes);
    }

    public function testOffByDefaultAndNoAttributeIsSet(): void
    {
        $c = RouterConfig::from(self::config());
        self::assertFalse($c->primary->tls->enabled);
        self::assertSame([], $c->primary->tls->pdoAttributes());
        self::assertFalse($c->redis->tls->enabled);
    }

    public function testTheRoutersBlockAppliesToEveryServerAndAServersOwnKeysOverrideItKeyByKey(): void
    {
        $c = RouterConfig::from(self::config([
            'tls' => ['enabled' => true, 'ca_file' => self::CA, 'cert_file' => '/c.pem', 'key_file' => '/c.key'],
            'replicas' => [
                '10.0.0.11:3306' => ['tls' => ['ca_file' => '/other-ca.pem', 'min_version' => '1.3']],
                '10.0.0.12:3306' => ['tls' => ['enabled' => false]],
            ],
        ]));
        self::assertSame([
            \PDO::MYSQL_ATTR_SSL_CA => self::CA,
            \PDO::MYSQL_ATTR_SSL_CERT => '/c.pem',
            \PDO::MYSQL_ATTR_SSL_KEY => '/c.key',
            \PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => true,
        ], $c->primary->tls->pdoAttributes());
        $r1 = $c->replicas['10.0.0.11:3306']->tls;
        self::assertTrue($r1->enabled);
        self::assertSame('/other-ca.pem', $r1->caFile);
        self::assertSame('/c.pem', $r1->certFile);
        self::assertSame('1.3', $r1->minVersion);
        self::assertSame([], $c->replicas['10.0.0.12:3306']->tls->pdoAttributes());
    }

    public function testWithoutCaFileMysqlndIsGivenTheSystemsTrustStore(): void
    {
        $c = RouterConfig::from(self::config(['tls' => ['enabled' => true]]));
        $attributes = $c->primary->tls->pdoAttributes();
        $locations = openssl_get_cert_locations();
        if (is_file($locations['default_cert_file'])) {
            self::assertSame($locations['default_cert_file'], $attributes[\PDO::MYSQL_ATTR_SSL_CA]);
        } else {
            self::assertSame($locations['default_cert_dir'], $attributes[\PDO::MYSQL_ATTR_SSL_CAPATH]);
        }
        self::assertTrue($attributes[\PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT]);
    }

    public function testRedisStreamOptionsVerifyTheChainAndTheNameAndAskForTls12AtLeast(): void
    {
        $c = RouterConfig::from(self::config(['redis' => ['host' => '10.0.0.9', 'tls' => [
            'enabled' => true, 'ca_file' => self::CA, 'cert_file' => '/c.pem', 'key_file' => '/c.key',
        ]]]));
        $o = $c->redis->tls->streamOptions('10.0.0.9');
        self::assertSame(self::CA, $o['cafile']);
        self::assertSame('/c.pem', $o['local_cert']);
        self::assertSame('/c.key', $o['local_pk']);
        self::assertTrue($o['verify_peer']);
        self::assertTrue($o['verify_peer_name']);
        self::assertFalse($o['allow_self_signed']);
        self::assertSame('10.0.0.9', $o['peer_name']);
        self::assertSame(STREAM_CRYPTO_METHOD_TLSv1_2_CLIENT | STREAM_CRYPTO_METHOD_TLSv1_3_CLIENT, $o['crypto_method']);

        $named = RouterConfig::from(self::config(['redis' => ['tls' => [
            'enabled' => true, 'server_name' => 'redis.internal', 'min_version' => '1.3', 'verify_server_cert' => false,
        ]]]));
        $o = $named->redis->tls->streamOptions('10.0.0.9');
        self::assertSame('redis.internal', $o['peer_name']);
        self::assertSame(STREAM_CRYPTO_METHOD_TLSv1_3_CLIENT, $o['crypto_method']);
        self::assertFalse($o['verify_peer']);
        self::assertFalse($o['verify_peer_name']);
        self::assertArrayNotHasKey('cafile', $o);
    }

    /** @return iterable<string, array{array<string, mixed>, string}> */
    public static function badBlocks(): iterable
    {
        yield 'an unknown key' => [['tls' => ['enable' => true]], 'tls.enable: unknown key'];
        yield 'server_name for MySQL' => [['tls' => ['server_name' => 'db']], 'tls.server_name: unknown key'];
        yield 'required for Redis' => [['redis' => ['tls' => ['required' => true]]], 'redis.tls.required: unknown key'];
        yield 'required false' => [['tls' => ['required' => false]], 'tls.required: false cannot be had with mysqlnd'];
        yield 'a certificate without its key' => [['tls' => ['cert_file' => '/c.pem']], 'tls: cert_file and key_file go together'];
        yield 'a key without its certificate' => [['redis' => ['tls' => ['key_file' => '/c.key']]], 'redis.tls: cert_file and key_file'];
        yield 'min_version 1.1' => [['tls' => ['min_version' => '1.1']], 'tls.min_version: "1.2" or "1.3"'];
        yield 'min_version as a number' => [['tls' => ['min_version' => 1.3]], 'tls.min_version: not a string'];
        yield 'enabled not a bool' => [['tls' => ['enabled' => 'yes']], 'tls.enabled: not true or false'];
        yield 'an empty ca_file' => [['tls' => ['ca_file' => '']], 'tls.ca_file: not a non-empty string'];
        yield 'TLS over a unix socket' => [
            ['tls' => ['enabled' => true], 'replicas' => ['10.0.0.11:3306' => ['dsn' => 'mysql:unix_socket=/run/m.sock']]],
            'replicas.10.0.0.11:3306: TLS is enabled but the DSN names no TCP host',
        ];
        yield 'SSL attributes in options too' => [
            ['primary' => ['options' => [\PDO::MYSQL_ATTR_SSL_CA => self::CA], 'tls' => ['enabled' => true]]],
            'primary.options: sets a PDO::MYSQL_ATTR_SSL_* attribute while its tls block is enabled',
        ];
    }

    /**
     * @dataProvider badBlocks
     * @param array<string, mixed> $changes
     */
    public function testABadBlockFailsAtConstructionNamingTheKey(array $changes, string $message): void
    {
        $this->expectException(ConfigException::class);
        $this->expectExceptionMessage($message);
        RouterConfig::from(self::config($changes));
    }

    public function testSslAttributesInOptionsAreMysqlndsOwnWhenTheBlockIsOff(): void
    {
        $c = RouterConfig::from(self::config(['primary' => ['options' => [\PDO::MYSQL_ATTR_SSL_CA => self::CA]]]));
        self::assertSame([\PDO::MYSQL_ATTR_SSL_CA => self::CA], $c->primary->options);
        self::assertFalse($c->primary->tls->enabled);
    }

    public function testAnUnverifiedCertificateIsWarnedOfOncePerRouterAndTarget(): void
    {
        $logger = new MemoryLogger();
        $redis = new FakeRedis();
        $router = new Router(self::config([
            'redis' => ['host' => '10.0.0.9', 'port' => 6380, 'tls' => ['enabled' => true, 'verify_server_cert' => false]],
            'tls' => ['enabled' => true, 'ca_file' => self::CA],
            'replicas' => ['10.0.0.12:3306' => ['tls' => ['verify_server_cert' => false]]],
            'logger' => $logger,
        ]), new RouterDependencies(redis: $redis));
        self::assertSame([
            'route: TLS to Redis 10.0.0.9:6380 does not verify its certificate (redis.tls.verify_server_cert is false):'
            . ' anyone on the path can pose as the server',
            'route: TLS to MySQL 10.0.0.12:3306 does not verify its certificate'
            . ' (replicas.10.0.0.12:3306.tls.verify_server_cert is false): anyone on the path can pose as the server',
        ], $logger->at('warning'));
        $redis->pointer('10.0.0.1:3306');
        for ($i = 0; $i < 3; ++$i) {
            try {
                $router->connectionFor('SELECT 1');
            } catch (\PDOException) {
                // Nothing listens at the primary's DSN: only the warnings matter here.
            }
        }
        self::assertCount(2, array_filter($logger->at('warning'), static fn ($l) => str_contains($l, 'does not verify')));
        new Router(self::config(['logger' => $logger, 'tls' => ['enabled' => true]]), new RouterDependencies(redis: $redis));
        self::assertCount(2, array_filter($logger->at('warning'), static fn ($l) => str_contains($l, 'does not verify')));
    }

    public function testWhyRedisCouldNotBeReadIsTheDetailOfTheDecision(): void
    {
        $redis = new FakeRedis();
        $redis->down = true;
        $router = new Router(self::config(), new RouterDependencies(redis: $redis));
        try {
            $router->connectionFor('SELECT 1');
            self::fail('connected to the primary');
        } catch (\PDOException) {
            // Nothing listens at the primary's DSN: the decision was made and explained before.
        }
        self::assertSame('redis_unavailable', $router->routeInfo()->reason);
        self::assertSame('Redis 127.0.0.1:6379: Connection refused', $router->routeInfo()->detail);
        self::assertSame('route: SQL fingerprint=SELECT ? selected=primary delay_ms=- reason=redis_unavailable'
            . ' detail=Redis 127.0.0.1:6379: Connection refused', $router->routeInfo()->logLine());
        $redis->down = false;
        $redis->pointer('10.0.0.1:3306');
        try {
            $router->connectionFor('UPDATE t SET a = 1');
        } catch (\PDOException) {
            // As above.
        }
        self::assertSame('', $router->routeInfo()->detail);
    }

    /** @return iterable<string, array{string, string}> */
    public static function openSslTexts(): iterable
    {
        yield 'a name PHP checked' => ["Peer certificate subjectAltName did not match expected name `redis.example.com'", TlsReason::NAME_MISMATCH];
        yield 'a CN PHP checked' => ["Peer certificate CN=`localhost' did not match expected CN=`db1'", TlsReason::NAME_MISMATCH];
        yield 'verification' => ['SSL operation failed with code 1. OpenSSL Error messages: error:0A000086:SSL routines::certificate verify failed', TlsReason::UNTRUSTED];
        yield 'a plaintext port' => ['error:0A00010B:SSL routines::wrong version number', TlsReason::NOT_TLS];
        yield 'a client certificate wanted' => ['error:0A00045C:SSL routines::tlsv13 alert certificate required', TlsReason::CLIENT_CERT];
        yield 'a client certificate refused' => ['error:0A000418:SSL routines::tlsv1 alert unknown ca', TlsReason::CLIENT_CERT];
        yield 'a CA file missing' => ["failed loading cafile stream: `/nonexistent.pem'", TlsReason::CONFIG];
        yield 'a timeout' => ['SSL: Handshake timed out', TlsReason::HANDSHAKE];
        yield 'no common version' => ['error:0A00042E:SSL routines::tlsv1 alert protocol version', TlsReason::HANDSHAKE];
    }

    /** @dataProvider openSslTexts */
    public function testTheReasonIsNamedFromTheWordsOfTheFailure(string $text, string $reason): void
    {
        self::assertSame($reason, TlsReason::forText($text));
    }
}
