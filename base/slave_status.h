// SHOW SLAVE STATUS, read into the parts lagwatch uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/query_result.h"
#include "base/status.h"

namespace lagwatch {

// The parts of SHOW SLAVE STATUS lagwatch uses.
struct ReplicationStatus {
  bool known = false;       // a poll has answered
  bool configured = false;  // the server returned a row: it is a replica
  std::string io_state;     // Slave_IO_Running: "Yes", "No" or "Connecting"
  bool io_running = false;
  bool sql_running = false;
  std::optional<int64_t> seconds_behind_master;  // NULL while the SQL thread is stopped
  std::optional<int64_t> relay_log_space;
  std::string last_error;  // Last_IO_Error or Last_SQL_Error, if any
};

// Parses a SHOW SLAVE STATUS result; DataError if the columns are not there.
Result<ReplicationStatus> ParseSlaveStatus(const QueryResult& result);

}  // namespace lagwatch
