// SHOW SLAVE STATUS / SHOW REPLICA STATUS, read into the parts lagwatch uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/query_result.h"
#include "base/status.h"

namespace lagwatch {

// Which names the result's columns carry (columns are always looked up by name: their order and
// number change with every version).
//  - kSlave: Slave_IO_Running, Master_Host, Seconds_Behind_Master, ...: SHOW SLAVE STATUS on MySQL
//    before 8.4, and MariaDB under both SHOW SLAVE STATUS and SHOW REPLICA STATUS.
//  - kReplica: Replica_IO_Running, Source_Host, Seconds_Behind_Source, ...: MySQL's SHOW REPLICA
//    STATUS (8.0.22 and later; the only form from 8.4 on).
// https://dev.mysql.com/doc/refman/8.4/en/show-replica-status.html
// https://mariadb.com/kb/en/show-replica-status/
enum class ColumnFamily { kNone, kSlave, kReplica };

// The parts of SHOW SLAVE STATUS lagwatch uses. Each field is named after its kSlave column; the
// kReplica column is read instead when the row has that family.
struct ReplicationStatus {
  bool known = false;       // a poll has answered
  bool configured = false;  // the server returned a row: it is a replica
  std::string io_state;     // Slave_IO_Running: "Yes", "No" or "Connecting"
  bool io_running = false;
  bool sql_running = false;
  std::optional<int64_t> seconds_behind_master;  // NULL while the SQL thread is stopped
  std::optional<int64_t> relay_log_space;
  std::string last_error;  // Last_IO_Error or Last_SQL_Error, if any

  // Family of the columns; found from the column names even when there is no row.
  ColumnFamily column_family = ColumnFamily::kNone;
  // Rows in the result: more than one for MariaDB's SHOW ALL SLAVES STATUS (one per connection)
  // or MySQL with several channels. Every other field is read from the FIRST row only.
  size_t row_count = 0;

  // The source this replica reads from, for chained-replica detection.
  std::string source_host;                  // Master_Host
  std::optional<int64_t> source_port;       // Master_Port
  std::optional<int64_t> source_server_id;  // Master_Server_Id (0 before the first connect)

  // Coordinates in the source's binary log: what the SQL thread has executed
  // (Relay_Master_Log_File, Exec_Master_Log_Pos) and what the I/O thread has read
  // (Master_Log_File, Read_Master_Log_Pos). The file is "" before the first event and "INVALID" on
  // MySQL's GTID_ONLY channels after a restart; binlog_coords.h turns them into BinlogCoords.
  std::string exec_source_log_file;
  std::optional<uint64_t> exec_source_log_pos;
  std::string read_source_log_file;
  std::optional<uint64_t> read_source_log_pos;

  // GTIDs: Using_Gtid (MariaDB: "No", "Slave_Pos" or "Current_Pos"; "" when absent),
  // Gtid_IO_Pos (MariaDB), Auto_Position (MySQL: 1 true, 0 false; nullopt when absent or other),
  // Executed_Gtid_Set (MySQL, "" when absent or empty).
  std::string using_gtid;
  std::string gtid_io_pos;
  std::optional<bool> auto_position;
  std::string executed_gtid_set;

  bool operator==(const ReplicationStatus&) const = default;
};

// What a refused status poll is missing, for messages: the privilege each server needs.
inline constexpr char kReplicaStatusGrantHint[] =
    "grant SLAVE MONITOR on MariaDB 10.5+, REPLICATION CLIENT on MySQL: docs/configuration.md "
    "\"Privileges\"";

// Parses a SHOW SLAVE STATUS or SHOW REPLICA STATUS result of either column family.
//  - No row: not a replica (configured false), not an error.
//  - A row without both Replica_IO_Running and Replica_SQL_Running, and without both
//    Slave_IO_Running and Slave_SQL_Running: DataError naming them. A row with both pairs reads
//    the kReplica names.
//  - A number cell that is not a number (junk, empty, out of range, a sign on a position): that
//    field stays nullopt. Missing or NULL text cells read as "".
//  - More than one row: the first is read, row_count says how many there were.
Result<ReplicationStatus> ParseSlaveStatus(const QueryResult& result);

}  // namespace lagwatch
