<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

/**
 * One pipelined round trip to Redis (PhpRedisTransport; on a Redis Cluster the commands go one by
 * one, PhpRedisClusterTransport). The contract reader's only way to Redis, so tests can give it a
 * fake with fault switches.
 */
interface RedisTransport
{
    /**
     * Sends $commands (in one pipeline where the transport has one) and returns one reply per
     * command, in order: SMEMBERS a list of strings, HGETALL an array of field => value (empty
     * for a missing key), PTTL and HINCRBY an integer; false for a command Redis refused (a key of
     * another type).
     *
     * @param list<list<string>> $commands each [name, args...]: SMEMBERS, HGETALL, PTTL, HINCRBY
     * @return list<mixed>
     * @throws TransportException when Redis cannot be reached or the connection breaks; the next
     *         call reconnects
     */
    public function pipeline(array $commands): array;
}
