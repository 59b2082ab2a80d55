// Which server lagwatch talks to (MySQL, Percona Server, MariaDB) and which version, from
// `SELECT VERSION(), @@version_comment`; and the statements that flavor understands.
//
// Thread-safety: values and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/query_result.h"
#include "base/status.h"

namespace lagwatch {

// The query whose first row ParseServerFlavor reads: VERSION() then @@version_comment.
inline constexpr char kServerFlavorQuery[] = "SELECT VERSION(), @@version_comment";

struct ServerFlavor {
  // kPercona is Percona Server for MySQL: it follows MySQL's version rules for every statement
  // here. kUnknown: neither the version nor the comment says what the server is.
  enum Kind { kMySQL, kMariaDB, kPercona, kUnknown };
  Kind kind = kUnknown;
  // The leading "major.minor.patch" of VERSION(); all 0 when it could not be read (VersionKnown).
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string version;  // VERSION() as the server said it, e.g. "10.11.6-MariaDB-0+deb12u1-log"
  std::string comment;  // @@version_comment, e.g. "MySQL Community Server - GPL", "Debian 12"

  bool VersionKnown() const { return major > 0; }
  bool operator==(const ServerFlavor&) const = default;
  // major.minor.patch >= the one given; false when the version is not known.
  bool AtLeast(int major_at_least, int minor_at_least, int patch_at_least) const;
  // For logs and status: "MySQL 8.4.3 (MySQL Community Server - GPL)",
  // "MariaDB 10.11.6-MariaDB-0+deb12u1 (Debian 12)"; control bytes escaped (EscapeControl).
  std::string Describe() const;
};

// "MySQL", "MariaDB", "Percona Server" or "unknown server".
const char* KindName(ServerFlavor::Kind kind);

// Reads VERSION() and @@version_comment. Never fails: what cannot be read stays unknown.
//  - The version is "major.minor.patch" followed by anything ("8.0.36-0ubuntu0.22.04.1",
//    "5.7.44-48-log"); each part at most 4 digits, else the version is unknown (0.0.0).
//  - MariaDB before 11.0 sends "5.5.5-10.x.y-MariaDB..." in the connection handshake (the
//    "replication version hack", removed by MDEV-28910); VERSION() never has it (checked on
//    MariaDB 10.11.19), but a version taken from the handshake with it is read the same.
//  - Kind: "MariaDB" in the version or "mariadb" in the comment (any case) is MariaDB;
//    "Percona" in the comment is Percona; any other readable version is MySQL; else unknown.
ServerFlavor ParseServerFlavor(std::string_view version, std::string_view comment);

// The first row of kServerFlavorQuery's result (cells by position; NULL reads as ""); DataError
// when there is no row.
Result<ServerFlavor> ParseServerFlavor(const QueryResult& result);

// "SHOW REPLICA STATUS" on MySQL/Percona >= 8.0.22 and MariaDB >= 10.5.1, else
// "SHOW SLAVE STATUS". An unknown version gets "SHOW SLAVE STATUS", the statement lagwatch always
// sent: every MariaDB and every MySQL before 8.4 has it. Only MySQL >= 8.4 lacks it (it answers
// ER_PARSE_ERROR, 1064): ReplicaStatusRetry says what to send instead.
// https://dev.mysql.com/doc/refman/8.0/en/show-replica-status.html
// https://mariadb.com/kb/en/show-replica-status/
const char* ReplicaStatusStatement(const ServerFlavor& flavor);

// The statement to retry a refused status poll with: "SHOW REPLICA STATUS" when `statement` was
// "SHOW SLAVE STATUS" and the server answered ER_PARSE_ERROR (it does not know that statement);
// nullptr when there is nothing else to try.
const char* ReplicaStatusRetry(std::string_view statement, unsigned server_errno);

// "SHOW BINARY LOG STATUS" on MySQL/Percona >= 8.2.0 (SHOW MASTER STATUS is gone in 8.4);
// "SHOW BINLOG STATUS" on MariaDB >= 10.5.2 (MariaDB has no SHOW BINARY LOG STATUS: 10.11
// answers it with a syntax error; SHOW MASTER STATUS stays an alias there); "SHOW MASTER STATUS"
// otherwise, unknown versions included (every server before MySQL 8.4 has it).
// https://dev.mysql.com/doc/refman/8.4/en/show-binary-log-status.html
// https://mariadb.com/kb/en/show-binlog-status/
const char* BinaryLogStatusStatement(const ServerFlavor& flavor);

// What a refused binary log status is missing, for messages: the privilege each server needs.
inline constexpr char kBinaryLogStatusGrantHint[] =
    "grant BINLOG MONITOR on MariaDB 10.5+, REPLICATION CLIENT on MySQL: docs/configuration.md "
    "\"Privileges\"";

// MariaDB's own GTIDs (domain-server-seq, @@gtid_binlog_pos, @@gtid_slave_pos, Using_Gtid):
// MariaDB >= 10.0.2 (https://mariadb.com/kb/en/gtid/). MySQL's GTIDs are another thing.
bool HasMariaDbGtid(const ServerFlavor& flavor);

}  // namespace lagwatch
