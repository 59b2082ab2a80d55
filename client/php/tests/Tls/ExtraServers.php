<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Lagwatch\Router\Tests\Integration\Sandbox;
use PHPUnit\Framework\Assert;
use RuntimeException;

/**
 * Servers of the tls suite's failure cases beside the sandbox, in <sandbox>-x on the ports after
 * the sandbox's (base + 5 ...): Redis without TLS, Redis with a certificate that is wrong in some
 * way or TLS 1.2 only, a MariaDB without TLS or with TLS 1.2 only. Each is stopped by the PID it was started with, after the test
 * class or at exit; a run that died leaves pid files that the next one stops (if the process still
 * works in that directory) before the sandbox is rebuilt.
 */
final class ExtraServers
{
    /** Offsets from the sandbox's base port. */
    public const PLAIN_REDIS = 5;
    public const WRONG_NAME_REDIS = 6;
    public const EXPIRED_REDIS = 7;
    public const TLS12_REDIS = 8;
    public const MARIADB = 9;

    /** @var array<string, int> name => pid */
    private static array $started = [];
    /** @var array<string, resource> proc_open's handles, kept: freeing one waits for the process */
    private static array $procs = [];
    private static bool $shutdownRegistered = false;
    private static string $mariadbMode = '';

    /** Beside the sandbox's directory, not in it: a pid file left by a run that died outlives `down`. */
    public static function dir(): string
    {
        return Sandbox::dir() . '-x';
    }

    public static function port(int $offset): int
    {
        return Sandbox::basePort() + $offset;
    }

    /**
     * A redis-server on base + $offset, without TLS ($tls null) or on a TLS port only with
     * $tls's settings (cert, key, and e.g. ['--tls-protocols', 'TLSv1.2']). No users, no data:
     * only the handshake matters.
     *
     * @param ?array{cert: string, key: string, args?: list<string>} $tls
     */
    public static function redis(string $name, int $offset, ?array $tls = null): int
    {
        if (isset(self::$started[$name])) {
            return self::port($offset);
        }
        self::prepare();
        $port = self::port($offset);
        $listen = $tls === null ? ['--port', (string) $port] : array_merge([
            '--port', '0', '--tls-port', (string) $port, '--tls-cert-file', $tls['cert'], '--tls-key-file', $tls['key'],
            '--tls-ca-cert-file', Sandbox::get()->env('TLS_CA'), '--tls-auth-clients', 'no',
        ], $tls['args'] ?? []);
        $pidFile = self::dir() . "/$name.pid";
        self::run(array_merge(['redis-server'], $listen, [
            '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'yes',
            '--pidfile', $pidFile, '--logfile', self::dir() . "/$name.log", '--dir', self::dir(),
        ]));
        $pid = 0;
        Assert::assertTrue(Sandbox::waitFor(static function () use ($pidFile, $port, &$pid): bool {
            $pid = (int) trim((string) @file_get_contents($pidFile));
            return $pid > 0 && self::listens($port);
        }, 5.0), "$name did not start: " . @file_get_contents(self::dir() . "/$name.log"));
        self::$started[$name] = $pid;
        return $port;
    }

    /**
     * A MariaDB on base + MARIADB (one datadir, restarted when asked for in another mode):
     * 'plain' without TLS (have_ssl DISABLED), or 'tls12' with the sandbox's server certificate
     * and TLS 1.2 only; with the test's account ($user, $password from 127.0.0.1, on lwtest) and
     * root by its unix socket. Returns its port.
     */
    public static function mariadb(string $mode, string $user, string $password): int
    {
        $port = self::port(self::MARIADB);
        if (self::$mariadbMode === $mode && isset(self::$started['mariadb'])) {
            return $port;
        }
        self::stopOne('mariadb');
        self::prepare();
        $d = self::dir() . '/m';
        $fresh = !is_dir("$d/data");
        if ($fresh) {
            @mkdir("$d/tmp", 0700, true);
            self::run(['mariadb-install-db', '--no-defaults', "--datadir=$d/data",
                '--auth-root-authentication-method=socket', '--skip-test-db', '--user=root']);
        }
        $tls = Sandbox::dir() . '/tls';
        $modeArgs = $mode === 'plain' ? ['--skip-ssl'] : ["--ssl-cert=$tls/server.pem", "--ssl-key=$tls/server.key",
            "--ssl-ca=$tls/ca.pem", '--tls-version=TLSv1.2'];
        self::start('mariadb', array_merge([
            '/usr/sbin/mariadbd', '--no-defaults', "--datadir=$d/data", "--socket=$d/s.sock", "--port=$port",
            '--bind-address=127.0.0.1', '--user=root', "--pid-file=$d/m.pid", "--log-error=$d/error.log",
            "--tmpdir=$d/tmp", '--skip-name-resolve', '--performance_schema=OFF', '--innodb_buffer_pool_size=16M',
            '--skip-log-bin',
        ], $modeArgs), "$d/launch.err");
        self::$mariadbMode = $mode;
        Assert::assertTrue(Sandbox::waitFor(static function (): bool {
            try {
                self::mariadbAdmin();
                return true;
            } catch (\PDOException) {
                return false;
            }
        }, 15.0), "the $mode MariaDB did not start: " . @file_get_contents("$d/error.log"));
        if ($fresh) {
            $root = self::mariadbAdmin();
            $root->exec("CREATE USER '$user'@'127.0.0.1' IDENTIFIED BY '$password'");
            $root->exec('CREATE DATABASE lwtest');
            $root->exec("GRANT ALL ON lwtest.* TO '$user'@'127.0.0.1'");
        }
        return $port;
    }

    /** Root on the extra MariaDB by its unix socket. */
    public static function mariadbAdmin(): \PDO
    {
        return new \PDO('mysql:unix_socket=' . self::dir() . '/m/s.sock', 'root', '', [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]);
    }

    /** Stops what this run started. */
    public static function stopAll(): void
    {
        foreach (array_keys(self::$started) as $name) {
            self::stopOne($name);
        }
    }

    /** At exit: what this run started stopped, and dir() removed. */
    public static function cleanUp(): void
    {
        self::stopAll();
        self::removeDir();
    }

    private static function removeDir(): void
    {
        if (is_dir(self::dir()) && preg_match('#^/tmp/lw-[A-Za-z0-9._-]+-x$#', self::dir()) === 1) {
            self::run(['rm', '-rf', '--', self::dir()]);
        }
    }

    /**
     * Starts $argv in the foreground as $name, a child of this process (stdin /dev/null, stdout
     * and stderr appended to $log, in $cwd), stopped by stopOne(), stopAll() and at exit; a pid
     * file under dir() lets the next run stop it if this one dies.
     *
     * @param list<string> $argv
     */
    public static function start(string $name, array $argv, string $log, ?string $cwd = null): void
    {
        $proc = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']], $pipes, $cwd);
        Assert::assertIsResource($proc, "cannot start $argv[0]");
        $pid = (int) proc_get_status($proc)['pid'];
        file_put_contents(self::dir() . "/$name.pid", "$pid\n");
        self::$started[$name] = $pid;
        self::$procs[$name] = $proc;
    }

    /** Stops the process started as $name (by its PID), if any. */
    public static function stopOne(string $name): void
    {
        if (isset(self::$started[$name])) {
            self::stop(self::$started[$name]);
            unset(self::$started[$name]);
        }
        if (isset(self::$procs[$name])) {
            proc_close(self::$procs[$name]);
            unset(self::$procs[$name]);
        }
    }

    /**
     * Stops servers a run that died left behind (their pid files under dir(), each process still
     * working in dir(), as this class started it) and empties dir(); once per run, before the
     * first server.
     */
    public static function stopLeftovers(): void
    {
        static $done = false;
        if ($done || self::$started !== []) {
            return;
        }
        $done = true;
        foreach (array_merge(glob(self::dir() . '/*.pid') ?: [], glob(self::dir() . '/m/m.pid') ?: []) as $file) {
            $pid = (int) trim((string) @file_get_contents($file));
            $cwd = $pid > 0 ? (string) @readlink("/proc/$pid/cwd") : '';
            if ($cwd === self::dir() || str_starts_with($cwd, self::dir() . '/')) {
                self::stop($pid);
            }
        }
        self::removeDir();
    }

    private static function stop(int $pid): void
    {
        if ($pid <= 0 || !posix_kill($pid, 0)) {
            return;
        }
        posix_kill($pid, SIGTERM);
        $gone = static function () use ($pid): bool {
            // A child of ours (mariadbd through proc_open) is a zombie until reaped: gone too.
            $stat = @file_get_contents("/proc/$pid/stat");
            return $stat === false || preg_match('/^\d+ \(.*\) Z/', $stat) === 1;
        };
        if (!Sandbox::waitFor($gone, 10.0)) {
            posix_kill($pid, SIGKILL);
            Sandbox::waitFor($gone, 5.0);
        }
    }

    /** dir() made, and emptied at exit. */
    public static function prepare(): void
    {
        @mkdir(self::dir(), 0700, true);
        if (!self::$shutdownRegistered) {
            self::$shutdownRegistered = true;
            register_shutdown_function([self::class, 'cleanUp']);
        }
    }

    public static function listens(int $port): bool
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
        $proc = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
        if (!is_resource($proc)) {
            throw new RuntimeException('cannot run ' . $argv[0]);
        }
        $out = stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        $rc = proc_close($proc);
        if ($rc !== 0) {
            throw new RuntimeException($argv[0] . " failed ($rc): $out");
        }
    }
}
