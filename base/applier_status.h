// MySQL 8.0+'s applier signals, read from three performance_schema tables into the plain values
// lagwatch shows beside its bound: which applier threads (workers) are applying a transaction and
// which are idle, the oldest transaction being applied, the multithreaded applier's coordinator,
// and the replication receiver's heartbeats from its source. Diagnostics only: their timestamps
// come from the replica's clock (when a transaction started applying, when a heartbeat arrived)
// and from the sources' (when a transaction committed there), so nothing here is ever compared
// with the agent's clock, nor feeds its bounds, states or health (docs/measurement.md).
//
//   replication_applier_status_by_worker       one row per applier thread and channel (a
//                                              single-threaded channel: one row, WORKER_ID 0)
//   replication_applier_status_by_coordinator  one row per multithreaded channel (none for a
//                                              single-threaded one)
//   replication_connection_status              one row per channel: the receiver
// https://dev.mysql.com/doc/refman/8.0/en/performance-schema-replication-applier-status-by-worker-table.html
// https://dev.mysql.com/doc/refman/8.4/en/performance-schema-replication-applier-status-by-worker-table.html
// https://dev.mysql.com/doc/refman/8.0/en/performance-schema-replication-applier-status-by-coordinator-table.html
// https://dev.mysql.com/doc/refman/8.4/en/performance-schema-replication-applier-status-by-coordinator-table.html
// https://dev.mysql.com/doc/refman/8.0/en/performance-schema-replication-connection-status-table.html
// https://dev.mysql.com/doc/refman/8.4/en/performance-schema-replication-connection-status-table.html
// The column lists are those of MySQL's source (storage/perfschema/
// table_replication_applier_status_by_worker.cc, _by_coordinator.cc and
// table_replication_connection_status.cc). MySQL before 8.0 lacks the transaction columns.
// MariaDB has none of them: its performance_schema (10.11, checked on the sandbox) has tables
// called replication_applier_status_by_worker and _by_coordinator with other columns
// (LAST_SEEN_TRANSACTION, WORKER_IDLE_TIME, ...) and no replication_connection_status.
//
// Thread-safety: values and pure functions; ApplierGate is a thread-compatible value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/query_result.h"
#include "base/server_flavor.h"
#include "base/status.h"

namespace lagwatch {

// Whether a server of `flavor` has the tables and columns read here: MySQL or Percona Server 8.0
// or later. Not MariaDB, not MySQL 5.7, not a server whose flavor or version is unknown.
bool HasApplierTables(const ServerFlavor& flavor);

// The one statement that reads all three tables in one round trip: a UNION ALL of the columns
// used, one row per table row, each row naming its table in the first column, SOURCE_TABLE
// ('worker', 'coordinator' or 'connection'), the other columns under shared names
// (SplitApplierReply puts the tables' own names back), and NOW(6) as REPLICA_NOW in every row:
// the replica's clock, in the same session time zone as the tables' timestamps. Needs SELECT on
// the three tables (or on performance_schema.*).
const std::string& ApplierStatusStatement();

// The three tables as SELECT * returns them (columns by the tables' own names), and the replica's
// NOW(6) ("" when unknown).
struct ApplierTables {
  QueryResult workers;
  QueryResult coordinators;
  QueryResult connections;
  std::string replica_now;
};

// The reply to ApplierStatusStatement split back into its tables: each row goes to the table its
// SOURCE_TABLE names, under that table's column names (only the columns the statement reads).
// No row: three empty tables (not a replica). DataError when rows come without a SOURCE_TABLE
// column or with a value other than the three names.
Result<ApplierTables> SplitApplierReply(const QueryResult& reply);

// A transaction as a table shows it: its GTID ("ANONYMOUS" without GTIDs) and its timestamps, as
// the server wrote them ("2023-02-07 10:12:33.123456"; "" for MySQL's zero value, which means
// none, for NULL, and for text that is not a timestamp).
struct ApplierTransaction {
  std::string gtid;
  std::string original_commit;   // committed on the original source (that server's clock)
  std::string immediate_commit;  // committed on the immediate source (that server's clock)
  std::string started;           // the replica's clock: workers, when it started applying; the
                                 // coordinator, when it started writing it to a worker's buffer
  bool operator==(const ApplierTransaction&) const = default;
};

// A multithreaded channel's coordinator (replication_applier_status_by_coordinator).
struct ApplierCoordinator {
  std::string service_state;                     // "ON" or "OFF", as the server wrote it
  std::optional<ApplierTransaction> processing;  // the one it is handing out; nullopt: none
  std::optional<ApplierTransaction> last_processed;
  bool operator==(const ApplierCoordinator&) const = default;
};

// One replication channel (CHANNEL_NAME; "" is the default channel).
struct ApplierChannel {
  std::string name;
  // nullopt: the coordinator table has no row for it (a single-threaded channel).
  std::optional<ApplierCoordinator> coordinator;
  // Rows of the worker table: its applier threads (one, WORKER_ID 0, when single-threaded).
  size_t workers = 0;
  size_t workers_on = 0;  // of which SERVICE_STATE is ON (the thread exists)
  size_t applying = 0;    // of which APPLYING_TRANSACTION is not empty: applying, not idle
  // The applying transaction that started applying first (the earliest readable
  // APPLYING_TRANSACTION_START_APPLY_TIMESTAMP; without any, the earliest original commit, then
  // the first row); nullopt while no worker applies.
  std::optional<ApplierTransaction> oldest_applying;
  // The replica's NOW(6) minus oldest_applying's start of apply, both read from the replica's
  // clock in the same statement; nullopt when either is unknown (the start is zero while the
  // Performance Schema's timing is off) or the difference is negative.
  std::optional<int64_t> oldest_applying_age_us;
  // replication_connection_status: the receiver's SERVICE_STATE ("ON", "OFF", "CONNECTING"; ""
  // without a row), when it last received a heartbeat from the source (the replica's clock; "" for
  // none) and how many (nullopt without a row or a number).
  std::string receiver_state;
  std::string last_heartbeat;
  std::optional<uint64_t> received_heartbeats;
  bool operator==(const ApplierChannel&) const = default;
};

struct ApplierStatus {
  std::string replica_now;  // the replica's NOW(6) as it wrote it; "" when unknown
  // Every channel any table has a row for, in the order first seen (workers, coordinators,
  // connections).
  std::vector<ApplierChannel> channels;

  // The channel named `name`, else the only channel when there is one, else nullptr.
  const ApplierChannel* Channel(std::string_view name) const;
  bool operator==(const ApplierStatus&) const = default;
};

// Reads the three tables by column name (never by position: the columns grow with versions).
//  - A table with rows but no CHANNEL_NAME column, or a worker table without APPLYING_TRANSACTION
//    (MySQL 5.7's): DataError naming the table and the column.
//  - Any other column missing, a NULL, a number that is not one, a timestamp that is not one:
//    that field is left empty (nullopt, "" or not counted), never an error.
//  - No rows anywhere: no channels (not a replica).
Result<ApplierStatus> ParseApplierTables(const ApplierTables& tables);

// ParseApplierTables(SplitApplierReply(reply)).
Result<ApplierStatus> ParseApplierReply(const QueryResult& reply);

// A TIMESTAMP as MySQL prints it, "YYYY-MM-DD hh:mm:ss" and an optional '.' with 1 to 6 fraction
// digits, as microseconds since 1970-01-01 00:00:00 of the same calendar, in whatever time zone
// the server wrote it (the session's): two of them from one server and statement can be
// subtracted, never compared with another clock. nullopt for MySQL's zero value
// ("0000-00-00 00:00:00", any fraction of zeros: none) and for any other text (another shape, a
// date or time that does not exist, a year before 1000).
std::optional<int64_t> ParseServerTimestampUs(std::string_view text);

// The reasons of lagwatch_mysql_applier_signal_errors_total: the server refused the statement
// for a missing privilege ("denied"), did not have a table or column ("no_table"), answered
// with another error ("server_error"), or answered with something unreadable ("bad_data").
inline constexpr const char* kApplierErrorReasons[] = {"denied", "no_table", "server_error",
                                                       "bad_data"};

// The reason for a refusal with server error `server_errno`: "denied" for
// ER_TABLEACCESS_DENIED_ERROR (1142), ER_COLUMNACCESS_DENIED_ERROR (1143),
// ER_DBACCESS_DENIED_ERROR (1044) and ER_SPECIFIC_ACCESS_DENIED_ERROR (1227); "no_table" for
// ER_NO_SUCH_TABLE (1146), ER_BAD_FIELD_ERROR (1054) and ER_BAD_DB_ERROR (1049); else
// "server_error".
const char* ApplierErrorReason(unsigned server_errno);

// What a refused statement is missing, for messages.
inline constexpr char kApplierGrantHint[] =
    "grant SELECT on performance_schema.* (or on its replication_applier_status_by_worker, "
    "replication_applier_status_by_coordinator and replication_connection_status tables): "
    "docs/configuration.md \"Privileges\"";

// When one probe connection asks ApplierStatusStatement, and why it does not: only on a server
// that HasApplierTables, only with a probe whose status interval is due, and never again on a
// connection whose server refused the statement (the next connection, perhaps to another
// server, asks again).
class ApplierGate {
 public:
  // A new connection: nothing is known of its server until SetFlavor; nothing is asked.
  void Reset() { *this = ApplierGate(); }
  // What the connection's server answered to kServerFlavorQuery (an unknown flavor when it did
  // not answer usefully).
  void SetFlavor(const ServerFlavor& flavor);
  // The server answered the statement with error `server_errno`, `message` (the connection is
  // still up): not asked again on this connection. Returns ApplierErrorReason(server_errno).
  const char* Refuse(unsigned server_errno, std::string_view message);

  // Whether a probe asks, `status_due`: its status interval has come.
  bool Ask(bool status_due) const { return status_due && asking(); }
  bool asking() const { return flavor_known_ && flavor_why_not_.empty() && refused_.empty(); }
  // Why this connection does not ask, for the API ("not asked: MariaDB ...", "refused on this
  // connection (...)"); "" while it asks, and before SetFlavor.
  const std::string& why_not() const { return refused_.empty() ? flavor_why_not_ : refused_; }

 private:
  bool flavor_known_ = false;
  std::string flavor_why_not_;  // "" for a flavor that HasApplierTables
  std::string refused_;         // "" until Refuse
};

}  // namespace lagwatch
