<?php

declare(strict_types=1);

namespace Lagwatch\Router\Exception;

/**
 * The statement was not sent: lagwatch says the primary's circuit is open (`down`) or two servers
 * are writable (`ambiguous`), and the statement needs the primary (a write, a locking read, a
 * statement in a transaction or forced to the primary), or it is a read and no replica can take
 * it. Thrown at once, without waiting for a connection to time out. The only exception the router
 * throws on purpose; nothing was run, so the application may retry later or report the outage.
 */
final class PrimaryUnavailableException extends \RuntimeException implements LagwatchException
{
    public function __construct(
        string $message,
        public readonly string $circuit,
        public readonly string $reason,
        public readonly string $primary,
    ) {
        parent::__construct($message);
    }
}
