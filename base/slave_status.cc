#include "base/slave_status.h"

#include <string_view>
#include <utility>

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

// Row `row` of a result of `family` (kSlave or kReplica).
ReplicationStatus ReadRow(const QueryResult& result, size_t row, ColumnFamily family) {
  const bool replica = family == ColumnFamily::kReplica;
  auto name = [&](Col c) { return replica ? kNames[c].replica : kNames[c].slave; };
  const RowCells cells{result, row};
  ReplicationStatus st;
  st.known = true;
  st.configured = true;
  st.column_family = family;
  st.row_count = result.rows.size();
  st.channel_name =
      cells.Text(result.Column("Channel_Name") >= 0 ? "Channel_Name" : "Connection_name");
  st.io_state = cells.Text(name(kIoRunning));
  st.io_running = st.io_state == "Yes";
  st.sql_running = cells.Text(name(kSqlRunning)) == "Yes";
  st.seconds_behind_master = cells.Number<int64_t>(name(kSecondsBehind));
  st.relay_log_space = cells.Number<int64_t>("Relay_Log_Space");
  for (const char* col : {"Last_IO_Error", "Last_SQL_Error"}) {
    if (std::string v = cells.Text(col); !v.empty()) st.last_error = v;
  }

  st.source_host = cells.Text(name(kSourceHost));
  st.source_port = cells.Number<int64_t>(name(kSourcePort));
  st.source_server_id = cells.Number<int64_t>(name(kSourceServerId));
  st.exec_source_log_file = cells.Text(name(kExecFile));
  st.exec_source_log_pos = cells.Number<uint64_t>(name(kExecPos));
  st.read_source_log_file = cells.Text(name(kReadFile));
  st.read_source_log_pos = cells.Number<uint64_t>(name(kReadPos));

  st.using_gtid = cells.Text("Using_Gtid");
  st.gtid_io_pos = cells.Text("Gtid_IO_Pos");
  if (auto v = cells.Number<int64_t>("Auto_Position"); v == 0 || v == 1) {
    st.auto_position = *v == 1;
  }
  st.executed_gtid_set = cells.Text("Executed_Gtid_Set");
  return st;
}

// The row to judge among several, and how it was chosen.
std::pair<size_t, ChannelMatch> ChooseRow(const QueryResult& result, ColumnFamily family,
                                          const ChannelSource* primary) {
  if (!primary) return {0, ChannelMatch::kNone};
  std::optional<size_t> by_address;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const ChannelMatch m = MatchSource(ReadRow(result, i, family), *primary);
    if (m == ChannelMatch::kServerId) return {i, m};
    if (m == ChannelMatch::kAddress && !by_address) by_address = i;
  }
  if (by_address) return {*by_address, ChannelMatch::kAddress};
  return {0, ChannelMatch::kNone};
}

}  // namespace

const char* ChannelMatchName(ChannelMatch m) {
  switch (m) {
    case ChannelMatch::kOnly:
      return "only channel";
    case ChannelMatch::kServerId:
      return "server id";
    case ChannelMatch::kAddress:
      return "host:port";
    case ChannelMatch::kNone:
      return "none";
  }
  return "none";
}

ChannelMatch MatchSource(const ReplicationStatus& st, const ChannelSource& primary) {
  const bool id_known = primary.server_id && *primary.server_id != 0;
  const bool id_fresh = st.io_running && st.source_server_id && *st.source_server_id != 0;
  if (id_known && id_fresh) {
    return *st.source_server_id == *primary.server_id ? ChannelMatch::kServerId
                                                      : ChannelMatch::kNone;
  }
  const bool address = !st.source_host.empty() && st.source_port &&
                       *st.source_port == primary.port &&
                       AsciiLower(st.source_host) == AsciiLower(primary.host);
  return address ? ChannelMatch::kAddress : ChannelMatch::kNone;
}

bool NeedsAllConnections(const QueryResult& r, const ServerFlavor& flavor,
                         const ChannelSource& primary) {
  if (flavor.kind != ServerFlavor::kMariaDB) return false;
  if (r.rows.empty()) return true;
  auto st = ParseSlaveStatus(r);
  return st.ok() && MatchSource(*st, primary) == ChannelMatch::kNone;
}

std::string DescribeChannel(const ReplicationStatus& st) {
  const std::string n = std::to_string(st.row_count);
  switch (st.channel_match) {
    case ChannelMatch::kOnly:
      return "";
    case ChannelMatch::kNone:
      return "none of its " + n + " replication channels replicates from the primary";
    case ChannelMatch::kServerId:
    case ChannelMatch::kAddress:
      break;
  }
  return "channel '" + st.channel_name + "' (one of " + n +
         ") replicates from the primary (matched by " + ChannelMatchName(st.channel_match) + ")";
}

Result<ReplicationStatus> ParseSlaveStatus(const QueryResult& result,
                                           const ChannelSource* primary) {
  const ColumnFamily family = FamilyOf(result);
  if (result.rows.empty()) {  // not configured as a replica
    ReplicationStatus st;
    st.known = true;
    st.column_family = family;
    return st;
  }
  if (family == ColumnFamily::kNone) {
    return Status::DataError(
        "SHOW SLAVE STATUS has no Slave_IO_Running/Slave_SQL_Running (nor "
        "Replica_IO_Running/Replica_SQL_Running)");
  }
  if (result.rows.size() == 1) return ReadRow(result, 0, family);
  const auto [row, match] = ChooseRow(result, family, primary);
  ReplicationStatus st = ReadRow(result, row, family);
  st.channel_match = match;
  return st;
}

}  // namespace lagwatch
