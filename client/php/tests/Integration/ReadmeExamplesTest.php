<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Integration;

/**
 * The PHP examples of the READMEs run as written: every ```php block of README.md's "PHP router"
 * section and of client/php/README.md, unless the line before it is an HTML comment starting
 * `<!-- fragment` (a list of calls, a config entry, placeholders), runs in a PHP process of its
 * own on the sandbox and must exit 0 with nothing on stderr (every notice and warning shown there)
 * and leave the order it wrote paid, read back. What the test changes, and only that: the
 * examples' network addresses become the sandbox's (self::addresses()), and the variables an
 * application already has are set before the block — $pw (the application's MySQL password),
 * $redisPw (its Redis ACL user's), $id (an order), $routerConfig and $config (the Router's and a
 * Laravel connection's configuration for the sandbox, which the READMEs show separately), $request
 * (a Symfony request with a session) — with the package's autoloading (tests/bootstrap.php, as
 * Composer's would be). The database is the examples': `shop` with an `orders` table, its user
 * `shop`@127.0.0.1.
 */
final class ReadmeExamplesTest extends SandboxTestCase
{
    private const PASSWORD = 'readme-shop-pw';
    private const ORDER = 7;
    private const FRAGMENT = '<!-- fragment';
    /** The runnable examples, by file, each named by a line it contains: a new one needs a name here. */
    private const RUNNABLE = [
        'README.md' => ['$router->execute(\'UPDATE orders'],
        'client/php/README.md' => ['RoutedConnection::params(', '$capsule->addConnection($config);'],
    ];

    /** @return list<array{int, string, bool}> the ```php blocks of $markdown: line, code, fragment */
    private static function blocks(string $markdown): array
    {
        $lines = explode("\n", $markdown);
        $out = [];
        for ($i = 0; $i < count($lines); ++$i) {
            if (rtrim($lines[$i]) !== '```php') {
                continue;
            }
            $fragment = $i > 0 && str_starts_with(trim($lines[$i - 1]), self::FRAGMENT);
            $code = [];
            for ($j = $i + 1; $j < count($lines) && rtrim($lines[$j]) !== '```'; ++$j) {
                $code[] = $lines[$j];
            }
            self::assertLessThan(count($lines), $j, "the block at line " . ($i + 1) . " is not closed");
            $out[] = [$i + 1, implode("\n", $code) . "\n", $fragment];
            $i = $j;
        }
        return $out;
    }

    /**
     * @return array<string, array{string, int}> file => the text that holds its examples (README.md:
     *   the PHP router section) and the number of lines before that text
     */
    private static function sources(): array
    {
        $root = Sandbox::sourceDir();
        $readme = (string) file_get_contents($root . '/README.md');
        $start = strpos($readme, "\n## PHP router\n");
        self::assertNotFalse($start, 'README.md has a "PHP router" section');
        $end = strpos($readme, "\n## ", $start + 1);
        return [
            'README.md' => [substr($readme, $start, $end === false ? null : $end - $start), substr_count(substr($readme, 0, $start), "\n")],
            'client/php/README.md' => [(string) file_get_contents($root . '/client/php/README.md'), 0],
        ];
    }

    /** @return array<string, string> the examples' addresses => the sandbox's */
    private function addresses(): array
    {
        $s = $this->sandbox;
        $map = [];
        foreach (['10.0.0.11' => 'primary', '10.0.0.12' => 'replica1', '10.0.0.13' => 'replica2'] as $host => $server) {
            $port = $s->port($server);
            $map["'host' => '$host', 'port' => 3306"] = "'host' => '127.0.0.1', 'port' => $port";
            $map["host=$host;port=3306"] = "host=127.0.0.1;port=$port";
            $map["'$host:3306'"] = "'127.0.0.1:$port'";
        }
        $map["'host' => '10.0.0.5'"] = "'host' => '127.0.0.1', 'port' => " . $s->port('redis');
        $map["'username' => 'lagwatch-php'"] = var_export('username', true) . ' => ' . var_export($s->env('REDIS_ROUTER_USER'), true);
        return $map;
    }

    /** The examples' database, user and order on the primary, replicated, the order not paid yet. */
    private function prepareShop(): void
    {
        $admin = $this->sandbox->admin('primary');
        $admin->exec('CREATE DATABASE IF NOT EXISTS shop');
        $admin->exec('CREATE TABLE IF NOT EXISTS shop.orders (id INT PRIMARY KEY, state VARCHAR(16) NOT NULL)');
        $admin->exec("CREATE USER IF NOT EXISTS 'shop'@'127.0.0.1' IDENTIFIED BY '" . self::PASSWORD . "'");
        $admin->exec("GRANT SELECT, INSERT, UPDATE, DELETE ON shop.* TO 'shop'@'127.0.0.1'");
        $admin->exec('INSERT INTO shop.orders (id, state) VALUES (' . self::ORDER . ", 'new')"
            . " ON DUPLICATE KEY UPDATE state = 'new'");
        $pos = $admin->query('SELECT @@gtid_binlog_pos')->fetchColumn();
        foreach (['replica1', 'replica2'] as $r) {
            self::assertSame('0', (string) $this->sandbox->adminQuery($r, "SELECT MASTER_GTID_WAIT('$pos', 10)"), "$r caught up");
        }
    }

    /** What runs before a block: autoloading and the application's variables. */
    private function prelude(): string
    {
        $s = $this->sandbox;
        $socket = static fn (string $server): string => 'mysql:unix_socket=' . $s->socket($server) . ';dbname=shop';
        $routerConfig = [
            'app' => 'readme',
            'primary' => ['host' => '127.0.0.1', 'port' => $s->port('primary'), 'dsn' => $socket('primary'), 'user' => 'root', 'password' => ''],
            'replicas' => [
                $s->id('replica1') => ['dsn' => $socket('replica1'), 'user' => 'root', 'password' => ''],
                $s->id('replica2') => ['dsn' => $socket('replica2'), 'user' => 'root', 'password' => ''],
            ],
            'redis' => $s->routerRedis(),
        ];
        $config = [
            'driver' => 'mysql', 'host' => '127.0.0.1', 'port' => $s->port('primary'), 'unix_socket' => $s->socket('primary'),
            'database' => 'shop', 'username' => 'root', 'password' => '', 'charset' => 'utf8mb4',
            'collation' => 'utf8mb4_unicode_ci', 'prefix' => '',
            'lagwatch' => [
                'app' => 'readme',
                'redis' => $s->routerRedis(),
                'replicas' => [
                    $s->id('replica1') => ['unix_socket' => $s->socket('replica1')],
                    $s->id('replica2') => ['unix_socket' => $s->socket('replica2')],
                ],
            ],
        ];
        return "<?php\n"
            . 'require ' . var_export(realpath(__DIR__ . '/../bootstrap.php'), true) . ";\n"
            . "require_once 'Symfony/Component/HttpFoundation/autoload.php';\n"
            . '$pw = ' . var_export(self::PASSWORD, true) . ";\n"
            . '$redisPw = ' . var_export($s->secret('REDIS_ROUTER_PASSWORD_FILE'), true) . ";\n"
            . '$id = ' . self::ORDER . ";\n"
            . '$routerConfig = ' . var_export($routerConfig, true) . ";\n"
            . '$config = ' . var_export($config, true) . ";\n"
            . '$request = new Symfony\Component\HttpFoundation\Request();' . "\n"
            . '$request->setSession(new Symfony\Component\HttpFoundation\Session\Session('
            . 'new Symfony\Component\HttpFoundation\Session\Storage\MockArraySessionStorage()));' . "\n"
            . "session_id('lwreadme" . getmypid() . "');  // the user's session cookie\n"
            . "// --- the README's block ---\n";
    }

    /** @return array<string, array{string, int, string}> every runnable block: file, line, code */
    public static function runnable(): array
    {
        $out = [];
        foreach (self::sources() as $file => [$text, $before]) {
            foreach (self::blocks($text) as [$line, $code, $fragment]) {
                if (!$fragment) {
                    $out["$file:" . ($line + $before)] = [$file, $line + $before, $code];
                }
            }
        }
        return $out;
    }

    public function testEveryBlockIsAnExampleThatRunsOrAMarkedFragment(): void
    {
        $seen = [];
        foreach (self::sources() as $file => [$text, $before]) {
            $blocks = self::blocks($text);
            self::assertNotEmpty($blocks, $file);
            foreach ($blocks as [$line, $code, $fragment]) {
                if ($fragment) {
                    continue;
                }
                $names = array_values(array_filter(self::RUNNABLE[$file], static fn (string $n): bool => str_contains($code, $n)));
                self::assertCount(1, $names, "$file:" . ($line + $before) . ": a runnable example not named in RUNNABLE (or mark it a fragment)");
                $seen[$file][] = $names[0];
            }
        }
        self::assertSame(self::RUNNABLE, $seen, 'each named example found, once, in that order');
    }

    /** @dataProvider runnable */
    public function testTheExampleRunsAsWrittenOnTheSandbox(string $file, int $line, string $code): void
    {
        $this->prepareShop();
        $used = [];
        foreach ($this->addresses() as $from => $to) {
            if (str_contains($code, $from)) {
                $used[] = $from;
                $code = str_replace($from, $to, $code);
            }
        }
        self::assertStringNotContainsString('10.0.0.', $code, "$file:$line: an address the test does not map");
        $dir = sys_get_temp_dir() . '/lw-readme-' . getmypid();
        @mkdir($dir, 0700);
        $script = "$dir/example.php";
        file_put_contents($script, $this->prelude() . $code . "\n// --- what the test reads back ---\n"
            . 'echo "\n@@result ", json_encode(["order" => $order ?? null, "state" => $state ?? null,'
            . ' "session" => $_SESSION ?? null]), "\n";' . "\n");
        try {
            $proc = proc_open(
                [PHP_BINARY, '-d', 'error_reporting=-1', '-d', 'display_errors=stderr', '-d', 'log_errors=0',
                    '-d', "session.save_path=$dir", $script],
                [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
                $pipes,
            );
            self::assertIsResource($proc);
            $out = (string) stream_get_contents($pipes[1]);
            $err = (string) stream_get_contents($pipes[2]);
            fclose($pipes[1]);
            fclose($pipes[2]);
            $rc = proc_close($proc);
        } finally {
            array_map('unlink', glob("$dir/*") ?: []);
            @rmdir($dir);
        }
        $where = "$file:$line (addresses mapped: " . implode(', ', $used) . ")\nstdout: $out\nstderr: $err";
        self::assertSame(0, $rc, $where);
        self::assertSame('', $err, $where);
        self::assertSame(1, preg_match('/^@@result (.*)$/m', $out, $m), $where);
        $result = json_decode($m[1], true, 16, JSON_THROW_ON_ERROR);
        self::assertSame('paid', (string) $this->sandbox->adminQuery('primary', 'SELECT state FROM shop.orders WHERE id = ' . self::ORDER), $where);
        self::assertSame('paid', $result['order']['state'] ?? $result['state'], "$where\nthe example read its write back");
        if ($file === 'README.md') {
            $stored = $result['session']['lagwatch_rw'] ?? null;
            self::assertIsArray($stored, "$where\nthe token kept in \$_SESSION");
            self::assertSame(['session', 'expires_at_ms'], array_keys($stored), 'the stamped form, with its expiry');
            self::assertGreaterThan(microtime(true) * 1000 + 50000, $stored['expires_at_ms']);
            self::assertStringContainsString('"token"', $stored['session'], 'a read-your-writes token');
        }
    }
}
