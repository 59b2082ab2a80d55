<?php

declare(strict_types=1);

/*
 * bench/stale_reads' PHP router row: one session of the shipped router (client/php) against the
 * sandbox in DIR, printing one JSON line per read until the stop file appears.
 *
 *   php stale_reads_worker.php --dir DIR --base-port P --role writer|reader --order-id N
 *       --orders N --seed S --stop-file F --app NAME
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

use Lagwatch\Router\Router;
use Lagwatch\Router\SeededRandom;

const THINK_MS = [0, 5, 20, 50, 100, 200, 500, 1000];
const READER_PERIOD_US = 25000;
const READ_SQL = 'SELECT o.seq, d.version FROM lwbench.oracle o JOIN lwbench.orders d WHERE o.id = 1 AND d.id = ?';

spl_autoload_register(static function (string $class): void {
    $prefix = 'Lagwatch\\Router\\';
    if (str_starts_with($class, $prefix)) {
        $file = __DIR__ . '/../src/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});

/** @return array<string, string> */
function options(array $argv): array
{
    $names = ['dir', 'base-port', 'role', 'order-id', 'orders', 'seed', 'stop-file', 'app'];
    $opts = getopt('', array_map(static fn (string $n): string => $n . ':', $names));
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
        'redis' => ['host' => '127.0.0.1', 'port' => $port + 3, 'key_prefix' => 'slave_delay'],
        'bounded_staleness' => true,
        'read_your_writes' => true,
        'random' => new SeededRandom((int) $o['seed']),
    ]);
}

function nowUs(): int
{
    return (int) (microtime(true) * 1e6);
}

/** Reads order $id through the router and prints its line. */
function readOrder(Router $router, int $id, bool $own, int $thinkMs, ?int $written): void
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
        $row = $router->query(READ_SQL, [$id])->fetch(PDO::FETCH_NUM);
        if (is_array($row)) {
            $line['server'] = $router->routeInfo()?->selected;
            $line['seq'] = (int) $row[0];
            $line['version'] = (int) $row[1];
        }
    } catch (Throwable) {
        // A failed read is a line with server null; the worker goes on.
    }
    $line['start_us'] = $start;
    $line['answer_us'] = nowUs();
    fwrite(STDOUT, json_encode($line) . "\n");
    fflush(STDOUT);
}

function writer(Router $router, array $o): void
{
    $id = (int) $o['order-id'];
    $version = null;
    for ($n = 0; !file_exists($o['stop-file']); ++$n) {
        try {
            // The version the row has, on the primary: at the start, and after a write whose fate is unknown.
            $version ??= (int) $router->query(
                'SELECT version FROM lwbench.orders WHERE id = ?',
                [$id],
                ['force_primary' => true],
            )->fetchColumn();
            if ($router->execute('UPDATE lwbench.orders SET version = version + 1 WHERE id = ?', [$id]) !== 1) {
                throw new RuntimeException("order $id does not exist");
            }
            ++$version;
        } catch (Throwable) {
            $version = null;
            usleep(100000);
            continue;
        }
        $think = THINK_MS[$n % count(THINK_MS)];
        usleep($think * 1000);
        readOrder($router, $id, true, $think, $version);
    }
}

function reader(Router $router, array $o): void
{
    $orders = max(1, (int) $o['orders']);
    $random = new SeededRandom((int) $o['seed'] + 1);
    while (!file_exists($o['stop-file'])) {
        readOrder($router, 1 + $random->below($orders), false, 0, null);
        $now = nowUs();
        usleep(READER_PERIOD_US - $now % READER_PERIOD_US);
    }
}

$o = options($argv);
$router = router($o);
$o['role'] === 'writer' ? writer($router, $o) : reader($router, $o);
$router->flush();
exit(0);
