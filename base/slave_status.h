// SHOW SLAVE STATUS / SHOW REPLICA STATUS, read into the parts lagwatch uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/query_result.h"
#include "base/server_flavor.h"
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

// How the row a ReplicationStatus was read from was chosen among the result's rows.
enum class ChannelMatch {
  kOnly,      // the result has one row (or none): read whatever its source, as ever
  kServerId,  // its Master_Server_Id is the primary's @@server_id, and its IO thread is connected
  kAddress,   // its Master_Host and Master_Port are the primary's configured host and port
  kNone,      // several rows, none from the primary (or no primary to match): the first is read
};

// "only channel", "server id", "host:port" or "none", for logs and lagwatch check.
const char* ChannelMatchName(ChannelMatch m);

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
  // or MySQL with several channels. Every other field is read from ONE row, the channel judged:
  // the one from the primary (ParseSlaveStatus), else the first.
  size_t row_count = 0;
  // That row's channel: Channel_Name (MySQL) or Connection_name (MariaDB's SHOW ALL SLAVES
  // STATUS); "" for the default channel or when the result has neither column.
  std::string channel_name;
  ChannelMatch channel_match = ChannelMatch::kOnly;

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

// MariaDB's status of every replication connection (multi-source replication), one row each,
// named by its first column, Connection_name ("" for the default connection); SHOW SLAVE STATUS
// and SHOW REPLICA STATUS show only the default connection (@@default_master_connection), and
// no row when there is none. The same privilege as SHOW SLAVE STATUS (SLAVE MONITOR on 10.5+).
// https://mariadb.com/kb/en/show-replica-status/
// https://mariadb.com/kb/en/multi-source-replication/
inline constexpr char kAllConnectionsStatusStatement[] = "SHOW ALL SLAVES STATUS";

// What a refused status poll is missing, for messages: the privilege each server needs.
inline constexpr char kReplicaStatusGrantHint[] =
    "grant SLAVE MONITOR on MariaDB 10.5+, REPLICATION CLIENT on MySQL: docs/configuration.md "
    "\"Privileges\"";

// The server whose channel is judged: the current primary, as lagwatch knows it.
struct ChannelSource {
  std::optional<int64_t> server_id;  // its @@server_id; nullopt or 0 when not known
  std::string host;                  // as configured
  int port = 0;
};

// Whether the row `st` was read from replicates from `primary`, and how that is known:
//  - kServerId: the primary's server id is known, the row's IO thread is connected (only then is
//    Master_Server_Id the id of the server it names: after CHANGE MASTER it keeps the old
//    source's until it connects) and the ids are equal;
//  - kAddress: else, Master_Host equals the primary's configured host (as text, ASCII case
//    ignored: names are never resolved, so a replica that names the primary by an address while
//    the configuration has a name matches by server id only) and Master_Port its port; not when
//    the ids were compared and differ (the name points to another server now);
//  - kNone: neither.
// The same rule the topology uses to find a replica's source (agent/topology.h).
ChannelMatch MatchSource(const ReplicationStatus& st, const ChannelSource& primary);

// Whether a status reply `r` (SHOW REPLICA STATUS or SHOW SLAVE STATUS) of a server of `flavor`
// leaves the channel from `primary` unseen, so that kAllConnectionsStatusStatement must be read
// too: MariaDB, and no row (only named connections, or none) or a row not from `primary`.
bool NeedsAllConnections(const QueryResult& r, const ServerFlavor& flavor,
                         const ChannelSource& primary);

// For logs and lagwatch check, of a status read from several channels: "channel 'main' (one of
// 2) replicates from the primary (matched by server id)", or "none of its 2 replication
// channels replicates from the primary"; "" for one channel (kOnly).
std::string DescribeChannel(const ReplicationStatus& st);

// Parses a SHOW SLAVE STATUS or SHOW REPLICA STATUS result of either column family.
//  - No row: not a replica (configured false), not an error.
//  - A row without both Replica_IO_Running and Replica_SQL_Running, and without both
//    Slave_IO_Running and Slave_SQL_Running: DataError naming them. A row with both pairs reads
//    the kReplica names.
//  - A number cell that is not a number (junk, empty, out of range, a sign on a position): that
//    field stays nullopt. Missing or NULL text cells read as "".
//  - More than one row (one per channel or connection): the first row that replicates from
//    `primary` (MatchSource; a match by server id before one by address) is read, else the first
//    row with channel_match kNone (also when `primary` is null); row_count says how many there
//    were. One row is read whatever its source (kOnly).
Result<ReplicationStatus> ParseSlaveStatus(const QueryResult& result,
                                           const ChannelSource* primary = nullptr);

}  // namespace lagwatch
