<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Cluster;

use Lagwatch\Router\Tests\Integration\Sandbox;
use PHPUnit\Framework\Assert;
use RuntimeException;

/**
 * Redis Cluster nodes for the cluster suite, beside its sandbox in <sandbox>-rc: redis-server
 * processes started in the foreground (children of this PHP process, each working in its own
 * directory), made a cluster with redis-cli. Each is stopped by the PID it was started with, at
 * stopAll() or at exit; a run that died leaves pid files that the next one stops (if the process
 * still works in that directory) before it starts anything. Ports: the sandbox's base + 10 ...,
 * each node's cluster bus on its port + BUS (not Redis's default + 10000: 40000 and up is in
 * Linux's ephemeral range, 32768-60999, where a client connection's own port took a bus port,
 * "Address already in use", in three runs in a row on the test host).
 */
final class ClusterNodes
{
    /** The 3x2 cluster's first node, from the sandbox's base port: base + 10 ... base + 15. */
    public const FIRST = 10;
    /** The one-node TLS cluster. */
    public const TLS = 16;
    /** Where nothing listens (a cluster that cannot be reached). */
    public const NOWHERE = [17, 18];
    public const NODE_TIMEOUT_MS = 1000;
    /** A node's cluster bus port is its port + BUS. */
    public const BUS = 20;

    /** @var array<int, int> port => pid of the nodes started and not stopped */
    private static array $pids = [];
    /** @var array<int, resource> port => proc_open's handle (freeing one waits for the process) */
    private static array $procs = [];
    private static bool $prepared = false;

    public static function dir(): string
    {
        return Sandbox::dir() . '-rc';
    }

    public static function port(int $offset): int
    {
        return Sandbox::basePort() + $offset;
    }

    /** @return list<int> the 3x2 cluster's ports */
    public static function ports(): array
    {
        return range(self::port(self::FIRST), self::port(self::FIRST) + 5);
    }

    /** @return list<string> the 3x2 cluster's nodes as "127.0.0.1:<port>", its seeds */
    public static function seeds(): array
    {
        return array_map(static fn (int $p): string => "127.0.0.1:$p", self::ports());
    }

    /**
     * Starts six nodes and makes them a cluster of three masters with a replica each (redis-cli
     * --cluster create), ready when every node says cluster_state:ok, every replica has synced and
     * CLUSTER SLOTS lists each master's replica. The last matters to phpredis 5.3.7: a client
     * whose slot map lacks a master's replicas dies (SIGSEGV) on the MOVED to that replica once
     * it is promoted (phpredis issue 2323, fixed in 6.1); a cluster lists a replica only once
     * the others have heard of its replication offset, a second or so after the sync.
     */
    public static function startCluster(): void
    {
        self::prepare();
        $create = ['redis-cli', '--cluster', 'create'];
        foreach (self::ports() as $port) {
            self::startNode($port, [
                '--cluster-node-timeout', (string) self::NODE_TIMEOUT_MS,
                // A replica takes over only once it has synced: at once.
                '--repl-diskless-sync-delay', '0',
            ]);
            $create[] = "127.0.0.1:$port";
        }
        self::run(array_merge($create, ['--cluster-replicas', '1', '--cluster-yes']));
        $ready = static function (): bool {
            foreach (self::ports() as $port) {
                if (!str_contains(self::cli($port, 'CLUSTER', 'INFO'), 'cluster_state:ok')) {
                    return false;
                }
                $replication = self::cli($port, 'INFO', 'replication');
                if (str_contains($replication, 'role:slave') && !str_contains($replication, 'master_link_status:up')) {
                    return false;
                }
            }
            return self::slotsListReplicas(self::ports()[0]);
        };
        Assert::assertTrue(Sandbox::waitFor($ready, 30.0), 'the cluster is not ready: see ' . self::dir());
    }

    /**
     * Starts a cluster node on $port with $args (its directory dir()/<port>, its log there): bound
     * to 127.0.0.1, its cluster bus on $port + BUS, no persistence.
     *
     * @param list<string> $args
     */
    public static function startNode(int $port, array $args, bool $tlsOnly = false): void
    {
        self::prepare();
        $dir = self::dir() . "/$port";
        @mkdir($dir, 0700, true);
        $listen = $tlsOnly ? ['--port', '0', '--tls-port', (string) $port] : ['--port', (string) $port];
        $argv = array_merge(['/usr/bin/redis-server'], $listen, [
            '--cluster-enabled', 'yes', '--cluster-config-file', "$dir/nodes.conf", '--cluster-port', (string) ($port + self::BUS),
            '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
            '--dir', $dir, '--logfile', "$dir/log",
        ], $args);
        $proc = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['file', "$dir/out", 'a'], 2 => ['file', "$dir/out", 'a']], $pipes, $dir);
        Assert::assertIsResource($proc, 'cannot start redis-server');
        $pid = (int) proc_get_status($proc)['pid'];
        file_put_contents(self::dir() . "/$port.pid", "$pid\n");
        self::$pids[$port] = $pid;
        self::$procs[$port] = $proc;
        Assert::assertTrue(
            Sandbox::waitFor(static fn (): bool => self::listens($port), 10.0),
            "redis-server on $port does not listen: " . @file_get_contents("$dir/log"),
        );
    }

    /** Whether CLUSTER SLOTS on $port lists a replica for every range (host, port, id per node). */
    public static function slotsListReplicas(int $port): bool
    {
        $r = new \Redis();
        try {
            $r->connect('127.0.0.1', $port, 1.0, null, 0, 1.0);
            $slots = $r->rawCommand('CLUSTER', 'SLOTS');
        } catch (\RedisException) {
            return false;
        } finally {
            $r->close();
        }
        if (!is_array($slots) || $slots === []) {
            return false;
        }
        foreach ($slots as $range) {
            if (!is_array($range) || count($range) < 4) {
                return false;
            }
        }
        return true;
    }

    /**
     * The sandbox's Redis ACL users (its DIR/redis/users.acl, but `default`), each as the
     * arguments of ACL SETUSER: a cluster's nodes each keep their own users.
     *
     * @return list<list<string>>
     */
    public static function sandboxUsers(): array
    {
        $users = [];
        foreach (file(Sandbox::dir() . '/redis/users.acl', FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [] as $line) {
            $words = preg_split('/\s+/', trim($line)) ?: [];
            if (count($words) >= 3 && $words[0] === 'user' && $words[1] !== 'default') {
                $users[] = array_slice($words, 1);
            }
        }
        Assert::assertNotSame([], $users, 'no users in ' . Sandbox::dir() . '/redis/users.acl');
        return $users;
    }

    /**
     * Makes $users (ACL SETUSER arguments) on every node of $ports.
     *
     * @param list<list<string>> $users
     * @param list<int> $ports
     */
    public static function addUsers(array $users, array $ports): void
    {
        foreach ($users as $user) {
            foreach ($ports as $port) {
                $out = self::cli($port, 'ACL', 'SETUSER', ...$user);
                Assert::assertStringContainsString('OK', $out, "ACL SETUSER {$user[0]} on $port");
            }
        }
    }

    /** redis-cli as the nodes' default user (no password) against $port; its output. */
    public static function cli(int $port, string ...$args): string
    {
        return self::output(array_merge(['redis-cli', '-p', (string) $port], $args));
    }

    /** The master that serves $key now, as CLUSTER SLOTS on $askPort says; 0 if none. */
    public static function masterPortOf(string $key, int $askPort): int
    {
        $slot = (int) trim(self::cli($askPort, 'CLUSTER', 'KEYSLOT', $key));
        $r = new \Redis();
        try {
            $r->connect('127.0.0.1', $askPort, 1.0, null, 0, 1.0);
            $slots = $r->rawCommand('CLUSTER', 'SLOTS');
        } catch (\RedisException) {
            return 0;
        } finally {
            $r->close();
        }
        foreach (is_array($slots) ? $slots : [] as $range) {
            if ($slot >= $range[0] && $slot <= $range[1]) {
                return (int) $range[2][1];
            }
        }
        return 0;
    }

    /** A node of the 3x2 cluster still running; 0 if none. */
    public static function aliveNode(): int
    {
        foreach (self::ports() as $port) {
            if (isset(self::$pids[$port]) && str_contains(self::cli($port, 'PING'), 'PONG')) {
                return $port;
            }
        }
        return 0;
    }

    /** Whether $port's node runs as a master. */
    public static function isMaster(int $port): bool
    {
        return str_contains(self::cli($port, 'ROLE'), 'master');
    }

    /** SIGKILLs the node on $port (it stays down). */
    public static function kill(int $port): void
    {
        if (isset(self::$pids[$port])) {
            posix_kill(self::$pids[$port], SIGKILL);
            self::stopNode($port);
        }
    }

    /** Whether the node on $port was started by this run and not stopped since. */
    public static function isRunning(int $port): bool
    {
        return isset(self::$pids[$port]);
    }

    /** Stops the node on $port (SIGTERM), if this run started it. */
    public static function stop(int $port): void
    {
        if (isset(self::$pids[$port])) {
            self::stopNode($port);
        }
    }

    /** Stops every node this run started. */
    public static function stopAll(): void
    {
        foreach (array_keys(self::$pids) as $port) {
            self::stopNode($port);
        }
    }

    /** At exit: the nodes stopped and dir() removed. */
    public static function cleanUp(): void
    {
        self::stopAll();
        self::removeDir();
    }

    private static function stopNode(int $port): void
    {
        $pid = self::$pids[$port];
        if (posix_kill($pid, 0)) {
            posix_kill($pid, SIGTERM);
            if (!Sandbox::waitFor(static fn (): bool => !self::running($pid), 10.0)) {
                posix_kill($pid, SIGKILL);
                Sandbox::waitFor(static fn (): bool => !self::running($pid), 5.0);
            }
        }
        proc_close(self::$procs[$port]);
        unset(self::$pids[$port], self::$procs[$port]);
        @unlink(self::dir() . "/$port.pid");
    }

    /** Whether $pid still runs (a child of ours is a zombie until reaped: not running). */
    private static function running(int $pid): bool
    {
        $stat = @file_get_contents("/proc/$pid/stat");
        return $stat !== false && preg_match('/^\d+ \(.*\) Z/', $stat) !== 1;
    }

    /** Once per run: leftovers of a run that died stopped, dir() emptied, cleanUp() at exit. */
    private static function prepare(): void
    {
        if (self::$prepared) {
            return;
        }
        self::$prepared = true;
        foreach (glob(self::dir() . '/*.pid') ?: [] as $file) {
            $pid = (int) trim((string) @file_get_contents($file));
            $cwd = $pid > 0 ? (string) @readlink("/proc/$pid/cwd") : '';
            if (str_starts_with($cwd, self::dir() . '/')) {
                posix_kill($pid, SIGKILL);
                Sandbox::waitFor(static fn (): bool => !is_dir("/proc/$pid"), 5.0);
            }
        }
        self::removeDir();
        @mkdir(self::dir(), 0700, true);
        register_shutdown_function([self::class, 'cleanUp']);
    }

    private static function removeDir(): void
    {
        if (is_dir(self::dir()) && preg_match('#^/tmp/lw-[A-Za-z0-9._-]+-rc$#', self::dir()) === 1) {
            self::run(['rm', '-rf', '--', self::dir()]);
        }
    }

    private static function listens(int $port): bool
    {
        $s = @fsockopen('127.0.0.1', $port, $errno, $error, 0.2);
        if ($s === false) {
            return false;
        }
        fclose($s);
        return true;
    }

    /** @param list<string> $argv */
    private static function run(array $argv): void
    {
        $out = self::output($argv, $rc);
        if ($rc !== 0) {
            throw new RuntimeException($argv[0] . " failed ($rc): $out");
        }
    }

    /** @param list<string> $argv */
    private static function output(array $argv, ?int &$rc = null): string
    {
        $proc = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
        if (!is_resource($proc)) {
            throw new RuntimeException('cannot run ' . $argv[0]);
        }
        $out = (string) stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        $rc = proc_close($proc);
        return $out;
    }
}
