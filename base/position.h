// A replication position of any of the three kinds lagwatch compares (docs/measurement.md,
// "Position bounds"): a MariaDB GTID position, a MySQL GTID set, or binary log coordinates. Each
// answers the one question the estimator asks: has a replica at this position applied everything
// the primary had at another one?
//
// Values; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "base/binlog_coords.h"
#include "base/gtid.h"
#include "base/gtid_set.h"

namespace lagwatch {

// Which positions lagwatch compares for a replica: the `positions` setting (its "auto" picks one
// of these), the API's `positions` field and lagwatch_server_info's label.
enum class PositionsKind { kNone, kMariaDbGtid, kMysqlGtid, kBinlog };

// Their names, as the `positions` setting, the API and lagwatch_server_info spell them
// (docs/configuration.md).
inline constexpr char kPositionsNone[] = "none";
inline constexpr char kPositionsMariaDbGtid[] = "mariadb_gtid";
inline constexpr char kPositionsMysqlGtid[] = "mysql_gtid";
inline constexpr char kPositionsBinlog[] = "binlog";

// "none", "mariadb_gtid", "mysql_gtid" or "binlog".
const char* PositionsKindName(PositionsKind kind);
// The inverse of PositionsKindName; nullopt for any other text.
std::optional<PositionsKind> ParsePositionsKind(std::string_view name);
// A GTID kind (MariaDB's or MySQL's): its positions are server variables.
inline bool IsGtidKind(PositionsKind kind) {
  return kind == PositionsKind::kMariaDbGtid || kind == PositionsKind::kMysqlGtid;
}

// The server variables that hold the GTID kinds' positions: what a primary has binlogged
// (@@gtid_binlog_pos, @@GLOBAL.gtid_executed) and what a replica has applied (@@gtid_slave_pos,
// @@GLOBAL.gtid_executed). nullptr for the kinds without one (binlog: the status statements;
// none).
const char* PrimaryPositionVariable(PositionsKind kind);
const char* ReplicaPositionVariable(PositionsKind kind);

// How a position stands to another.
enum class Inclusion {
  kIncludes,      // it has every transaction the other had (or is at or past its coordinates)
  kLacks,         // it is behind: something the other had is not in it
  kIncomparable,  // different kinds, or binary logs of different base names
};

class Position {
 public:
  Position(GtidPos gtid) : v_(std::move(gtid)) {}           // NOLINT: a position of that kind
  Position(GtidSet gtid_set) : v_(std::move(gtid_set)) {}   // NOLINT
  Position(BinlogCoords coords) : v_(std::move(coords)) {}  // NOLINT

  PositionsKind kind() const;
  // The value of its kind; null for another kind.
  const GtidPos* gtid_pos() const { return std::get_if<GtidPos>(&v_); }
  const GtidSet* gtid_set() const { return std::get_if<GtidSet>(&v_); }
  const BinlogCoords* coords() const { return std::get_if<BinlogCoords>(&v_); }

  // Whether this position has everything `other` had. A MariaDB position compares per domain, a
  // MySQL set by inclusion, coordinates by file sequence then offset.
  Inclusion Compare(const Position& other) const;
  bool Includes(const Position& other) const { return Compare(other) == Inclusion::kIncludes; }

  // Whether being behind `other` proves a transaction is missing. True for GTIDs (every GTID is
  // a transaction). For coordinates only within one file: the first events of a new binary log
  // (its format description, MariaDB's GTID list and binlog checkpoint) and the Rotate event that
  // ends the previous one are no transactions, so a replica in an older file may lack nothing.
  bool BehindProvesMissing(const Position& other) const;

  bool operator==(const Position& other) const = default;
  // As the server prints it: "0-1-120", the GTID set's text, or "mysql-bin.000012:4567".
  std::string ToString() const;

 private:
  std::variant<GtidPos, GtidSet, BinlogCoords> v_;
};

}  // namespace lagwatch
