// Binary log coordinates (file, position) and their order; the parser of SHOW BINARY LOG STATUS
// (MySQL >= 8.2), SHOW MASTER STATUS and SHOW BINLOG STATUS (MariaDB >= 10.5.2).
//
// The server names its binary log files BASE.NNNNNN: a base name (--log-bin) and a numeric
// extension that grows by one with each new file (server start, FLUSH BINARY LOGS,
// max_binlog_size): https://dev.mysql.com/doc/refman/8.4/en/binary-log.html. The extension has at
// least six digits; after 999999 comes 1000000 (the server prints it with "%06lu", so it simply
// gets wider), which is why the sequence is compared as a number, never as text. A new file's
// first event starts at position 4, after the file's 4-byte magic number (SHOW BINLOG EVENTS on
// MariaDB 10.11 shows Format_desc at 4, and the Rotate event that ends a file names the next one
// with "pos=4"); a file's positions are byte offsets, so they grow within a file.
//
// So (seq, pos) orders every event of one server's binary log: a replica whose executed source
// coordinates are at or past the primary's coordinates sampled at time t has executed everything
// the primary had logged at t. The order is conservative at a rotation: a replica that executed
// all of file n while the primary already sits at (n + 1, 4) compares as behind until it reads the
// Rotate event, although there is nothing more to execute.
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/query_result.h"
#include "base/status.h"

namespace lagwatch {

struct BinlogCoords {
  std::string base;  // "mysql-bin" of "mysql-bin.000123"
  uint64_t seq = 0;  // 123
  uint64_t pos = 0;  // byte offset in that file

  bool operator==(const BinlogCoords&) const = default;
};

// `file` is BASE.DIGITS: everything after the last '.' is the sequence (at least one digit, all
// digits, no sign, fits in 64 bits); the base before it is not empty. DataError otherwise (an empty
// name; MySQL's "INVALID" under GTID_ONLY, see
// https://dev.mysql.com/doc/refman/8.4/en/show-replica-status.html; "mysql-bin"; "bin.12a").
Result<BinlogCoords> ParseBinlogCoords(std::string_view file, uint64_t pos);
// As above, with the position as the server's text: base-10 digits only, fits in 64 bits.
Result<BinlogCoords> ParseBinlogCoords(std::string_view file, std::string_view pos);

enum class CoordsOrder { kBefore, kSame, kAfter, kIncomparable };

// The order of `a` relative to `b`: file sequence first, then position. Coordinates of two
// different base names are kIncomparable (another server, or a renamed --log-bin).
CoordsOrder Compare(const BinlogCoords& a, const BinlogCoords& b);

// One row of SHOW BINARY LOG STATUS / SHOW MASTER STATUS / SHOW BINLOG STATUS.
struct BinaryLogStatus {
  BinlogCoords coords;    // File, Position
  std::string file;       // File as the server wrote it ("mysql-bin.000012": the dump names it)
  std::string do_db;      // Binlog_Do_DB ("" when absent)
  std::string ignore_db;  // Binlog_Ignore_DB ("" when absent)
  // Executed_Gtid_Set (MySQL); nullopt when the column is absent (MariaDB, whose GTID position is
  // @@gtid_binlog_pos) or NULL, "" when GTIDs are not in use.
  std::optional<std::string> executed_gtid_set;
};

// Reads the first row by column name. DataError: no row (binary logging is off), no File or
// Position column, or File/Position that ParseBinlogCoords rejects.
Result<BinaryLogStatus> ParseBinaryLogStatus(const QueryResult& result);

}  // namespace lagwatch
