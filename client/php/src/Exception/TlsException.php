<?php

declare(strict_types=1);

namespace Lagwatch\Router\Exception;

/**
 * A MySQL server's connection could not be had over TLS as its `tls` block asks: the handshake
 * failed (reason unknown_ca, name_mismatch, expired, not_tls, client_cert, ...; TlsReason), or
 * the session the server gave is not encrypted or is below min_version. A PDOException, so a
 * `catch (\PDOException)` around a connect still sees it; the connection was not used.
 */
final class TlsException extends \PDOException implements LagwatchException
{
    /** @param string $reason a TlsReason */
    public function __construct(string $message, public readonly string $reason, ?\Throwable $previous = null)
    {
        parent::__construct($message, 0, $previous);
        if ($previous instanceof \PDOException) {
            $this->errorInfo = $previous->errorInfo;
        }
    }
}
