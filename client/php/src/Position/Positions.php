<?php

declare(strict_types=1);

namespace Lagwatch\Router\Position;

/**
 * Parses positions of a kind: the published `position` of a replica's hash, and read-your-writes
 * tokens (client/record.h, ParsePosition).
 */
final class Positions
{
    /**
     * A position of $kind as the server prints it. Refused: empty text (or text that parses to the
     * empty position), kind none, text the kind's parser refuses.
     *
     * @throws PositionException
     */
    public static function parse(PositionKind $kind, string $text): Position
    {
        if ($text === '') {
            throw new PositionException('position: empty');
        }
        switch ($kind) {
            case PositionKind::MariaDbGtid:
                $p = MariaDbGtidPos::parse($text);
                if ($p->isEmpty()) {
                    throw new PositionException('position: empty');
                }
                return $p;
            case PositionKind::MysqlGtid:
                $s = MysqlGtidSet::parse($text);
                if ($s->isEmpty()) {
                    throw new PositionException('position: empty');
                }
                return $s;
            case PositionKind::Binlog:
                return BinlogCoords::parse($text);
            case PositionKind::None:
                break;
        }
        throw new PositionException('position: kind none has no position');
    }
}
