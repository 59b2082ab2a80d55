// One MySQL/MariaDB client connection whose every call has a hard deadline.
//
// The client library's own timeouts are whole seconds (PLATFORM.md), too coarse for a 150 ms probe,
// so this drives MariaDB Connector/C's non-blocking API and polls the socket until the caller's
// deadline. When a deadline passes the connection is torn down (the server may still be executing
// the statement; the caller must treat the outcome as unknown) and the next call reconnects.
//
// Credentials come only from the option file (`[client]` user/password); host and port are given
// explicitly because an option file without them falls back to a unix socket.
//
// Thread-compatible: one thread uses a connection at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "agent/clock.h"
#include "agent/config.h"
#include "agent/status.h"

typedef struct st_mysql MYSQL;

namespace lagwatch {

struct QueryResult {
  std::vector<std::string> columns;
  // NULL cells are nullopt.
  std::vector<std::vector<std::optional<std::string>>> rows;
  uint64_t affected_rows = 0;

  // Index of a column by name, or -1.
  int Column(std::string_view name) const;
};

class MysqlConn {
 public:
  // `defaults_file` is a MySQL option file; `label` names the peer in error messages ("replica
  // 127.0.0.1:3307"). `stop` (optional) aborts a wait early when shutdown is requested.
  MysqlConn(Endpoint endpoint, std::string defaults_file, std::string label,
            std::stop_token stop = {});
  ~MysqlConn();
  MysqlConn(const MysqlConn&) = delete;
  MysqlConn& operator=(const MysqlConn&) = delete;

  // Connects if not connected. Unavailable: refused/closed/auth failure; DeadlineExceeded: not
  // done by `deadline`; InvalidArgument: the option file cannot be read.
  Status Connect(MonoTime deadline);

  // Runs one statement (connecting first if needed) and stores its whole result.
  // ServerError: the server rejected the statement (the connection stays usable).
  // Unavailable / DeadlineExceeded: the connection is closed; the statement may or may not have
  // run.
  Result<QueryResult> Query(std::string_view sql, MonoTime deadline);

  void Close();
  bool connected() const { return mysql_ != nullptr; }
  const std::string& label() const { return label_; }
  // The server's error number from the last failed call (0 if none or not a server error).
  unsigned last_errno() const { return last_errno_; }

 private:
  // Waits for the events Connector/C asked for in `wait_status`; returns the events that
  // happened (MYSQL_WAIT_*), or a Status on deadline/stop.
  Result<int> Wait(int wait_status, MonoTime deadline);
  Status ClientError(std::string_view what);
  Status Abort(Status why);

  const Endpoint endpoint_;
  const std::string defaults_file_;
  const std::string label_;
  std::stop_token stop_;
  MYSQL* mysql_ = nullptr;
  unsigned last_errno_ = 0;
};

}  // namespace lagwatch
