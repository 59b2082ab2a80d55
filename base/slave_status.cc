#include "base/slave_status.h"

#include <string_view>

#include "base/strings.h"

namespace lagwatch {
namespace {

// The columns whose name depends on the family (MySQL 8.0.22 renamed them under SHOW REPLICA
// STATUS); the others (Relay_Log_Space, Last_IO_Error, Using_Gtid, ...) are the same in both.
enum Col {
  kIoRunning,
  kSqlRunning,
  kSecondsBehind,
  kSourceHost,
  kSourcePort,
  kSourceServerId,
  kExecFile,
  kExecPos,
  kReadFile,
  kReadPos,
  kNumCols
};
struct ColumnName {
  std::string_view slave, replica;
};
constexpr ColumnName kNames[kNumCols] = {
    {"Slave_IO_Running", "Replica_IO_Running"},
    {"Slave_SQL_Running", "Replica_SQL_Running"},
    {"Seconds_Behind_Master", "Seconds_Behind_Source"},
    {"Master_Host", "Source_Host"},
    {"Master_Port", "Source_Port"},
    {"Master_Server_Id", "Source_Server_Id"},
    {"Relay_Master_Log_File", "Relay_Source_Log_File"},
    {"Exec_Master_Log_Pos", "Exec_Source_Log_Pos"},
    {"Master_Log_File", "Source_Log_File"},
    {"Read_Master_Log_Pos", "Read_Source_Log_Pos"},
};

bool HasBoth(const QueryResult& r, std::string_view a, std::string_view b) {
  return r.Column(a) >= 0 && r.Column(b) >= 0;
}

ColumnFamily FamilyOf(const QueryResult& r) {
  if (HasBoth(r, kNames[kIoRunning].replica, kNames[kSqlRunning].replica)) {
    return ColumnFamily::kReplica;
  }
  if (HasBoth(r, kNames[kIoRunning].slave, kNames[kSqlRunning].slave)) return ColumnFamily::kSlave;
  return ColumnFamily::kNone;
}

// The first row's cell as a number of type T; nullopt when missing, NULL or not a number.
template <typename T>
std::optional<T> Number(const QueryResult& r, std::string_view column) {
  auto v = Cell(r, column);
  return v && *v ? ParseInt<T>(**v) : std::nullopt;
}

}  // namespace

Result<ReplicationStatus> ParseSlaveStatus(const QueryResult& result) {
  ReplicationStatus st;
  st.known = true;
  st.column_family = FamilyOf(result);
  st.row_count = result.rows.size();
  if (result.rows.empty()) return st;  // not configured as a replica
  if (st.column_family == ColumnFamily::kNone) {
    return Status::DataError(
        "SHOW SLAVE STATUS has no Slave_IO_Running/Slave_SQL_Running (nor "
        "Replica_IO_Running/Replica_SQL_Running)");
  }
  const bool replica = st.column_family == ColumnFamily::kReplica;
  auto name = [&](Col c) { return replica ? kNames[c].replica : kNames[c].slave; };

  st.configured = true;
  st.io_state = CellText(result, name(kIoRunning));
  st.io_running = st.io_state == "Yes";
  st.sql_running = CellText(result, name(kSqlRunning)) == "Yes";
  st.seconds_behind_master = Number<int64_t>(result, name(kSecondsBehind));
  st.relay_log_space = Number<int64_t>(result, "Relay_Log_Space");
  for (const char* col : {"Last_IO_Error", "Last_SQL_Error"}) {
    if (std::string v = CellText(result, col); !v.empty()) st.last_error = v;
  }

  st.source_host = CellText(result, name(kSourceHost));
  st.source_port = Number<int64_t>(result, name(kSourcePort));
  st.source_server_id = Number<int64_t>(result, name(kSourceServerId));
  st.exec_source_log_file = CellText(result, name(kExecFile));
  st.exec_source_log_pos = Number<uint64_t>(result, name(kExecPos));
  st.read_source_log_file = CellText(result, name(kReadFile));
  st.read_source_log_pos = Number<uint64_t>(result, name(kReadPos));

  st.using_gtid = CellText(result, "Using_Gtid");
  st.gtid_io_pos = CellText(result, "Gtid_IO_Pos");
  if (auto v = Number<int64_t>(result, "Auto_Position"); v == 0 || v == 1) {
    st.auto_position = *v == 1;
  }
  st.executed_gtid_set = CellText(result, "Executed_Gtid_Set");
  return st;
}

}  // namespace lagwatch
