<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Lagwatch\Router\Router;
use Lagwatch\Router\Tests\Integration\Sandbox;
use PHPUnit\Framework\Assert;

/**
 * The Sentinel workaround of client/php/README.md ("Redis Sentinel"): the router's `redis` points
 * at a local HAProxy (TLS from the router to the proxy with its usual `redis.tls` block, TLS from
 * the proxy to each Redis with a client certificate) whose tcp-check sends the servers
 * `INFO replication` and uses only the one that answers role:master. Two TLS-only Redis, the
 * second a replica of the first over TLS, with the sandbox's ACL user for the router; the test
 * writes the contract's records itself as the admin (lagwatch keeps writing the sandbox's Redis).
 * A switchover as Sentinel makes it (REPLICAOF NO ONE on the replica, then REPLICAOF the new
 * master on the old one) moves the router to the new master within a few check intervals, and
 * the router never fails meanwhile: a read goes to a replica of the contract or, while the proxy
 * has no master, to the primary as during a Redis outage.
 *
 * Ports base + 44 ... 46 (30050 ... 30052 for the tls suite's 30006); files under
 * <sandbox>-x/hx; every process stopped by its PID after the class (ExtraServers).
 */
final class HaproxySwitchoverTest extends TlsTestCase
{
    private const PROXY = 44;
    private const R1 = 45;
    private const R2 = 46;
    private const CHECK_USER = 'lagwatch-check';
    /** HAProxy's check interval (inter), and how long the router may take to follow a switch. */
    private const INTER_MS = 200;
    private const FOLLOW_S = 5.0;

    private static string $adminPassword = '';

    private static function dir(): string
    {
        return ExtraServers::dir() . '/hx';
    }

    public static function setUpBeforeClass(): void
    {
        parent::setUpBeforeClass();
        ExtraServers::prepare();
        @mkdir(self::dir(), 0700, true);
        self::$adminPassword = bin2hex(random_bytes(12));
        $s = Sandbox::get();
        $checkPassword = bin2hex(random_bytes(12));
        $r1 = ExtraServers::port(self::R1);
        self::redis('hx-r1', self::R1, [], $checkPassword);
        self::redis('hx-r2', self::R2, ['replicaof 127.0.0.1 ' . $r1, 'masteruser default',
            'masterauth ' . self::$adminPassword], $checkPassword);
        Assert::assertTrue(Sandbox::waitFor(
            static fn (): bool => str_contains(self::info(self::R2), 'master_link_status:up'),
            10.0,
        ), 'the replica did not sync over TLS: ' . @file_get_contents(self::dir() . '/hx-r2.log'));
        self::haproxy($s, $checkPassword);
    }

    /**
     * A TLS-only redis-server on base + $offset (the sandbox's server certificate, client
     * certificates required, replication over TLS with the sandbox's client certificate), with
     * `default` as the admin, the sandbox's lagwatch-router user (its ACL line of scripts/sandbox)
     * and a user for HAProxy's check; in the foreground, a child of this process.
     *
     * @param list<string> $more config lines
     */
    private static function redis(string $name, int $offset, array $more, string $checkPassword): void
    {
        $s = Sandbox::get();
        $tls = Sandbox::dir() . '/tls';
        $d = self::dir();
        $conf = array_merge([
            'port 0',
            'tls-port ' . ExtraServers::port($offset),
            'bind 127.0.0.1',
            "tls-cert-file $tls/server.pem",
            "tls-key-file $tls/server.key",
            "tls-client-cert-file $tls/client.pem",
            "tls-client-key-file $tls/client.key",
            "tls-ca-cert-file $tls/ca.pem",
            'tls-auth-clients yes',
            'tls-replication yes',
            'save ""',
            'appendonly no',
            "dir $d",
            "dbfilename $name.rdb",
            "logfile $d/$name.log",
            'user default on >' . self::$adminPassword . ' ~* &* +@all',
            self::sandboxAclLine($s->env('REDIS_ROUTER_USER')),
            'user ' . self::CHECK_USER . " on >$checkPassword resetkeys resetchannels -@all +auth +ping +info",
        ], $more);
        file_put_contents("$d/$name.conf", implode("\n", $conf) . "\n");
        ExtraServers::start($name, ['redis-server', "$d/$name.conf"], "$d/$name.log", $d);
        $port = ExtraServers::port($offset);
        Assert::assertTrue(
            Sandbox::waitFor(static fn (): bool => ExtraServers::listens($port), 5.0),
            "$name did not start: " . @file_get_contents("$d/$name.log"),
        );
    }

    /** $user's line of the sandbox's ACL file (its rights and its password's hash), as it is. */
    private static function sandboxAclLine(string $user): string
    {
        foreach (file(Sandbox::dir() . '/redis/users.acl', FILE_IGNORE_NEW_LINES) ?: [] as $line) {
            if (str_starts_with($line, "user $user ")) {
                return $line;
            }
        }
        Assert::fail("no ACL line for $user in the sandbox's users.acl");
    }

    /**
     * HAProxy in the foreground (-db) with the configuration README.md shows: a TLS frontend on
     * base + PROXY (the sandbox's server certificate, client certificates required), the two
     * Redis over TLS as backends, only the one whose INFO says role:master in use.
     */
    private static function haproxy(Sandbox $s, string $checkPassword): void
    {
        $tls = Sandbox::dir() . '/tls';
        $d = self::dir();
        file_put_contents("$d/server.pem", file_get_contents("$tls/server.pem") . file_get_contents("$tls/server.key"));
        file_put_contents("$d/client.pem", file_get_contents("$tls/client.pem") . file_get_contents("$tls/client.key"));
        $proxy = ExtraServers::port(self::PROXY);
        $r1 = ExtraServers::port(self::R1);
        $r2 = ExtraServers::port(self::R2);
        $inter = self::INTER_MS;
        $user = self::CHECK_USER;
        file_put_contents("$d/haproxy.cfg", <<<CFG
            global
                maxconn 256
            defaults
                mode tcp
                timeout connect 1s
                timeout client 60s
                timeout server 60s
                timeout check 1s
            frontend redis_tls
                bind 127.0.0.1:$proxy ssl crt $d/server.pem ca-file $tls/ca.pem verify required
                default_backend redis_master
            backend redis_master
                option tcp-check
                tcp-check send AUTH\\ $user\\ $checkPassword\\r\\n
                tcp-check expect string +OK
                tcp-check send PING\\r\\n
                tcp-check expect string +PONG
                tcp-check send INFO\\ replication\\r\\n
                tcp-check expect string role:master
                default-server check check-ssl check-sni localhost inter {$inter}ms fall 1 rise 1 on-marked-down shutdown-sessions ssl verify required ca-file $tls/ca.pem crt $d/client.pem sni str(localhost) verifyhost localhost
                server r1 127.0.0.1:$r1
                server r2 127.0.0.1:$r2

            CFG);
        ExtraServers::start('hx-haproxy', ['haproxy', '-db', '-f', "$d/haproxy.cfg"], "$d/hx-haproxy.log", $d);
        Assert::assertTrue(
            Sandbox::waitFor(static fn (): bool => ExtraServers::listens($proxy), 5.0),
            'HAProxy did not start: ' . @file_get_contents("$d/hx-haproxy.log"),
        );
        // HAProxy starts with every server up: until its first check marks the replica down,
        // a connection may land there.
        Assert::assertTrue(Sandbox::waitFor(
            static fn (): bool => str_contains((string) @file_get_contents("$d/hx-haproxy.log"), 'Server redis_master/r2 is DOWN'),
            5.0,
        ), 'HAProxy did not mark the replica down: ' . @file_get_contents("$d/hx-haproxy.log"));
    }

    /** An admin connection to the Redis on base + $offset, directly (not through HAProxy). */
    private static function admin(int $offset): \Redis
    {
        return Sandbox::get()->redisAs('default', self::$adminPassword, ExtraServers::port($offset));
    }

    private static function info(int $offset): string
    {
        try {
            return (string) self::admin($offset)->rawCommand('INFO', 'replication');
        } catch (\RedisException) {
            return '';
        }
    }

    /** On the Redis on base + $offset: $server's record healthy, every other replica's deleted. */
    private function publishOnly(int $offset, string $server): void
    {
        $s = $this->sandbox;
        $r = self::admin($offset);
        $key = 'slave_delay:' . $s->id($server);
        $r->multi();
        $r->del('slave_delay:' . $s->id('replica1'), 'slave_delay:' . $s->id('replica2'));
        $r->hMSet($key, [
            'delay_ms' => '0', 'delay_lower_ms' => '0', 'state' => 'ok', 'healthy' => '1', 'tier' => 'tier1',
            'weight' => '100', 'max_delay_ms' => '-1', 'seq' => '1',
            'measured_at_ms' => (string) (int) (microtime(true) * 1000),
            'agent' => '1', 'position' => '', 'position_kind' => 'none',
        ]);
        $r->pExpire($key, 120000);
        $r->del('slave_delay:replicas');
        $r->sAdd('slave_delay:replicas', $s->id($server));
        $r->exec();
    }

    /** The router's configuration with `redis` at HAProxy (its TLS block, the router's user). */
    private function proxied(): Router
    {
        return $this->router(['redis' => array_replace($this->sandbox->routerRedis(), [
            'port' => ExtraServers::port(self::PROXY),
        ])]);
    }

    /**
     * One read through $router; fails the test unless it went to a replica or, degraded, to the
     * primary because the contract was unreadable: the replica's name or 'primary'.
     */
    private function readOnce(Router $router): string
    {
        $port = (int) $router->query('SELECT @@port')->fetchColumn();
        $info = $router->routeInfo();
        $where = (string) $this->where($router);
        if ($where === 'primary') {
            self::assertSame('redis_unavailable', $info->reason, $this->why($info->logLine()));
            self::assertTrue($info->degraded, $this->why($info->logLine()));
        } else {
            self::assertContains($where, ['replica1', 'replica2'], $info->logLine());
        }
        self::assertSame($this->sandbox->port($where), $port);
        return $where;
    }

    /** $line, the router's log and HAProxy's, for a failure's message. */
    private function why(string $line): string
    {
        return $line . "\nrouter: " . json_encode(array_slice($this->logger->lines, -8))
            . "\nHAProxy: " . substr((string) @file_get_contents(self::dir() . '/hx-haproxy.log'), -3000);
    }

    /** @return array<string, int> calls of SMEMBERS (only the router sends it) on R1 and R2 */
    private static function smembersCalls(): array
    {
        $calls = [];
        foreach (['r1' => self::R1, 'r2' => self::R2] as $name => $offset) {
            $stats = (string) self::admin($offset)->rawCommand('INFO', 'commandstats');
            $calls[$name] = preg_match('/^cmdstat_smembers:calls=(\d+)/m', $stats, $m) === 1 ? (int) $m[1] : 0;
        }
        return $calls;
    }

    public function testAfterASwitchoverTheRouterReadsTheNewMastersContractThroughHaproxyAndNeverFails(): void
    {
        $this->publishOnly(self::R1, 'replica1');
        $router = $this->proxied();
        self::assertTrue(
            Sandbox::waitFor(fn (): bool => $this->readOnce($router) === 'replica1', self::FOLLOW_S),
            'no read on replica1 through HAProxy: ' . json_encode($this->logger->lines),
        );
        $before = self::smembersCalls();
        self::assertSame('replica1', $this->readOnce($router), $this->why(''));
        $after = self::smembersCalls();
        self::assertSame(1, $after['r1'] - $before['r1'], 'the contract was read from the master r1');
        self::assertSame(0, $after['r2'] - $before['r2']);

        // The switchover, as Sentinel makes it; the new master alone then publishes replica2.
        $t0 = microtime(true);
        self::assertTrue(self::admin(self::R2)->rawCommand('REPLICAOF', 'NO', 'ONE'));
        $this->publishOnly(self::R2, 'replica2');
        $old = self::admin(self::R1);
        $old->rawCommand('CONFIG', 'SET', 'masteruser', 'default');
        $old->rawCommand('CONFIG', 'SET', 'masterauth', self::$adminPassword);
        self::assertTrue($old->rawCommand('REPLICAOF', '127.0.0.1', (string) ExtraServers::port(self::R2)));

        $seen = [];
        $followed = Sandbox::waitFor(function () use ($router, &$seen): bool {
            $where = $this->readOnce($router);
            $seen[$where] = ($seen[$where] ?? 0) + 1;
            return $where === 'replica2';
        }, self::FOLLOW_S);
        $followedS = microtime(true) - $t0;
        self::assertTrue($followed, sprintf(
            'the router did not follow the new master within %.0f s: %s %s',
            self::FOLLOW_S,
            json_encode($seen),
            json_encode($this->logger->lines),
        ));
        fwrite(STDERR, sprintf("HAProxy switchover: the router read the new master after %.3f s (%s)\n", $followedS, json_encode($seen)));

        // Once HAProxy has marked the old master down, every read is decided by the new one.
        self::assertTrue(Sandbox::waitFor(
            static fn (): bool => str_contains(self::info(self::R1), 'role:slave'),
            self::FOLLOW_S,
        ));
        usleep(3 * self::INTER_MS * 1000);
        foreach ([$router, $this->proxied()] as $r) {
            $before = self::smembersCalls();
            for ($i = 0; $i < 20; ++$i) {
                self::assertSame('replica2', $this->readOnce($r));
            }
            $after = self::smembersCalls();
            self::assertSame(20, $after['r2'] - $before['r2'], 'the contract was read from the new master r2');
            self::assertSame(0, $after['r1'] - $before['r1'], 'nothing read from the old master r1');
        }
    }

    public function testWithNoMasterBehindHaproxyEveryReadGoesToThePrimaryWithoutAnException(): void
    {
        // Whichever is master after the other test, demote both: HAProxy has no server to use.
        $master = str_contains(self::info(self::R1), 'role:master') ? self::R1 : self::R2;
        $this->publishOnly($master, $master === self::R1 ? 'replica1' : 'replica2');
        $router = $this->proxied();
        self::assertTrue(Sandbox::waitFor(fn (): bool => $this->readOnce($router) !== 'primary', self::FOLLOW_S));
        $admin = self::admin($master);
        // Replica of a port where nothing listens: role:slave, keeps its data, not a master.
        self::assertTrue($admin->rawCommand('REPLICAOF', '127.0.0.1', (string) ExtraServers::port(self::PROXY + 3)));
        try {
            self::assertTrue(
                Sandbox::waitFor(fn (): bool => $this->readOnce($router) === 'primary', self::FOLLOW_S),
                'reads still on a replica with no master behind HAProxy',
            );
            $before = $router->stats();
            for ($i = 0; $i < 10; ++$i) {
                self::assertSame('primary', $this->readOnce($router));
                self::assertSame('redis_unavailable', $router->routeInfo()->reason);
            }
            self::assertSame(10, $router->stats()['redis_unavailable_reads'] - $before['redis_unavailable_reads']);
            self::assertCount(1, $this->warningsWith("cannot read lagwatch's contract from Redis"), json_encode($this->logger->lines));
        } finally {
            $admin->rawCommand('REPLICAOF', 'NO', 'ONE');
        }
        self::assertTrue(
            Sandbox::waitFor(fn (): bool => $this->readOnce($router) !== 'primary', self::FOLLOW_S),
            'routing did not resume when the master returned behind HAProxy',
        );
    }
}
