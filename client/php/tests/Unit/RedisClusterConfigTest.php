<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit;

use Lagwatch\Router\Contract\PhpRedisClusterTransport;
use Lagwatch\Router\Exception\ConfigException;
use Lagwatch\Router\RedisConfig;
use Lagwatch\Router\Router;
use Lagwatch\Router\RouterConfig;
use PHPUnit\Framework\TestCase;

/**
 * The `redis` block's Redis Cluster rules without servers: `cluster` (seed nodes, alone), the
 * key prefix's hash tag (the agent's cases of agent/config_test.cc, with the router's limit of
 * 128), and the router built on a cluster transport, degrading when no seed answers. On a real
 * cluster: tests/Cluster.
 */
final class RedisClusterConfigTest extends TestCase
{
    /** @param array<string, mixed> $redis */
    private static function config(array $redis): array
    {
        return [
            'app' => 'shop',
            'primary' => ['host' => '10.0.0.1', 'port' => 3306, 'dsn' => 'mysql:host=127.0.0.1;port=1'],
            'replicas' => ['10.0.0.11:3306' => ['dsn' => 'mysql:host=127.0.0.1;port=1']],
            'redis' => $redis,
        ];
    }

    public function testSeedsWithATaggedPrefixAnAclUserAndTlsAreAClusterConfiguration(): void
    {
        $r = RouterConfig::from(self::config([
            'cluster' => ['10.0.0.5:7000', 'redis-b.internal:7001', '[::1]:7002'],
            'key_prefix' => 'slave_delay:{shop}',
            'username' => 'lagwatch-php',
            'password' => 'pw',
            'tls' => ['enabled' => true, 'ca_file' => '/etc/lagwatch/ca.pem'],
        ]))->redis;
        self::assertSame(['10.0.0.5:7000', 'redis-b.internal:7001', '[::1]:7002'], $r->cluster);
        self::assertSame('slave_delay:{shop}', $r->keyPrefix);
        self::assertSame('lagwatch-php', $r->username);
        self::assertTrue($r->tls->enabled);
        self::assertSame('Redis Cluster 10.0.0.5:7000, redis-b.internal:7001, [::1]:7002', $r->describe());
        self::assertSame(['::1', 7002], RedisConfig::parseSeed('[::1]:7002'));
        // phpredis splits a seed at its last ':' and adds the brackets itself.
        self::assertSame('::1:7002', PhpRedisClusterTransport::phpredisSeed('[::1]:7002'));
        self::assertSame('10.0.0.5:7000', PhpRedisClusterTransport::phpredisSeed('10.0.0.5:7000'));

        $one = RouterConfig::from(self::config(['host' => '10.0.0.9']))->redis;
        self::assertSame([], $one->cluster);
        self::assertSame('Redis 10.0.0.9:6379', $one->describe());
    }

    public function testWithoutServerNameTheClustersTlsOptionsCheckEachNodeAtItsOwnAddress(): void
    {
        $tls = RouterConfig::from(self::config(['cluster' => ['10.0.0.5:7000'], 'tls' => ['enabled' => true]]))->redis->tls;
        self::assertArrayNotHasKey('peer_name', $tls->streamOptions(null));
        self::assertTrue($tls->streamOptions(null)['verify_peer_name']);
        $named = RouterConfig::from(self::config([
            'cluster' => ['10.0.0.5:7000'],
            'tls' => ['enabled' => true, 'server_name' => 'redis.internal'],
        ]))->redis->tls;
        self::assertSame('redis.internal', $named->streamOptions(null)['peer_name']);
    }

    /** @return iterable<string, array{array<string, mixed>, string}> */
    public static function badClusters(): iterable
    {
        yield 'with host' => [['cluster' => ['10.0.0.5:7000'], 'host' => '10.0.0.9'],
            'redis.host: not with redis.cluster (its nodes say where the keys are)'];
        yield 'with port' => [['cluster' => ['10.0.0.5:7000'], 'port' => 6379],
            'redis.port: not with redis.cluster'];
        yield 'with a database' => [['cluster' => ['10.0.0.5:7000'], 'database' => 2],
            'redis.database: not with redis.cluster (a Redis Cluster has database 0 only)'];
        yield 'empty' => [['cluster' => []], 'redis.cluster: not a non-empty list'];
        yield 'a string' => [['cluster' => '10.0.0.5:7000'], 'redis.cluster: not an array'];
        yield 'a map' => [['cluster' => ['a' => '10.0.0.5:7000']], 'redis.cluster: not a non-empty list'];
        yield 'no port' => [['cluster' => ['10.0.0.5']], 'redis.cluster[0]: must be "host:port"'];
        yield 'port 0' => [['cluster' => ['10.0.0.5:7000', '10.0.0.6:0']], 'redis.cluster[1]: must be "host:port"'];
        yield 'port too high' => [['cluster' => ['10.0.0.5:65536']], 'redis.cluster[0]: must be "host:port"'];
        yield 'IPv6 without brackets' => [['cluster' => ['::1:7000']], 'redis.cluster[0]: must be "host:port"'];
        yield 'brackets around a name' => [['cluster' => ['[redis]:7000']], 'redis.cluster[0]: must be "host:port"'];
        yield 'a URL' => [['cluster' => ['tls://10.0.0.5:7000']], 'redis.cluster[0]: must be "host:port"'];
        yield 'not a string' => [['cluster' => [7000]], 'redis.cluster[0]: must be "host:port"'];
        yield 'a duplicate' => [['cluster' => ['10.0.0.5:7000', '10.0.0.5:7000']], 'redis.cluster[1]: duplicate 10.0.0.5:7000'];
        yield 'an unknown key' => [['cluster' => ['10.0.0.5:7000'], 'sentinels' => ['10.0.0.5:26379']], 'redis.sentinels: unknown key'];
    }

    /**
     * @dataProvider badClusters
     * @param array<string, mixed> $redis
     */
    public function testABadClusterBlockFailsNamingTheKey(array $redis, string $message): void
    {
        try {
            RouterConfig::from(self::config($redis));
            self::fail('accepted');
        } catch (ConfigException $e) {
            self::assertStringStartsWith($message, $e->getMessage());
        }
    }

    /** @return iterable<string, array{string}> */
    public static function goodPrefixes(): iterable
    {
        foreach (['slave_delay', '{shard7}', 'lw:{a.b-c}:x', '{s}x', 'slave_delay:{shop}', str_repeat('p', 128)] as $p) {
            yield $p => [$p];
        }
        yield 'a 64-byte tag in a 128-byte prefix' => [str_repeat('p', 62) . '{' . str_repeat('t', 64) . '}'];
    }

    /** @dataProvider goodPrefixes */
    public function testAKeyPrefixMayHoldOneHashTag(string $prefix): void
    {
        self::assertTrue(RedisConfig::isKeyPrefix($prefix));
        self::assertSame($prefix, RouterConfig::from(self::config(['key_prefix' => $prefix]))->redis->keyPrefix);
    }

    /** @return iterable<string, array{string}> */
    public static function badPrefixes(): iterable
    {
        // agent/config_test.cc's cases ("a key prefix may hold one hash tag, nothing else of
        // braces"; "bad listen addresses and key prefixes are rejected"), with 129 for its 65.
        $bad = ['', '{}', '{a', 'a}', 'x{a}{b}', 'x{a b}', '{a}}', 'x{{a}}', str_repeat('p', 129),
            'slave delay', 'a*', 'a?', 'a[b]', '{ta g}', "a\r\nFLUSHALL", "a\nb", '$5', "a\0b", "sl\u{e4}ve",
            '{' . str_repeat('t', 65) . '}', str_repeat('p', 63) . '{' . str_repeat('t', 64) . '}'];
        foreach ($bad as $p) {
            yield json_encode($p) => [$p];
        }
    }

    /** @dataProvider badPrefixes */
    public function testAnyOtherBraceOrCharacterInAKeyPrefixIsRefused(string $prefix): void
    {
        self::assertFalse(RedisConfig::isKeyPrefix($prefix));
        try {
            RouterConfig::from(self::config(['key_prefix' => $prefix]));
            self::fail('accepted');
        } catch (ConfigException $e) {
            self::assertStringStartsWith('redis.key_prefix', $e->getMessage());
        }
    }

    public function testARouterOnAClusterWhoseSeedsDoNotAnswerSendsReadsToThePrimaryWithoutThrowing(): void
    {
        $logger = new MemoryLogger();
        $router = new Router(['logger' => $logger] + self::config(['cluster' => ['127.0.0.1:1', '127.0.0.1:2']]));
        try {
            $router->connectionFor('SELECT 1');
            self::fail('connected to 127.0.0.1:1');
        } catch (\PDOException) {
            // The primary's connection (nothing listens there) is the application's error.
        }
        $info = $router->routeInfo();
        self::assertSame('redis_unavailable', $info?->reason);
        self::assertSame('primary', $info->selected);
        self::assertStringStartsWith('Redis Cluster 127.0.0.1:1, 127.0.0.1:2: no seed gave the slot map', $info->detail);
        self::assertStringEndsWith('; cannot connect to 127.0.0.1:1, 127.0.0.1:2', $info->detail);
        self::assertSame(1, $router->stats()['redis_errors']);
    }
}
