<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

use Lagwatch\Router\Exception\LagwatchException;

/** Redis could not be reached or a round trip failed. Caught by the contract reader. */
final class TransportException extends \RuntimeException implements LagwatchException
{
    /** @param string $tlsReason a TlsReason when TLS to Redis failed (the message says why), else '' */
    public function __construct(
        string $message,
        int $code = 0,
        ?\Throwable $previous = null,
        public readonly string $tlsReason = '',
    ) {
        parent::__construct($message, $code, $previous);
    }
}
