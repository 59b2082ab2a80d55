<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tls;

use Lagwatch\Router\TlsConfig;

/**
 * Names a TLS failure (TlsReason) where PHP does not: phpredis and mysqlnd report a failed
 * handshake as "Failed to enable crypto", "Cannot connect to MySQL using SSL" or a lost
 * connection, and OpenSSL's own words reach PHP only as "certificate verify failed". After a
 * failure (never on the way of a good connection) a probe opens one more connection to the same
 * server without sending anything of the application's (no AUTH, no login): a handshake with the
 * block's settings, and when verification failed, one without verification that fetches the
 * certificate to check its dates and chain against ca_file; for MySQL it reads the greeting first
 * (does the server offer TLS?) and asks for TLS as a client does. A server is probed at most once
 * per PROBE_INTERVAL_S per process: the answer is reused meanwhile (a server refusing every
 * connection is not sent twice as many, and MySQL counts aborted handshakes toward
 * max_connect_errors).
 *
 * @internal
 */
final class TlsProbe
{
    public const PROBE_INTERVAL_S = 10.0;
    private const CLIENT_SSL = 0x0800;
    /** CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_SSL | CLIENT_SECURE_CONNECTION */
    private const SSL_REQUEST_FLAGS = 0x0001 | 0x0200 | 0x0800 | 0x8000;

    /** @var array<string, array{float, ?array{string, string}}> probe key => [when, answer] */
    private static array $recent = [];

    /**
     * Runs $f with PHP's warnings kept rather than reported (phpredis and the stream layer say
     * what went wrong in warnings): [$f's result or null, what it threw or null, the warnings].
     *
     * @template T
     * @param callable(): T $f
     * @return array{?T, ?\Throwable, string}
     */
    public static function capture(callable $f): array
    {
        $warnings = [];
        set_error_handler(static function (int $no, string $text) use (&$warnings): bool {
            $warnings[] = preg_replace('/^[A-Za-z_:]+\(\): /', '', $text);
            return true;
        });
        try {
            return [$f(), null, implode('; ', $warnings)];
        } catch (\Throwable $e) {
            return [null, $e, implode('; ', $warnings)];
        } finally {
            restore_error_handler();
        }
    }

    /**
     * Why TLS to Redis at $host:$port failed, from the warnings of the attempt ($text): [reason,
     * explanation]. "certificate verify failed" is refined by fetching the certificate, a
     * handshake that timed out by asking whether a plaintext Redis answers there.
     *
     * @return array{string, string}
     */
    public static function explainRedis(string $text, string $host, int $port, TlsConfig $tls, float $timeoutS): array
    {
        $unreadable = $tls->unreadableFile();
        if ($unreadable !== '') {
            return [TlsReason::CONFIG, $unreadable];
        }
        $reason = TlsReason::forText($text);
        if ($reason === TlsReason::UNTRUSTED && $tls->verifyServerCert) {
            return self::once("redis-cert $host:$port " . serialize($tls), fn () => self::certificateProblem(
                $host,
                $port,
                $tls,
                $timeoutS,
                false,
            )) ?? [$reason, self::explanation($reason, $tls->peerName($host), $tls)];
        }
        if ($reason === TlsReason::HANDSHAKE && stripos($text, 'timed out') !== false) {
            $plain = self::once("redis-plain $host:$port", fn () => self::answersRedisInPlaintext($host, $port, $timeoutS)
                ? [TlsReason::NOT_TLS, "a plaintext Redis answers at $host:$port, not a TLS one"] : null);
            if ($plain !== null) {
                return $plain;
            }
        }
        return [$reason, self::explanation($reason, $tls->peerName($host), $tls)];
    }

    /**
     * Why a TLS connection to Redis at $host:$port broke at its first command without a word
     * from TLS (a reset can overtake the server's alert): [reason, explanation] from a probe
     * (handshake, PING), or null when the probe gets Redis's answer (not a TLS problem).
     *
     * @return ?array{string, string}
     */
    public static function diagnoseRedis(string $host, int $port, TlsConfig $tls, float $timeoutS): ?array
    {
        return self::once("redis $host:$port " . serialize($tls), static function () use ($host, $port, $tls, $timeoutS) {
            $s = self::open($host, $port, $timeoutS);
            if ($s === null) {
                return null;
            }
            try {
                [$ok, , $text] = self::handshake($s, $tls, $tls->peerName($host), false);
            } finally {
                fclose($s);
            }
            return $ok ? null : self::explainRedis($text, $host, $port, $tls, $timeoutS);
        });
    }

    /**
     * Why TLS to the MySQL server at $host:$port fails: [reason, explanation], or null when a
     * TLS session can be had there (the failure was something else) or the server cannot be
     * reached at all.
     *
     * @return ?array{string, string}
     */
    public static function diagnoseMysql(string $host, int $port, TlsConfig $tls, float $timeoutS): ?array
    {
        $unreadable = $tls->unreadableFile();
        if ($unreadable !== '') {
            return [TlsReason::CONFIG, $unreadable];
        }
        return self::once("mysql $host:$port " . serialize($tls), static function () use ($host, $port, $tls, $timeoutS) {
            $s = self::open($host, $port, $timeoutS);
            if ($s === null) {
                return null;
            }
            try {
                $offered = self::mysqlStartTls($s);
                if ($offered === null) {
                    return null;
                }
                if (!$offered) {
                    return [TlsReason::NOT_TLS, "the MySQL server at $host:$port offers no TLS (its greeting lacks"
                        . ' the SSL capability: have_ssl DISABLED?)'];
                }
                [$ok, , $text] = self::handshake($s, $tls, $host, true);
            } finally {
                fclose($s);
            }
            if ($ok === true) {
                return null;
            }
            $reason = TlsReason::forText($text);
            if ($reason === TlsReason::UNTRUSTED && $tls->verifyServerCert) {
                return self::certificateProblem($host, $port, $tls, $timeoutS, true)
                    ?? [$reason, self::explanation($reason, $host, $tls) . " ($text)"];
            }
            return [$reason, self::explanation($reason, $host, $tls) . ($text !== '' ? " ($text)" : '')];
        });
    }

    /**
     * Whether the server at $host:$port speaks TLS (a TLS-only Redis port reached in plaintext):
     * a handshake without verification completes, or the server answers it with a TLS alert.
     */
    public static function speaksTls(string $host, int $port, float $timeoutS): bool
    {
        return (bool) self::once("speaks-tls $host:$port", static function () use ($host, $port, $timeoutS): ?array {
            $s = self::open($host, $port, $timeoutS);
            if ($s === null) {
                return null;
            }
            try {
                [$ok, , $text] = self::handshake($s, new TlsConfig(true, null, null, null, false), $host, false);
            } finally {
                fclose($s);
            }
            $tls = $ok === true || stripos($text, 'alert') !== false || TlsReason::forText($text) === TlsReason::CLIENT_CERT;
            return $tls ? ['yes', ''] : null;
        });
    }

    /** Forgets the answers kept (tests). */
    public static function forget(): void
    {
        self::$recent = [];
    }

    /**
     * $probe()'s answer, or the one it gave for $key less than PROBE_INTERVAL_S ago.
     *
     * @param callable(): ?array{string, string} $probe
     * @return ?array{string, string}
     */
    private static function once(string $key, callable $probe): ?array
    {
        $now = microtime(true);
        $kept = self::$recent[$key] ?? null;
        if ($kept !== null && $now - $kept[0] < self::PROBE_INTERVAL_S) {
            return $kept[1];
        }
        foreach (self::$recent as $k => [$at]) {
            if ($now - $at >= self::PROBE_INTERVAL_S) {
                unset(self::$recent[$k]);
            }
        }
        $answer = $probe();
        self::$recent[$key] = [$now, $answer];
        return $answer;
    }

    /** @return ?resource a TCP connection with $timeoutS for everything, or null */
    private static function open(string $host, int $port, float $timeoutS)
    {
        $address = 'tcp://' . (str_contains($host, ':') ? '[' . $host . ']' : $host) . ':' . $port;
        [$s] = self::capture(static fn () => stream_socket_client(
            $address,
            $errno,
            $error,
            $timeoutS,
            STREAM_CLIENT_CONNECT,
            stream_context_create(),
        ));
        if (!is_resource($s)) {
            return null;
        }
        stream_set_timeout($s, (int) $timeoutS, (int) (fmod($timeoutS, 1.0) * 1e6));
        return $s;
    }

    /**
     * Starts TLS on stream $s with $tls's settings: [true or false, the stream's ssl parameters
     * (with the certificate when $capture), the warnings]. After the handshake a first read
     * catches a TLS 1.3 server's verdict on the client's certificate, which arrives only then
     * (Redis: a PING, which any Redis answers, +PONG or -NOAUTH, unless it drops the connection;
     * MySQL, which waits for the login: a short read that times out when all is well): a TLS
     * alert about the certificate, or a Redis that answers nothing, fails the handshake here.
     *
     * @param resource $s
     * @return array{bool, mixed, string}
     */
    private static function handshake($s, TlsConfig $tls, string $host, bool $mysql, bool $capture = false): array
    {
        $options = $tls->streamOptions($host);
        if ($capture) {
            $options['capture_peer_cert'] = true;
            $options['capture_peer_cert_chain'] = true;
        }
        foreach ($options as $k => $v) {
            stream_context_set_option($s, 'ssl', $k, $v);
        }
        [$ok, , $text] = self::capture(static fn () => stream_socket_enable_crypto($s, true, $tls->cryptoMethod()));
        if ($ok !== true) {
            return [false, null, $text];
        }
        $params = stream_context_get_params($s)['options']['ssl'] ?? [];
        if ($capture) {
            return [true, $params, $text];
        }
        [$reply, , $after] = self::capture(static function () use ($s, $mysql) {
            if ($mysql) {
                stream_set_timeout($s, 0, 200000);
                return fread($s, 64);
            }
            fwrite($s, "PING\r\n");
            return fgets($s, 256);
        });
        if (TlsReason::forText($after) === TlsReason::CLIENT_CERT) {
            return [false, null, $after];
        }
        if (!$mysql && (!is_string($reply) || $reply === '' || ($reply[0] !== '+' && $reply[0] !== '-'))) {
            // A TLS 1.3 server that refuses the client's certificate sends its alert and closes;
            // what was written meanwhile makes the close a reset that can arrive before the alert.
            return [false, null, 'the server closed the connection right after the TLS handshake, before'
                . ' answering a PING: certificate required' . ($after !== '' ? " ($after)" : '')];
        }
        return [true, $params, $text];
    }

    /**
     * The certificate's problem once verification failed: fetched without verification, its
     * dates, then its chain against ca_file (or the system's store). Null when it cannot be
     * fetched.
     *
     * @return ?array{string, string}
     */
    private static function certificateProblem(string $host, int $port, TlsConfig $tls, float $timeoutS, bool $mysql): ?array
    {
        $s = self::open($host, $port, $timeoutS);
        if ($s === null) {
            return null;
        }
        try {
            if ($mysql && self::mysqlStartTls($s) !== true) {
                return null;
            }
            $loose = new TlsConfig(true, null, $tls->certFile, $tls->keyFile, false, $tls->minVersion);
            [$ok, $params] = self::handshake($s, $loose, $host, $mysql, true);
        } finally {
            fclose($s);
        }
        $cert = $ok ? ($params['peer_certificate'] ?? null) : null;
        $parsed = $cert !== null ? openssl_x509_parse($cert) : false;
        if (!is_array($parsed)) {
            return null;
        }
        $subject = self::subject($parsed);
        $now = time();
        if (($parsed['validTo_time_t'] ?? PHP_INT_MAX) < $now) {
            return [TlsReason::EXPIRED, "the server's certificate ($subject) expired at "
                . gmdate('Y-m-d\TH:i:s\Z', (int) $parsed['validTo_time_t'])];
        }
        if (($parsed['validFrom_time_t'] ?? 0) > $now) {
            return [TlsReason::NOT_YET_VALID, "the server's certificate ($subject) is valid only from "
                . gmdate('Y-m-d\TH:i:s\Z', (int) $parsed['validFrom_time_t'])];
        }
        $chain = array_slice($params['peer_certificate_chain'] ?? [], 1);
        $untrusted = null;
        if ($chain !== []) {
            $untrusted = (string) tempnam(sys_get_temp_dir(), 'lwchain');
            $pem = '';
            foreach ($chain as $c) {
                openssl_x509_export($c, $out);
                $pem .= $out;
            }
            file_put_contents($untrusted, $pem);
        }
        try {
            [$trusted] = self::capture(static fn () => $untrusted === null
                ? openssl_x509_checkpurpose($cert, X509_PURPOSE_SSL_SERVER, $tls->caFile !== null ? [$tls->caFile] : [])
                : openssl_x509_checkpurpose(
                    $cert,
                    X509_PURPOSE_SSL_SERVER,
                    $tls->caFile !== null ? [$tls->caFile] : [],
                    $untrusted,
                ));
        } finally {
            if ($untrusted !== null) {
                @unlink($untrusted);
            }
        }
        if ($trusted === false) {
            return [TlsReason::UNKNOWN_CA, "the server's certificate ($subject, issued by "
                . self::subject($parsed, 'issuer') . ') does not chain to a CA of '
                . ($tls->caFile !== null ? 'ca_file ' . $tls->caFile : "the system's trust store (no ca_file)")];
        }
        return [TlsReason::UNTRUSTED, "the server's certificate ($subject) failed verification"];
    }

    /** Whether a plaintext Redis answers at $host:$port (+PONG, or an error such as NOAUTH). */
    private static function answersRedisInPlaintext(string $host, int $port, float $timeoutS): bool
    {
        $s = self::open($host, $port, $timeoutS);
        if ($s === null) {
            return false;
        }
        try {
            [$line] = self::capture(static function () use ($s) {
                fwrite($s, "PING\r\n");
                return fgets($s, 256);
            });
        } finally {
            fclose($s);
        }
        return is_string($line) && ($line[0] === '+' || $line[0] === '-');
    }

    /**
     * Reads a MySQL server's greeting from $s and, when it offers TLS, asks for it (an
     * SSLRequest, as a client does before its handshake): true then, false when the server
     * offers no TLS, null when the greeting cannot be read (an error packet, a hang).
     *
     * @param resource $s
     */
    private static function mysqlStartTls($s): ?bool
    {
        [$header] = self::capture(static fn () => fread($s, 4));
        if (!is_string($header) || strlen($header) !== 4) {
            return null;
        }
        $length = unpack('V', substr($header, 0, 3) . "\0")[1];
        $payload = '';
        while (strlen($payload) < $length) {
            [$chunk] = self::capture(static fn () => fread($s, $length - strlen($payload)));
            if (!is_string($chunk) || $chunk === '') {
                return null;
            }
            $payload .= $chunk;
        }
        if ($payload === '' || $payload[0] !== "\x0a") {
            return null;  // an error packet (0xff: too many connections, a blocked host) or an unknown protocol
        }
        $end = strpos($payload, "\0", 1);
        $at = $end === false ? -1 : $end + 1 + 4 + 8 + 1;
        if ($at < 0 || strlen($payload) < $at + 2) {
            return null;
        }
        $capabilities = unpack('v', substr($payload, $at, 2))[1];
        if (($capabilities & self::CLIENT_SSL) === 0) {
            return false;
        }
        $request = pack('VVC', self::SSL_REQUEST_FLAGS, 16777216, 33) . str_repeat("\0", 23);
        fwrite($s, substr(pack('V', strlen($request)), 0, 3) . "\x01" . $request);
        return true;
    }

    private static function explanation(string $reason, string $name, TlsConfig $tls): string
    {
        return match ($reason) {
            TlsReason::NAME_MISMATCH => "the server's certificate is not for '$name'",
            TlsReason::UNTRUSTED => "the server's certificate failed verification",
            TlsReason::NOT_TLS => 'the server does not speak TLS there',
            TlsReason::CLIENT_CERT => "the server refused the client's certificate or wanted one"
                . ($tls->certFile === null ? ' (no cert_file)' : ' (cert_file ' . $tls->certFile . ')'),
            TlsReason::CONFIG => 'the TLS files could not be used',
            default => 'the TLS handshake failed',
        };
    }

    /** @param array<string, mixed> $parsed openssl_x509_parse()'s */
    private static function subject(array $parsed, string $which = 'subject'): string
    {
        $parts = [];
        foreach ((array) ($parsed[$which] ?? []) as $k => $v) {
            $parts[] = $k . '=' . (is_array($v) ? implode(',', $v) : (string) $v);
        }
        return $parts === [] ? 'no subject' : implode(', ', $parts);
    }
}
