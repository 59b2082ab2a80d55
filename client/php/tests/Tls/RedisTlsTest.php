<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Tls;

use Lagwatch\Router\Tls\TlsProbe;

/**
 * The router's Redis over TLS with a client certificate: the contract read and rw_stats counted
 * through it; every way TLS can fail named in the log line and routeInfo()'s detail, the reads on
 * the primary meanwhile (never plaintext, never an exception); an unverified certificate warned
 * of once per Router.
 */
final class RedisTlsTest extends TlsTestCase
{
    protected function setUp(): void
    {
        parent::setUp();
        TlsProbe::forget();
    }

    public function testTheContractIsReadAndReadsCountedOverTlsWithAClientCertificate(): void
    {
        $this->sandbox->redis()->del('rw_stats:phptls');
        $router = $this->router();
        [$port, $cipher] = $this->readOnAReplica($router);
        self::assertContains($port, [$this->sandbox->port('replica1'), $this->sandbox->port('replica2')]);
        self::assertNotSame('', $cipher);
        self::assertSame('', $router->routeInfo()->detail);
        $router->flush();
        $stats = $router->stats();
        self::assertSame(0, $stats['redis_errors'], json_encode($this->logger->lines));
        self::assertGreaterThan(0, $stats['refreshes']);
        self::assertGreaterThan(0, $stats['feedback_sent']);
        self::assertSame(0, $stats['feedback_lost']);
        $counted = $this->sandbox->redis()->hGetAll('rw_stats:phptls');
        self::assertGreaterThanOrEqual(1, (int) ($counted['reads_replica'] ?? 0), json_encode($counted));
        self::assertSame([], $this->warnings());
    }

    /** @return iterable<string, array{string, string}> */
    public static function failures(): iterable
    {
        yield 'another CA in ca_file' => ['other_ca', 'unknown_ca'];
        yield 'a server_name the certificate lacks' => ['server_name', 'name_mismatch'];
        yield 'a certificate for another name' => ['wrong_name_cert', 'name_mismatch'];
        yield 'an expired certificate' => ['expired_cert', 'expired'];
        yield 'no client certificate for a server that wants one' => ['no_client_cert', 'client_cert'];
        yield 'plaintext to the TLS-only port' => ['plaintext', 'plaintext_refused'];
        yield 'TLS to a plaintext Redis' => ['tls_to_plain', 'not_tls'];
        yield 'min_version 1.3 to a TLS 1.2 Redis' => ['tls13_to_tls12', 'handshake'];
        yield 'a ca_file that does not exist' => ['missing_ca', 'config'];
    }

    /** @dataProvider failures */
    public function testATlsFailureIsNamedAndReadsGoToThePrimaryWithoutAnException(string $case, string $reason): void
    {
        $redis = match ($case) {
            'other_ca' => $this->redisWith(['ca_file' => Certs::otherCa()]),
            'server_name' => $this->redisWith(['server_name' => 'redis.example.com']),
            'wrong_name_cert' => $this->redisWith([], ['port' => ExtraServers::redis('wrong-name', ExtraServers::WRONG_NAME_REDIS, Certs::wrongName())]),
            'expired_cert' => $this->redisWith([], ['port' => ExtraServers::redis('expired', ExtraServers::EXPIRED_REDIS, Certs::expired())]),
            'no_client_cert' => array_replace($this->sandbox->routerRedis(), ['tls' => ['enabled' => true, 'ca_file' => $this->sandbox->env('TLS_CA')]]),
            'plaintext' => array_diff_key($this->sandbox->routerRedis(), ['tls' => true]),
            'tls_to_plain' => $this->redisWith([], ['port' => ExtraServers::redis('plain', ExtraServers::PLAIN_REDIS)]),
            'tls13_to_tls12' => $this->redisWith(['min_version' => '1.3'], ['port' => ExtraServers::redis('tls12', ExtraServers::TLS12_REDIS, [
                'cert' => $this->sandbox->env('SANDBOX_DIR') . '/tls/server.pem',
                'key' => $this->sandbox->env('SANDBOX_DIR') . '/tls/server.key',
                'args' => ['--tls-protocols', 'TLSv1.2'],
            ])]),
            'missing_ca' => $this->redisWith(['ca_file' => ExtraServers::dir() . '/no-such-ca.pem']),
        };
        $router = $this->router(['redis' => $redis]);
        for ($i = 0; $i < 5; ++$i) {
            $row = $router->query(self::TLS_READ)->fetch(\PDO::FETCH_ASSOC);
            self::assertSame($this->sandbox->port('primary'), (int) $row['port']);
            $info = $router->routeInfo();
            self::assertSame('redis_unavailable', $info->reason);
            self::assertTrue($info->degraded);
            self::assertStringContainsString(": TLS $reason: ", $info->detail);
            self::assertStringContainsString(" detail=Redis 127.0.0.1:{$redis['port']}: TLS $reason: ", $info->logLine());
        }
        $stats = $router->stats();
        self::assertSame(5, $stats['redis_unavailable_reads']);
        self::assertGreaterThanOrEqual(1, $stats['redis_errors']);
        self::assertSame(0, $stats['refreshes']);
        $warnings = $this->warningsWith("cannot read lagwatch's contract from Redis");
        self::assertCount(1, $warnings, json_encode($this->logger->lines));
        self::assertStringContainsString("(Redis 127.0.0.1:{$redis['port']}: TLS $reason: ", $warnings[0]);
        // A write still goes to the primary, over TLS.
        self::assertSame(1, $router->execute('UPDATE lwtest.tls_items SET v = v + 1 WHERE id = 2'));
        self::assertSame('write', $router->routeInfo()->reason);
    }

    public function testWithVerificationOffTheWrongCaIsAcceptedAndWarnedOfOncePerRouter(): void
    {
        $config = ['redis' => $this->redisWith(['ca_file' => Certs::otherCa(), 'verify_server_cert' => false])];
        $router = $this->router($config);
        $this->readOnAReplica($router);
        for ($i = 0; $i < 5; ++$i) {
            $router->query('SELECT 1')->fetchAll();
        }
        self::assertSame(0, $router->stats()['redis_errors']);
        $warning = 'route: TLS to Redis 127.0.0.1:' . $this->sandbox->port('redis') . ' does not verify its certificate'
            . ' (redis.tls.verify_server_cert is false): anyone on the path can pose as the server';
        self::assertSame([$warning], $this->warnings());
        $this->router($config);
        self::assertSame([$warning, $warning], $this->warnings());
    }

    public function testAfterATlsFailureTheNextRouterWithTheRightSettingsReadsTheContract(): void
    {
        $bad = $this->router(['redis' => $this->redisWith(['server_name' => 'redis.example.com'])]);
        $bad->query('SELECT 1')->fetchAll();
        self::assertSame('redis_unavailable', $bad->routeInfo()->reason);
        $good = $this->router();
        $this->readOnAReplica($good);
        self::assertSame(0, $good->stats()['redis_errors']);
    }
}
