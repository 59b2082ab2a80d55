<?php

declare(strict_types=1);

namespace Lagwatch\Router\Routing;

use Lagwatch\Router\Position\BinlogCoords;
use Lagwatch\Router\Position\Position;
use Lagwatch\Router\Position\PositionException;
use Lagwatch\Router\Position\PositionKind;
use Lagwatch\Router\Position\Positions;

/**
 * Read-your-writes with the primary's position as a token (docs/routing.md; client/read_your_writes.h):
 * the statements that take the token on the primary, and the one that asks a replica, without
 * waiting, whether it has applied it.
 */
final class ReadYourWrites
{
    /** @var ?\WeakMap<\PDO, ServerFlavor> each primary connection's server, asked once */
    private static ?\WeakMap $flavors = null;

    /**
     * What to run on the primary, on the connection that wrote and after the commit, to take the
     * token of $kind (its single column is the token's text); null for binlog (the server's binary
     * log status statement, two columns: tokenStatement) and none.
     */
    public static function tokenQuery(PositionKind $kind): ?string
    {
        return match ($kind) {
            PositionKind::MariaDbGtid => 'SELECT @@last_gtid',
            PositionKind::MysqlGtid => 'SELECT @@GLOBAL.gtid_executed',
            default => null,
        };
    }

    /**
     * The statement that takes a token of $kind on a server of $flavor: tokenQuery() for the
     * GTIDs, the flavor's binary log status statement for binlog (SHOW BINARY LOG STATUS on MySQL
     * 8.2+, which is the only one from 8.4; ServerFlavor::binaryLogStatusStatement), null for none.
     */
    public static function tokenStatement(PositionKind $kind, ServerFlavor $flavor): ?string
    {
        return $kind === PositionKind::Binlog ? $flavor->binaryLogStatusStatement() : self::tokenQuery($kind);
    }

    /**
     * Takes the token of $kind on $primary: the session's last GTID (MariaDB), the executed GTID
     * set (MySQL), or File and Position of the binary log status statement that $primary's server
     * has (binlog; the server is asked what it is once per connection). Never throws.
     *
     * @return array{?Position, string} the token, or null and why none could be taken (an empty
     *         @@last_gtid, no privilege for the coordinates, a failed query, kind none)
     */
    public static function takeToken(\PDO $primary, PositionKind $kind): array
    {
        try {
            if ($kind === PositionKind::Binlog) {
                $statement = self::flavorOf($primary)->binaryLogStatusStatement();
                $row = self::firstRow($primary, $statement);
                if ($row === null || !isset($row['File'], $row['Position'])) {
                    return [null, $statement . ' returned no File and Position (binary log off?)'];
                }
                return [BinlogCoords::fromFileAndOffset((string) $row['File'], (string) $row['Position']), ''];
            }
            $query = self::tokenQuery($kind);
            if ($query === null) {
                return [null, 'the replicas publish no positions (position_kind none)'];
            }
            $stmt = $primary->query($query);
            $text = $stmt === false ? false : $stmt->fetchColumn();
            if (!is_string($text) || $text === '') {
                return [null, $query . ' returned nothing (no write binlogged in this session)'];
            }
            return [Positions::parse($kind, $text), ''];
        } catch (\PDOException | PositionException $e) {
            return [null, $e->getMessage()];
        }
    }

    /**
     * The statement that asks a replica, without waiting, whether it has applied $token:
     *   mariadb_gtid  SELECT MASTER_GTID_WAIT('<token>', 0)                 0: reached, -1: not
     *   mysql_gtid    SELECT GTID_SUBSET('<token>', @@GLOBAL.gtid_executed)  1: reached, 0: not
     * Null for coordinates: MASTER_POS_WAIT takes a timeout of 0 as "wait forever". The token's
     * text is its parsed form; a quote or backslash in it is refused (null) all the same.
     */
    public static function catchUpQuery(Position $token): ?string
    {
        $text = $token->toString();
        if ($text === '' || strpbrk($text, "'\\") !== false) {
            return null;
        }
        return match ($token->kind()) {
            PositionKind::MariaDbGtid => "SELECT MASTER_GTID_WAIT('" . $text . "', 0)",
            PositionKind::MysqlGtid => "SELECT GTID_SUBSET('" . $text . "', @@GLOBAL.gtid_executed)",
            default => null,
        };
    }

    /** Whether the answer to catchUpQuery for a token of $kind says "reached" (anything unexpected: no). */
    public static function caughtUp(PositionKind $kind, mixed $value): bool
    {
        $v = is_int($value) ? (string) $value : $value;
        return match ($kind) {
            PositionKind::MariaDbGtid => $v === '0',
            PositionKind::MysqlGtid => $v === '1',
            default => false,
        };
    }

    /**
     * Asks $replica whether it has $token, without waiting. Never throws: a failure is "no".
     */
    public static function ask(\PDO $replica, Position $token): bool
    {
        $query = self::catchUpQuery($token);
        if ($query === null) {
            return false;
        }
        try {
            $stmt = $replica->query($query);
            return $stmt !== false && self::caughtUp($token->kind(), $stmt->fetchColumn());
        } catch (\PDOException) {
            return false;
        }
    }

    /** What $pdo's server is (ServerFlavor::QUERY), asked on its first token. @throws \PDOException */
    private static function flavorOf(\PDO $pdo): ServerFlavor
    {
        self::$flavors ??= new \WeakMap();
        if (!isset(self::$flavors[$pdo])) {
            $stmt = $pdo->query(ServerFlavor::QUERY);
            $row = $stmt === false ? false : $stmt->fetch(\PDO::FETCH_NUM);
            $text = static fn (mixed $v): string => is_string($v) ? $v : '';
            self::$flavors[$pdo] = is_array($row) ? ServerFlavor::parse($text($row[0] ?? null), $text($row[1] ?? null))
                : ServerFlavor::parse('', '');
        }
        return self::$flavors[$pdo];
    }

    /** @return ?array<string, mixed> */
    private static function firstRow(\PDO $pdo, string $sql): ?array
    {
        $stmt = $pdo->query($sql);
        if ($stmt === false) {
            return null;
        }
        $row = $stmt->fetch(\PDO::FETCH_ASSOC);
        $stmt->closeCursor();
        return is_array($row) ? $row : null;
    }
}
