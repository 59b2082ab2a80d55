<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

/**
 * The router's least-privilege Redis user: the sandbox's lagwatch-router (what any router of this
 * project may do) cannot change the contract nor run scripts but counts rw_stats; and the ACL line
 * client/php/README.md gives for the PHP router is all the router needs: a router logged in with
 * it reads the contract and counts its reads, and that user can do nothing else.
 */
final class RedisAclTest extends TlsTestCase
{
    private const README_USER = 'lagwatch-php-readme';
    private const README_APP = 'phptls-acl';

    protected function tearDown(): void
    {
        $this->sandbox->redis()->rawCommand('ACL', 'DELUSER', self::README_USER);
        parent::tearDown();
    }

    /** Sends $command as the connection's user: its reply, or the error Redis answered. */
    private static function send(\Redis $r, string ...$command): mixed
    {
        $r->clearLastError();
        try {
            $reply = $r->rawCommand(...$command);
        } catch (\RedisException $e) {
            return $e->getMessage();  // phpredis throws for some errors (NOPERM), returns false for others
        }
        return $reply === false && $r->getLastError() !== null ? $r->getLastError() : $reply;
    }

    public function testTheSandboxsRouterUserCannotChangeTheContractNorRunScriptsButCountsReads(): void
    {
        $s = $this->sandbox;
        $router = $s->redisAs($s->env('REDIS_ROUTER_USER'), $s->secret('REDIS_ROUTER_PASSWORD_FILE'));
        $key = 'slave_delay:' . $s->id('replica1');
        $refused = [
            ['HSET', $key, 'healthy', '1'],
            ['DEL', $key],
            ['PEXPIRE', $key, '1'],
            ['EVAL', "return redis.call('HSET', KEYS[1], 'healthy', '1')", '1', $key],
            ['EVALSHA', sha1('return 1'), '0'],
            ['SCRIPT', 'LOAD', 'return 1'],
            ['SADD', 'slave_delay:replicas', '10.9.9.9:3306'],
            ['PUBLISH', 'slave_delay:events', '{}'],
        ];
        foreach ($refused as $command) {
            $reply = self::send($router, ...$command);
            self::assertIsString($reply, implode(' ', $command));
            self::assertStringStartsWith('NOPERM', $reply, implode(' ', $command));
        }
        self::assertSame('1', $s->replicaHash('replica1')['healthy'] ?? null, 'the contract is as lagwatch wrote it');
        self::assertIsInt(self::send($router, 'HINCRBY', 'rw_stats:phptls', 'reads_replica', '0'));
        self::assertNotEmpty(self::send($router, 'HGETALL', $key));
    }

    public function testTheReadmesAclLineIsWhatTheRouterNeedsAndNothingMore(): void
    {
        $s = $this->sandbox;
        $readme = (string) file_get_contents(__DIR__ . '/../../README.md');
        self::assertSame(1, preg_match('/^user lagwatch-php (on .+)$/m', $readme, $m), 'no ACL line in the README');
        $password = bin2hex(random_bytes(12));
        $rules = preg_split('/\s+/', strtr($m[1], ['>PASSWORD' => '>' . $password, '<app>' => self::README_APP]));
        self::assertTrue(self::send($s->redis(), 'ACL', 'SETUSER', self::README_USER, 'reset', ...$rules));
        $s->redis()->del('rw_stats:' . self::README_APP);

        $router = $this->router(['app' => self::README_APP, 'redis' => array_replace($s->routerRedis(), [
            'username' => self::README_USER,
            'password' => $password,
        ])]);
        $this->readOnAReplica($router);
        self::assertSame(1, $router->execute('UPDATE lwtest.tls_items SET v = v + 1 WHERE id = 1'));
        $this->readOnAReplica($router);
        $router->flush();
        $stats = $router->stats();
        self::assertSame(0, $stats['redis_errors']);
        self::assertSame(0, $stats['feedback_lost']);
        self::assertGreaterThan(0, $stats['feedback_sent']);
        $counted = $s->redis()->hGetAll('rw_stats:' . self::README_APP);
        self::assertSame($stats['reads_replica'], (int) ($counted['reads_replica'] ?? 0), json_encode($counted));

        $user = $s->redisAs(self::README_USER, $password);
        $key = 'slave_delay:' . $s->id('replica1');
        $refused = [
            ['HSET', $key, 'healthy', '0'],
            ['HGET', $key, 'healthy'],
            ['EVALSHA', sha1('return 1'), '0'],
            ['SUBSCRIBE', 'slave_delay:events'],
            ['HINCRBY', 'rw_stats:another-app', 'reads_replica', '1'],
            ['HSET', 'rw_stats:' . self::README_APP, 'reads_replica', '0'],
            ['KEYS', '*'],
        ];
        foreach ($refused as $command) {
            $reply = self::send($user, ...$command);
            self::assertIsString($reply, implode(' ', $command));
            self::assertStringContainsString('NOPERM', $reply, implode(' ', $command));
        }
    }
}
