<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Unit\Contract;

use Lagwatch\Router\Contract\Circuit;
use Lagwatch\Router\Contract\ContractReader;
use Lagwatch\Router\Tests\Unit\FakeRedis;
use PHPUnit\Framework\TestCase;

final class ContractReaderTest extends TestCase
{
    private const R1 = '10.0.0.11:3306';
    private const R2 = '10.0.0.12:3306';
    private const PRIMARY = '10.0.0.1:3306';

    private FakeRedis $redis;

    protected function setUp(): void
    {
        $this->redis = new FakeRedis();
        $this->redis->replica(self::R1);
        $this->redis->replica(self::R2, ['tier' => 'tier2', 'max_delay_ms' => '1000']);
        $this->redis->pointer(self::PRIMARY);
        $this->redis->hashes['lagwatch:primary:' . self::PRIMARY] = [
            'state' => 'degraded', 'read_only' => '0', 'last_write_ms' => '1', 'consecutive_failures' => '1', 'topology' => 'ok',
        ];
    }

    private function reader(int $cacheMs = 0, string $primary = self::PRIMARY): ContractReader
    {
        return new ContractReader($this->redis, 'slave_delay', 1000, [self::R1, self::R2], $primary, $cacheMs, 200);
    }

    public function testOneRoundTripReadsTheSetThePointerTheKeysAndThePrimarysKey(): void
    {
        $c = $this->reader()->snapshot(5000);
        self::assertSame(1, $this->redis->roundTrips);
        self::assertTrue($c->readable);
        self::assertSame([self::R1, self::R2], $c->members);
        self::assertSame([self::R1, self::R2], array_keys($c->replicas));
        self::assertSame('tier2', $c->replicas[self::R2]->tier);
        self::assertSame(5000, $c->replicas[self::R1]->fetchedAtMs);
        self::assertSame(5900, $c->replicas[self::R1]->expiresAtMs);
        self::assertSame(self::PRIMARY, $c->primary->id);
        self::assertSame(Circuit::Degraded, $c->primary->circuit);
        self::assertTrue($c->primary->keyValid);
        self::assertSame(
            ['SMEMBERS', 'HGETALL', 'HGETALL', 'PTTL', 'HGETALL', 'PTTL', 'HGETALL'],
            array_map(static fn ($cmd) => $cmd[0], $this->redis->received)
        );
    }

    public function testAPointerNamingAnotherPrimaryCostsOneMoreRoundTripOnce(): void
    {
        $this->redis->pointer('10.0.0.9:3306', 'up');
        $this->redis->hashes['lagwatch:primary:10.0.0.9:3306'] = [
            'state' => 'down', 'read_only' => '0', 'last_write_ms' => '1', 'consecutive_failures' => '9', 'topology' => 'ok',
        ];
        $reader = $this->reader();
        $c = $reader->snapshot(1000);
        self::assertSame(2, $this->redis->roundTrips);
        self::assertSame(Circuit::Down, $c->primary->circuit);
        $reader->snapshot(2000);
        self::assertSame(3, $this->redis->roundTrips);
    }

    public function testMissingExpiredAndMalformedKeysAreUnusableAndCounted(): void
    {
        $reader = new ContractReader($this->redis, 'slave_delay', 1000, [self::R1, self::R2, '10.0.0.13:3306', '10.0.0.14:3306', '10.0.0.15:3306'], self::PRIMARY);
        $this->redis->sets['slave_delay:replicas'] = [self::R1, self::R2, '10.0.0.13:3306', '10.0.0.14:3306', '10.0.0.15:3306', 'not an id'];
        unset($this->redis->hashes['slave_delay:' . self::R1]);                     // missing
        $this->redis->replica('10.0.0.13:3306', ['weight' => '100 ']);              // malformed
        $this->redis->replica('10.0.0.14:3306');
        unset($this->redis->pttl['slave_delay:10.0.0.14:3306']);                    // no expiry
        $this->redis->strings['slave_delay:10.0.0.15:3306'] = 'x';                  // another type
        $c = $reader->snapshot(1000);
        self::assertSame([self::R2], array_keys($c->replicas));
        self::assertSame(1, $reader->counters()['missing']);
        self::assertSame(4, $reader->counters()['malformed']);
        $problems = implode("\n", $reader->problems());
        self::assertStringContainsString('slave_delay:10.0.0.13:3306: weight: not an integer', $problems);
        self::assertStringContainsString('slave_delay:10.0.0.14:3306: no expiry', $problems);
        self::assertStringContainsString('slave_delay:10.0.0.15:3306: not a hash', $problems);
        self::assertStringContainsString('member is not host:port: "not an id"', $problems);
    }

    public function testAKeyOfAReplicaThatIsNoMemberIsNotUsed(): void
    {
        $this->redis->sets['slave_delay:replicas'] = [self::R2];
        $c = $this->reader()->snapshot(1000);
        self::assertSame([self::R2], array_keys($c->replicas));
    }

    public function testAMalformedPointerLeavesTheCircuitUnknown(): void
    {
        $this->redis->hashes['slave_delay:primary'] = ['primary' => self::PRIMARY, 'state' => 'sideways', 'topology' => 'ok'];
        $reader = $this->reader();
        $c = $reader->snapshot(1000);
        self::assertSame(Circuit::Unknown, $c->primary->circuit);
        self::assertSame(1, $reader->counters()['malformed']);
        unset($this->redis->hashes['slave_delay:primary']);
        self::assertSame(Circuit::Unknown, $reader->snapshot(2000)->primary->circuit);
    }

    public function testWithoutRedisEverythingIsUnusableAndRedisIsNotAskedAgainForAWhile(): void
    {
        $reader = $this->reader();
        $this->redis->down = true;
        $c = $reader->snapshot(1000);
        self::assertFalse($c->readable);
        self::assertSame([], $c->replicas);
        self::assertSame(Circuit::Unknown, $c->primary->circuit);
        self::assertSame(1, $reader->counters()['redis_errors']);
        self::assertStringContainsString('Connection refused', $reader->lastError());
        $this->redis->down = false;
        self::assertFalse($reader->snapshot(1199)->readable);  // within retry_after_ms
        self::assertSame(0, $this->redis->roundTrips);
        self::assertTrue($reader->snapshot(1200)->readable);
        self::assertSame('', $reader->lastError());
    }

    public function testFeedbackRidesAlongWithTheNextReadAndIsCountedLostWithoutRedis(): void
    {
        $reader = $this->reader();
        $reader->queue([['HINCRBY', 'rw_stats:shop', 'reads_master', '1']]);
        $reader->snapshot(1000);
        self::assertSame(1, $this->redis->roundTrips);
        self::assertSame('1', $this->redis->hashes['rw_stats:shop']['reads_master']);
        self::assertSame(1, $reader->counters()['feedback_sent']);

        $reader->queue([['HINCRBY', 'rw_stats:shop', 'reads_master', '1']]);
        $this->redis->down = true;
        $reader->snapshot(2000);
        self::assertSame(1, $reader->counters()['feedback_lost']);

        $this->redis->down = false;
        $reader->queue([['HINCRBY', 'rw_stats:shop', 'reads_master', '1']]);
        $reader->flush(2100);  // Redis is not asked again this soon: lost too
        self::assertSame(2, $reader->counters()['feedback_lost']);
        $reader->queue([['HINCRBY', 'rw_stats:shop', 'reads_master', '1']]);
        $reader->flush(3000);
        self::assertSame('2', $this->redis->hashes['rw_stats:shop']['reads_master']);
        $reader->flush(3000);  // nothing queued: no round trip
        self::assertSame(2, $this->redis->roundTrips);
    }

    public function testTheCacheServesAtMostTwentyFiveMsAndNeverPastAKeysExpiry(): void
    {
        $reader = $this->reader(100);  // asked for more than the contract allows
        $reader->snapshot(1000);
        $reader->snapshot(1024);
        self::assertSame(1, $this->redis->roundTrips);
        $reader->snapshot(1025);
        self::assertSame(2, $this->redis->roundTrips);

        $this->redis->pttl['slave_delay:' . self::R1] = 10;
        $reader->snapshot(2000);
        $reader->snapshot(2009);
        self::assertSame(3, $this->redis->roundTrips);
        $reader->snapshot(2010);
        self::assertSame(4, $this->redis->roundTrips);
        self::assertSame(2, $reader->counters()['served_from_cache']);

        $noCache = $this->reader();
        $noCache->snapshot(5000);
        $noCache->snapshot(5000);
        self::assertSame(6, $this->redis->roundTrips);
    }
}
