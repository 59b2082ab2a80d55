// Read-your-writes with the primary's position as a token (docs/routing.md, "Read-your-writes"):
// the statements that take the token on the primary, and the one that asks a replica, without
// waiting, whether it has applied it. The router runs them on its own connections; these only
// build and read the text.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/position.h"
#include "base/server_flavor.h"
#include "base/status.h"

namespace lagwatch::client {

// What to run on the primary, on the connection that wrote and after the commit, to take the
// token of `kind`: its single column is the token's text (ParsePosition reads it).
//   mariadb_gtid  SELECT @@last_gtid        (the session's last GTID; empty: nothing binlogged)
//   mysql_gtid    SELECT @@GLOBAL.gtid_executed
// nullptr for binlog (run SHOW MASTER STATUS or, MySQL >= 8.2, SHOW BINARY LOG STATUS, and take
// File and Position: ParseBinaryLogStatus in base/binlog_coords.h) and none.
const char* TokenQuery(PositionsKind kind);

// The statement that takes a token of `kind` on a server of `flavor`: TokenQuery for the GTIDs,
// the flavor's binary log status statement for binlog (BinaryLogStatusStatement: SHOW BINARY LOG
// STATUS on MySQL 8.2+, the only one from 8.4), nullptr for none. The PHP router's
// ReadYourWrites::tokenStatement is the same (client/cases/token_statements.json).
const char* TokenStatement(PositionsKind kind, const ServerFlavor& flavor);

// The statement that asks a replica, without waiting, whether it has applied `token`; its single
// column is what CatchUpReached reads:
//   mariadb_gtid  SELECT MASTER_GTID_WAIT('<token>', 0)                      0: reached, -1: not
//   mysql_gtid    SELECT GTID_SUBSET('<token>', @@GLOBAL.gtid_executed)       1: reached, 0: not
// InvalidArgument for binary log coordinates: MASTER_POS_WAIT and SOURCE_POS_WAIT read their
// timeout as whole seconds and take 0 for "wait forever", so they have no zero-timeout form
// (docs/routing.md); such a session reads from the primary until a published position includes
// its token. (WAIT_FOR_EXECUTED_GTID_SET is not used for the same reason: a timeout of 0 does not
// promise to return at once.)
//
// The token is embedded as the position's own text (Position::ToString), which holds only
// digits, hex, '-', ':', ',', '_', letters and newlines: a token exists only once parsed, so no
// server's text reaches the statement unchecked. Checked again here: a quote or a backslash is
// InvalidArgument.
Result<std::string> CatchUpQuery(const Position& token);

// Whether the value CatchUpQuery's statement returned for a token of `kind` (its text; pass ""
// for NULL) says the replica has the token. Anything unexpected: false.
bool CatchUpReached(PositionsKind kind, std::string_view value);

}  // namespace lagwatch::client
