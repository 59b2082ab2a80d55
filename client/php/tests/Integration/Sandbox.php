<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

use RuntimeException;

/**
 * The replication sandbox of scripts/sandbox in /tmp/lw-php (primary 29706, replicas 29707 and
 * 29708, Redis 29709; lagwatch's HTTP 29710; another suite sets LW_PHP_SANDBOX_DIR and
 * LW_PHP_SANDBOX_PORT for its own, and LW_PHP_SANDBOX_TLS=1 for one built with --tls: MySQL over
 * TCP only with TLS, Redis on a TLS port only with client certificates) and the real lagwatch
 * binary on it, shared by every
 * sandbox test of one PHPUnit run: brought up by the first, taken down after the last
 * (SandboxExtension) or at exit. Everything it starts it stops by PID: lagwatch by the PID
 * proc_open gave, the servers by scripts/sandbox (their pid files). An exclusive lock on
 * <dir>.lock keeps two runs from sharing the sandbox.
 */
final class Sandbox
{
    private const DEFAULT_DIR = '/tmp/lw-php';
    private const DEFAULT_BASE_PORT = 29706;
    private const LAGWATCH_STOP_GRACE_S = 5.0;

    private static ?self $instance = null;

    /** @var resource */
    private $lock;
    /** @var ?resource */
    private $lagwatch = null;
    private int $lagwatchPid = 0;
    private ?string $lagwatchConfigPath = null;
    private ?\Redis $redis = null;

    private function __construct()
    {
        $lock = fopen(self::dir() . '.lock', 'c');
        if ($lock === false) {
            throw new RuntimeException('cannot open ' . self::dir() . '.lock');
        }
        $this->lock = $lock;
        if (!flock($this->lock, LOCK_EX | LOCK_NB)) {
            fwrite(STDERR, self::dir() . " is in use by another test run; waiting for it\n");
            flock($this->lock, LOCK_EX);
        }
        $this->script('down');
        $this->script('up');
    }

    /** The sandbox's directory: LW_PHP_SANDBOX_DIR, else /tmp/lw-php. */
    public static function dir(): string
    {
        $dir = getenv('LW_PHP_SANDBOX_DIR');
        return is_string($dir) && $dir !== '' ? $dir : self::DEFAULT_DIR;
    }

    /** Whether the sandbox is built with --tls: LW_PHP_SANDBOX_TLS=1. */
    public static function tls(): bool
    {
        return getenv('LW_PHP_SANDBOX_TLS') === '1';
    }

    /** The primary's port (replicas +1 and +2, Redis +3, HTTP +4): LW_PHP_SANDBOX_PORT, else 29706. */
    public static function basePort(): int
    {
        $port = getenv('LW_PHP_SANDBOX_PORT');
        return is_string($port) && ctype_digit($port) ? (int) $port : self::DEFAULT_BASE_PORT;
    }

    /** The sandbox with lagwatch running and both replicas healthy, brought up on first use. */
    public static function get(): self
    {
        if (self::$instance === null) {
            self::$instance = new self();
            register_shutdown_function([self::class, 'shutdown']);
        }
        $s = self::$instance;
        if (!$s->lagwatchRunning()) {
            $s->startLagwatch();
        }
        $s->waitBothHealthy(20.0);
        return $s;
    }

    /**
     * The sandbox brought up on first use, lagwatch neither started nor waited for: for a suite
     * that runs lagwatch its own way (startLagwatchWith) and publishes elsewhere. Once a suite
     * took this way, get() would wait for healthy replicas in the sandbox's own Redis: use this.
     */
    public static function withoutLagwatch(): self
    {
        if (self::$instance === null) {
            self::$instance = new self();
            register_shutdown_function([self::class, 'shutdown']);
        }
        return self::$instance;
    }

    /** Stops lagwatch and takes the sandbox down, if it was brought up. Idempotent. */
    public static function shutdown(): void
    {
        $s = self::$instance;
        if ($s === null) {
            return;
        }
        self::$instance = null;
        $s->stopLagwatch();
        $s->redis?->close();
        $s->script('down');
        flock($s->lock, LOCK_UN);
        fclose($s->lock);
    }

    public static function sourceDir(): string
    {
        $dir = getenv('LAGWATCH_SOURCE_DIR');
        return $dir !== false && $dir !== '' ? $dir : (string) realpath(__DIR__ . '/../../../..');
    }

    public static function lagwatchBinary(): string
    {
        $bin = getenv('LAGWATCH_BINARY');
        return $bin !== false && $bin !== '' ? $bin : self::sourceDir() . '/build/lagwatch';
    }

    public function port(string $server): int
    {
        return self::basePort() + ['primary' => 0, 'replica1' => 1, 'replica2' => 2, 'redis' => 3, 'http' => 4][$server];
    }

    /** "127.0.0.1:<port>", as lagwatch names the server in Redis. */
    public function id(string $server): string
    {
        return '127.0.0.1:' . $this->port($server);
    }

    public function socket(string $server): string
    {
        return self::dir() . '/' . $server . '/mysqld.sock';
    }

    /** A new root session on $server over its unix socket. */
    public function admin(string $server): \PDO
    {
        return new \PDO('mysql:unix_socket=' . $this->socket($server), 'root', '', [
            \PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION,
            \PDO::ATTR_TIMEOUT => 5,
        ]);
    }

    /** Runs $sql as root on $server; the first column of the first row, if any. */
    public function adminQuery(string $server, string $sql): mixed
    {
        $stmt = $this->admin($server)->query($sql);
        $v = $stmt->columnCount() > 0 ? $stmt->fetchColumn() : false;
        return $v === false ? null : $v;
    }

    /** A Redis connection to the sandbox's Redis as its admin, reconnected when it broke. */
    public function redis(): \Redis
    {
        try {
            if ($this->redis !== null && $this->redis->ping() !== false) {
                return $this->redis;
            }
        } catch (\RedisException) {
            // Reconnect below.
        }
        return $this->redis = $this->redisAs('default', $this->secret('REDIS_ADMIN_PASSWORD_FILE'));
    }

    /**
     * A new Redis connection to the sandbox's Redis, or to another on $port, as $user (TLS with
     * the sandbox's client certificate under --tls).
     */
    public function redisAs(string $user, string $password, ?int $port = null): \Redis
    {
        $r = new \Redis();
        $port ??= $this->port('redis');
        if ($this->env('TLS') === '1') {
            $r->connect('tls://127.0.0.1', $port, 2.0, null, 0, 2.0, ['stream' => [
                'cafile' => $this->env('TLS_CA'),
                'local_cert' => $this->env('TLS_CLIENT_CERT'),
                'local_pk' => $this->env('TLS_CLIENT_KEY'),
                'verify_peer' => true,
                'verify_peer_name' => true,
                'peer_name' => '127.0.0.1',
            ]]);
        } else {
            $r->connect('127.0.0.1', $port, 2.0);
        }
        $r->auth([$user, $password]);
        return $r;
    }

    /**
     * The router's `redis` configuration: the sandbox's lagwatch-router ACL user, which may read
     * the contract and count rw_stats, nothing more, with a 0.5 s timeout; under --tls with its
     * `tls` block (the sandbox's CA, its client certificate).
     *
     * The timeout: the tests check where reads go, and a read that finds Redis unavailable goes
     * to the primary. 0.05 s (the default) is short for a Redis round trip, and more so for a TLS
     * handshake, on a 2-core host running the other suites beside these: one read once went to
     * the primary that way. A Redis that is down answers at once either way.
     *
     * @return array<string, mixed>
     */
    public function routerRedis(): array
    {
        $config = [
            'host' => '127.0.0.1',
            'port' => $this->port('redis'),
            'username' => $this->env('REDIS_ROUTER_USER'),
            'password' => $this->secret('REDIS_ROUTER_PASSWORD_FILE'),
            'timeout' => 0.5,
        ];
        if ($this->env('TLS') === '1') {
            $config['tls'] = $this->tlsBlock();
        }
        return $config;
    }

    /**
     * A `tls` block with the sandbox's CA and client certificate (built with --tls), for Redis
     * or MySQL.
     *
     * @return array<string, mixed>
     */
    public function tlsBlock(): array
    {
        return [
            'enabled' => true,
            'ca_file' => $this->env('TLS_CA'),
            'cert_file' => $this->env('TLS_CLIENT_CERT'),
            'key_file' => $this->env('TLS_CLIENT_KEY'),
        ];
    }

    /** A VAR=value of the sandbox's env file ('' when missing). */
    public function env(string $var): string
    {
        foreach (file(self::dir() . '/env', FILE_IGNORE_NEW_LINES) ?: [] as $line) {
            if (str_starts_with($line, $var . '=')) {
                return substr($line, strlen($var) + 1);
            }
        }
        return '';
    }

    /** The password in the file the env variable $var names. */
    public function secret(string $var): string
    {
        return rtrim((string) file_get_contents($this->env($var)), "\n");
    }

    /** @return array<string, string> replica $server's hash in Redis (empty when missing or Redis is away) */
    public function replicaHash(string $server): array
    {
        try {
            $h = $this->redis()->hGetAll('slave_delay:' . $this->id($server));
            return is_array($h) ? $h : [];
        } catch (\RedisException) {
            return [];
        }
    }

    public function isHealthy(string $server): bool
    {
        return ($this->replicaHash($server)['healthy'] ?? '') === '1';
    }

    public function waitBothHealthy(float $timeoutS): void
    {
        if (!self::waitFor(fn () => $this->isHealthy('replica1') && $this->isHealthy('replica2'), $timeoutS)) {
            throw new RuntimeException(sprintf(
                "replicas not both healthy within %.0f s: %s / %s\nlagwatch's log:\n%s",
                $timeoutS,
                json_encode($this->replicaHash('replica1')),
                json_encode($this->replicaHash('replica2')),
                $this->lagwatchLog(),
            ));
        }
    }

    /** The PID in $server's pid file (primary, replica1, replica2, redis); 0 if none. */
    public function pid(string $server): int
    {
        $file = $server === 'redis' ? self::dir() . '/redis/redis.pid' : self::dir() . '/' . $server . '/mysqld.pid';
        $text = @file_get_contents($file);
        return $text === false ? 0 : (int) trim($text);
    }

    /**
     * SIGSTOPs $pid and returns once every one of its threads is stopped: kill(2) returns before a
     * thread running on another core has stopped, and a query it was about to answer may still be
     * answered. Throws if they are not all stopped within 2 s.
     */
    public static function freeze(int $pid): void
    {
        posix_kill($pid, SIGSTOP);
        $stopped = self::waitFor(static function () use ($pid): bool {
            foreach (glob("/proc/$pid/task/*/stat") ?: [] as $stat) {
                $text = @file_get_contents($stat);
                // "tid (comm) S ...": the state follows the last ')'.
                $state = $text === false ? 'T' : substr($text, strrpos($text, ')') + 2, 1);
                if ($state !== 'T' && $state !== 't') {
                    return false;
                }
            }
            return true;
        }, 2.0);
        if (!$stopped) {
            throw new \RuntimeException("process $pid did not stop within 2 s of SIGSTOP");
        }
    }

    /** scripts/sandbox up: restarts whatever of the sandbox is down (Redis after a test killed it). */
    public function up(): void
    {
        $this->script('up');
    }

    /**
     * Starts lagwatch with the sandbox's configuration, or with $changes merged into it (written
     * beside it), and waits until both replicas are healthy.
     *
     * @param array<string, mixed> $changes
     */
    public function startLagwatch(array $changes = []): void
    {
        if ($changes === []) {
            $this->launchLagwatch(self::dir() . '/lagwatch.json');
        } else {
            $this->startLagwatchWith(array_replace_recursive($this->lagwatchConfig(), $changes));
        }
        $this->waitBothHealthy(20.0);
    }

    /** @return array<string, mixed> the sandbox's own lagwatch.json */
    public function lagwatchConfig(): array
    {
        return json_decode((string) file_get_contents(self::dir() . '/lagwatch.json'), true, 64, JSON_THROW_ON_ERROR);
    }

    /**
     * Starts lagwatch with $config (written beside the sandbox's as lagwatch-php-test.json)
     * without waiting for anything: the caller knows where it publishes.
     *
     * @param array<string, mixed> $config
     */
    public function startLagwatchWith(array $config): void
    {
        $path = self::dir() . '/lagwatch-php-test.json';
        file_put_contents($path, json_encode($config, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES));
        $this->launchLagwatch($path);
    }

    private function launchLagwatch(string $config): void
    {
        if ($this->lagwatchRunning()) {
            throw new RuntimeException('lagwatch is already running (pid ' . $this->lagwatchPid . ')');
        }
        $log = self::dir() . '/lagwatch.log';
        $proc = proc_open(
            [self::lagwatchBinary(), '--config', $config],
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']],
            $pipes,
        );
        if (!is_resource($proc)) {
            throw new RuntimeException('cannot start ' . self::lagwatchBinary());
        }
        $this->lagwatch = $proc;
        $this->lagwatchPid = (int) proc_get_status($proc)['pid'];
        $this->lagwatchConfigPath = $config;
    }

    public function lagwatchRunning(): bool
    {
        return $this->lagwatch !== null && proc_get_status($this->lagwatch)['running'];
    }

    /**
     * Runs $body with lagwatch stopped and both replicas' keys replaced by $fields (expiring in
     * 30 s), then deletes those keys and starts lagwatch again, whatever $body did.
     *
     * @param array<string, string> $fields
     */
    public function withReplicaKeys(array $fields, callable $body): void
    {
        $this->stopLagwatch();
        $redis = $this->redis();
        try {
            foreach (['replica1', 'replica2'] as $r) {
                $key = 'slave_delay:' . $this->id($r);
                $redis->del($key);
                $redis->hMSet($key, $fields);
                $redis->pExpire($key, 30000);
            }
            $body();
        } finally {
            foreach (['replica1', 'replica2'] as $r) {
                $redis->del('slave_delay:' . $this->id($r));
            }
            $this->startLagwatch();
        }
    }

    /** Stops lagwatch by its PID: SIGTERM, then SIGKILL after a few seconds. */
    public function stopLagwatch(): void
    {
        if ($this->lagwatch === null) {
            return;
        }
        if (proc_get_status($this->lagwatch)['running']) {
            posix_kill($this->lagwatchPid, SIGTERM);
            if (!self::waitFor(fn () => !proc_get_status($this->lagwatch)['running'], self::LAGWATCH_STOP_GRACE_S)) {
                fwrite(STDERR, "lagwatch (pid {$this->lagwatchPid}) did not stop within 5 s of SIGTERM: SIGKILL\n");
                posix_kill($this->lagwatchPid, SIGKILL);
                self::waitFor(fn () => !proc_get_status($this->lagwatch)['running'], 5.0);
            }
        }
        proc_close($this->lagwatch);
        $this->lagwatch = null;
        $this->lagwatchPid = 0;
    }

    /** Whether lagwatch runs with a configuration other than the sandbox's own. */
    public function lagwatchCustomised(): bool
    {
        return $this->lagwatchConfigPath !== null && $this->lagwatchConfigPath !== self::dir() . '/lagwatch.json';
    }

    public function lagwatchLog(): string
    {
        $log = @file_get_contents(self::dir() . '/lagwatch.log');
        return $log === false ? '' : substr($log, -4000);
    }

    /** Polls $cond every 10 ms until it holds or $timeoutS pass; whether it held. */
    public static function waitFor(callable $cond, float $timeoutS): bool
    {
        $until = microtime(true) + $timeoutS;
        do {
            if ($cond()) {
                return true;
            }
            usleep(10000);
        } while (microtime(true) < $until);
        return (bool) $cond();
    }

    private function script(string $command): void
    {
        $argv = [self::sourceDir() . '/scripts/sandbox', $command, '--dir', self::dir(), '--base-port', (string) self::basePort()];
        if ($command === 'up' && self::tls()) {
            $argv[] = '--tls';
        }
        $proc = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
        if (!is_resource($proc)) {
            throw new RuntimeException('cannot run scripts/sandbox');
        }
        $out = stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        $rc = proc_close($proc);
        if ($rc !== 0) {
            throw new RuntimeException("scripts/sandbox $command failed ($rc):\n$out");
        }
    }
}
