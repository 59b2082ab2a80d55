<?php

declare(strict_types=1);

namespace Lagwatch\Router\Routing;

/**
 * What a server is, from `SELECT VERSION(), @@version_comment`, for the statements that differ
 * between servers and versions: the one that shows the binary log's coordinates. The same rules
 * as the agent's (base/server_flavor.h), checked by the shared cases of
 * client/cases/token_statements.json.
 *
 * The version is "major.minor.patch" (1 to 4 digits each) followed by the end or anything that
 * is not a digit or '.'; MariaDB's replication handshake prefix "5.5.5-" is skipped. MariaDB is
 * named in the version or the comment, Percona Server in the comment; any other readable version
 * is MySQL; with no readable version the server is of unknown kind (or MariaDB/Percona, versionless).
 * Immutable.
 */
final class ServerFlavor
{
    public const MYSQL = 'mysql';
    public const MARIADB = 'mariadb';
    public const PERCONA = 'percona';
    public const UNKNOWN = 'unknown';

    /** The query whose two columns parse() reads. */
    public const QUERY = 'SELECT VERSION(), @@version_comment';

    private function __construct(
        public readonly string $kind,
        public readonly int $major,
        public readonly int $minor,
        public readonly int $patch,
    ) {
    }

    public static function parse(string $version, string $comment): self
    {
        $mariadb = stripos($version, 'mariadb') !== false || stripos($comment, 'mariadb') !== false;
        $digits = $version;
        if ($mariadb && str_starts_with($digits, '5.5.5-') && self::leadingVersion(substr($digits, 6)) !== null) {
            $digits = substr($digits, 6);
        }
        $parsed = self::leadingVersion($digits);
        [$major, $minor, $patch] = $parsed ?? [0, 0, 0];
        $kind = self::UNKNOWN;
        if ($mariadb) {
            $kind = self::MARIADB;
        } elseif (stripos($comment, 'percona') !== false) {
            $kind = self::PERCONA;
        } elseif ($parsed !== null && $major > 0) {
            $kind = self::MYSQL;
        }
        if ($major === 0) {
            [$minor, $patch] = [0, 0];  // "0.x.y" is no version any of them ever had
        }
        return new self($kind, $major, $minor, $patch);
    }

    /** major.minor.patch >= the one given; false when the version is not known. */
    public function atLeast(int $major, int $minor, int $patch): bool
    {
        return $this->major > 0 && [$this->major, $this->minor, $this->patch] >= [$major, $minor, $patch];
    }

    /**
     * The statement whose File and Position are the binary log's coordinates: SHOW BINARY LOG
     * STATUS from MySQL (and Percona) 8.2 (MySQL 8.4 removed SHOW MASTER STATUS:
     * https://dev.mysql.com/doc/refman/8.4/en/show-binary-log-status.html), SHOW BINLOG STATUS
     * from MariaDB 10.5.2 (https://mariadb.com/kb/en/show-binlog-status/), else SHOW MASTER STATUS.
     */
    public function binaryLogStatusStatement(): string
    {
        $mysqlLike = $this->kind === self::MYSQL || $this->kind === self::PERCONA;
        if ($mysqlLike && $this->atLeast(8, 2, 0)) {
            return 'SHOW BINARY LOG STATUS';
        }
        if ($this->kind === self::MARIADB && $this->atLeast(10, 5, 2)) {
            return 'SHOW BINLOG STATUS';
        }
        return 'SHOW MASTER STATUS';
    }

    /** @return ?array{int, int, int} the leading "major.minor.patch" of $s */
    private static function leadingVersion(string $s): ?array
    {
        if (preg_match('/\A([0-9]{1,4})\.([0-9]{1,4})\.([0-9]{1,4})(?![0-9.])/', $s, $m) !== 1) {
            return null;
        }
        return [(int) $m[1], (int) $m[2], (int) $m[3]];
    }
}
