<?php

declare(strict_types=1);

/*
 * bench/stale_reads' PHP router row: one session of the shipped router (client/php) against the
 * sandbox in DIR, printing one JSON line per read until the stop file appears.
 *
 *   php stale_reads_worker.php --dir DIR --base-port P --role writer|reader --order-id N
 *       --orders N --seed S --stop-file F --app NAME [--router MODE]
 *
 * MODE is `lagwatch` (default: the library's Router itself, RouterClient) or a framework's mode,
 * e.g. `laravel-stock`, `laravel`, `doctrine-stock`, `doctrine`: the part before the first '-'
 * names a class beside this one, Lagwatch\Router\Bench\<Framework>Client (LaravelClient.php, ...),
 * whose static create(string $mode, array $options): BenchClient makes it. A framework's client runs
 * each write and each read as its own request (new connection objects, the session's state kept
 * only where the framework would keep it between requests), as an application does.
 *
 * writer: UPDATE its order (lwbench.orders, id N) through the router (the primary; the token is
 *         taken after it), waits a think time (0, 5, 20, 50, 100, 200, 500, 1000 ms in turn), then
 *         reads the order back with the oracle's sequence through the router.
 * reader: every 25 ms (on the next multiple of 25 ms: a slow read skips turns, never catches up
 *         in a burst) reads a random order of 1..--orders with the oracle's sequence, no token.
 *
 * Each read prints {"own":..,"think_ms":..,"written":..,"server":..,"seq":..,"version":..,
 * "start_us":..,"answer_us":..} (times: wall clock, unix µs; server, seq and version null when the
 * read failed). Failures never end the worker: replica connections have a 2 s connect and read
 * timeout, so a frozen replica costs a failed read. Exits 0 once the stop file exists.
 */

use Lagwatch\Router\Bench\BenchClient;
use Lagwatch\Router\Bench\RouterClient;
use Lagwatch\Router\Bench\SandboxRedis;
use Lagwatch\Router\Router;
use Lagwatch\Router\RouterDependencies;
use Lagwatch\Router\SeededRandom;

const THINK_MS = [0, 5, 20, 50, 100, 200, 500, 1000];
const READER_PERIOD_US = 25000;
spl_autoload_register(static function (string $class): void {
    foreach (['Lagwatch\\Router\\Bench\\' => __DIR__ . '/', 'Lagwatch\\Router\\' => __DIR__ . '/../src/'] as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }
            return;
        }
    }
});

/** @return array<string, string> */
function options(array $argv): array
{
    $names = ['dir', 'base-port', 'role', 'order-id', 'orders', 'seed', 'stop-file', 'app'];
    $opts = getopt('', array_map(static fn (string $n): string => $n . ':', [...$names, 'router']));
    $opts['router'] ??= 'lagwatch';
    if (!is_string($opts['router']) || preg_match('/^[a-z]+(-[a-z]+)*$/', $opts['router']) !== 1) {
        fwrite(STDERR, "stale_reads_worker: --router is a mode like lagwatch or laravel-stock\n");
        exit(2);
    }
    foreach ($names as $n) {
        if (!isset($opts[$n]) || !is_string($opts[$n]) || $opts[$n] === '') {
            fwrite(STDERR, "stale_reads_worker: --$n is required\nusage: php " . basename($argv[0])
                . ' --dir DIR --base-port P --role writer|reader --order-id N --orders N --seed S'
                . " --stop-file F --app NAME\n");
            exit(2);
        }
    }
    if (!in_array($opts['role'], ['writer', 'reader'], true)) {
        fwrite(STDERR, "stale_reads_worker: --role is writer or reader\n");
        exit(2);
    }
    foreach (['base-port', 'order-id', 'orders', 'seed'] as $n) {
        if (!ctype_digit($opts[$n])) {
            fwrite(STDERR, "stale_reads_worker: --$n is a number\n");
            exit(2);
        }
    }
    return $opts;
}

function router(array $o): Router
{
    $dir = $o['dir'];
    $port = (int) $o['base-port'];
    $server = static fn (string $name): array => [
        'dsn' => "mysql:unix_socket=$dir/$name/mysqld.sock",
        'user' => 'root',
        'password' => '',
        'timeout' => 2,
        'read_timeout' => 2,
    ];
    return new Router([
        'app' => $o['app'],
        'primary' => ['host' => '127.0.0.1', 'port' => $port] + $server('primary'),
        'replicas' => [
            '127.0.0.1:' . ($port + 1) => $server('replica1'),
            '127.0.0.1:' . ($port + 2) => $server('replica2'),
        ],
        'redis' => SandboxRedis::config($dir, $port),
        'bounded_staleness' => true,
        'read_your_writes' => true,
        // One router for the whole run: a replica that failed comes back after 1 s (the
        // router's default, 0, skips it until reset(), for a router per request).
        'replica_retry_ms' => 1000,
    ], new RouterDependencies(random: new SeededRandom((int) $o['seed'])));
}

function nowUs(): int
{
    return (int) (microtime(true) * 1e6);
}

/** Reads order $id through $client and prints its line. */
function readOrder(BenchClient $client, int $id, bool $own, int $thinkMs, ?int $written): void
{
    $line = [
        'own' => $own,
        'think_ms' => $thinkMs,
        'written' => $written,
        'server' => null,
        'seq' => null,
        'version' => null,
    ];
    $start = nowUs();
    try {
        [$line['server'], $line['seq'], $line['version']] = $client->read($id);
    } catch (Throwable $e) {
        // A failed read is a line with server null; the worker goes on. Why, on stderr (the
        // bench counts such lines apart), at most once a second.
        [$line['server'], $line['seq'], $line['version']] = [null, null, null];
        static $lastReportUs = 0;
        if ($start - $lastReportUs >= 1000000) {
            $lastReportUs = $start;
            fwrite(STDERR, 'stale_reads_worker: read failed: ' . get_class($e) . ': ' . $e->getMessage() . "\n");
        }
    }
    $line['start_us'] = $start;
    $line['answer_us'] = nowUs();
    fwrite(STDOUT, json_encode($line) . "\n");
    fflush(STDOUT);
}

function writer(BenchClient $client, array $o): void
{
    $id = (int) $o['order-id'];
    $version = null;
    for ($n = 0; !file_exists($o['stop-file']); ++$n) {
        try {
            // The version the row has, on the primary: at the start, and after a write whose fate is unknown.
            $version ??= $client->versionOnPrimary($id);
            $client->write($id);
            ++$version;
        } catch (Throwable) {
            $version = null;
            usleep(100000);
            continue;
        }
        $think = THINK_MS[$n % count(THINK_MS)];
        usleep($think * 1000);
        readOrder($client, $id, true, $think, $version);
    }
}

function reader(BenchClient $client, array $o): void
{
    $orders = max(1, (int) $o['orders']);
    $random = new SeededRandom((int) $o['seed'] + 1);
    while (!file_exists($o['stop-file'])) {
        readOrder($client, 1 + $random->below($orders), false, 0, null);
        $now = nowUs();
        usleep(READER_PERIOD_US - $now % READER_PERIOD_US);
    }
}

/** The client for --router: the library's Router, or a framework's client class. */
function client(array $o): BenchClient
{
    if ($o['router'] === 'lagwatch') {
        return new RouterClient(router($o));
    }
    $class = 'Lagwatch\\Router\\Bench\\' . ucfirst(explode('-', $o['router'])[0]) . 'Client';
    if (!class_exists($class)) {
        fwrite(STDERR, "stale_reads_worker: no client for --router {$o['router']} ($class)\n");
        exit(2);
    }
    return $class::create($o['router'], $o);
}

$o = options($argv);
$client = client($o);
$o['role'] === 'writer' ? writer($client, $o) : reader($client, $o);
$client->close();
exit(0);
