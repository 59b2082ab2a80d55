<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tls;

/**
 * The named reason of a TLS failure: the agent's vocabulary (base/net_stream.h,
 * docs/configuration.md "TLS to MySQL and Redis"), so one word means the same in lagwatch's log
 * and the router's.
 */
final class TlsReason
{
    /** The chain does not lead to a CA of ca_file (or of the system's store without one). */
    public const UNKNOWN_CA = 'unknown_ca';
    /** The certificate is not for the name checked (server_name or the host). */
    public const NAME_MISMATCH = 'name_mismatch';
    public const EXPIRED = 'expired';
    public const NOT_YET_VALID = 'not_yet_valid';
    /** Any other verification failure. */
    public const UNTRUSTED = 'untrusted';
    /** The server does not speak TLS there (a plaintext port, a MySQL server without TLS). */
    public const NOT_TLS = 'not_tls';
    /** The server refused a plaintext client (a TLS-only Redis port reached without TLS). */
    public const PLAINTEXT_REFUSED = 'plaintext_refused';
    /** The server refused the client's certificate, or wanted one. */
    public const CLIENT_CERT = 'client_cert';
    /** The handshake failed otherwise (no common protocol version or cipher, a timeout, ...). */
    public const HANDSHAKE = 'handshake';
    /** The local files (ca_file, cert_file, key_file) could not be used. */
    public const CONFIG = 'config';

    /**
     * The reason for the text of a failed handshake (PHP's stream warnings with OpenSSL's
     * errors): verification failures by their words, "wrong version number" as not_tls, alerts
     * about the client's certificate as client_cert, unusable local files as config; "certificate
     * verify failed" (OpenSSL says no more through PHP) as untrusted, which TlsProbe refines.
     */
    public static function forText(string $text): string
    {
        $has = static fn (string $words): bool => stripos($text, $words) !== false;
        return match (true) {
            $has('failed loading cafile'), $has('Unable to set local cert'), $has('Unable to set private key'),
            $has('Private key does not match'), $has('Unable to locate'), $has('Could not load') => self::CONFIG,
            $has('certificate has expired') => self::EXPIRED,
            $has('certificate is not yet valid') => self::NOT_YET_VALID,
            $has('did not match expected'), $has('hostname mismatch'), $has('IP address mismatch') => self::NAME_MISMATCH,
            $has('wrong version number'), $has('packet length too long'), $has('http request') => self::NOT_TLS,
            $has('certificate required'), $has('alert bad certificate'), $has('alert unknown ca'),
            $has('alert certificate unknown'), $has('peer did not return a certificate') => self::CLIENT_CERT,
            $has('certificate verify failed') => self::UNTRUSTED,
            default => self::HANDSHAKE,
        };
    }
}
