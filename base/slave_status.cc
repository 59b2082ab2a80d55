#include "base/slave_status.h"

#include "base/strings.h"

namespace lagwatch {

Result<ReplicationStatus> ParseSlaveStatus(const QueryResult& result) {
  ReplicationStatus st;
  st.known = true;
  if (result.rows.empty()) return st;  // not configured as a replica
  if (result.Column("Slave_IO_Running") < 0 || result.Column("Slave_SQL_Running") < 0) {
    return Status::DataError("SHOW SLAVE STATUS has no Slave_IO_Running/Slave_SQL_Running");
  }
  st.configured = true;
  st.io_state = CellText(result, "Slave_IO_Running");
  st.io_running = st.io_state == "Yes";
  st.sql_running = CellText(result, "Slave_SQL_Running") == "Yes";
  if (auto v = Cell(result, "Seconds_Behind_Master"); v && *v) {
    st.seconds_behind_master = ParseInt<int64_t>(**v);
  }
  if (auto v = Cell(result, "Relay_Log_Space"); v && *v) {
    st.relay_log_space = ParseInt<int64_t>(**v);
  }
  for (const char* col : {"Last_IO_Error", "Last_SQL_Error"}) {
    if (std::string v = CellText(result, col); !v.empty()) st.last_error = v;
  }
  return st;
}

}  // namespace lagwatch
