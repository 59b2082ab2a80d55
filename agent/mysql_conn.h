// One MySQL/MariaDB client connection whose every call has a hard deadline.
//
// The client library's own timeouts are whole seconds (PLATFORM.md), too coarse for a 150 ms probe,
// so this drives MariaDB Connector/C's non-blocking API. A statement is a small state machine
// (connect if needed, send, store the result) advanced by Begin/Continue; two drivers use it:
//   - Query() blocks the calling thread, polling the socket until the caller's deadline (the
//     heartbeat writer and the position sampler, one thread each);
//   - AsyncMysqlConn (agent/async_mysql.h) hands the waits to an event loop, so one thread drives
//     the connections of hundreds of replicas.
// When a deadline passes the connection is torn down (the server may still be executing the
// statement; the caller must treat the outcome as unknown) and the next statement reconnects.
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
#include "agent/query_result.h"
#include "agent/status.h"

typedef struct st_mysql MYSQL;
typedef struct st_mysql_res MYSQL_RES;

namespace lagwatch {

// The poll()/epoll events (POLLIN, POLLOUT, POLLPRI: the same bits as EPOLLIN...) to wait for
// the library's MYSQL_WAIT_* events, and back from what happened to what Continue expects.
int PollEventsFor(int wait_events);
int WaitEventsFrom(int revents, int wait_events);

class MysqlConn {
 public:
  // `defaults_file` is a MySQL option file; `label` names the peer in error messages ("replica
  // 127.0.0.1:3307"). `stop` (optional) aborts a wait early when shutdown is requested.
  MysqlConn(Endpoint endpoint, std::string defaults_file, std::string label,
            std::stop_token stop = {});
  ~MysqlConn();
  MysqlConn(const MysqlConn&) = delete;
  MysqlConn& operator=(const MysqlConn&) = delete;

  // Runs one statement (connecting first if needed) and stores its whole result, blocking until
  // it is done or `deadline` passes.
  // ServerError: the server rejected the statement (the connection stays usable).
  // Unavailable: refused/closed/auth failure, DeadlineExceeded: not done in time (either way the
  // connection is closed and the statement may or may not have run); InvalidArgument: the option
  // file cannot be read; Cancelled: the stop token fired.
  Result<QueryResult> Query(std::string_view sql, MonoTime deadline);

  // The non-blocking core, for drivers that multiplex many connections.
  // What the statement in flight waits for before Continue can make progress.
  struct Wait {
    int fd = -1;
    int events = 0;       // MYSQL_WAIT_READ | _WRITE | _EXCEPT | _TIMEOUT
    int timeout_ms = -1;  // with MYSQL_WAIT_TIMEOUT: the library's own timeout
  };
  // Starts `sql`, connecting first if needed. Returns what to wait for, or nullopt when the
  // statement is already finished (then call TakeResult). REQUIRES: no statement in flight.
  std::optional<Wait> Begin(std::string sql);
  // Resumes after the wait with the MYSQL_WAIT_* events that happened.
  std::optional<Wait> Continue(int events);
  // The finished statement's outcome (see Query). REQUIRES: Begin/Continue returned nullopt.
  Result<QueryResult> TakeResult();
  // Gives up on the statement in flight (deadline, shutdown): closes the connection; returns `why`.
  Status Abort(Status why);

  void Close();
  bool connected() const { return mysql_ != nullptr; }
  const std::string& label() const { return label_; }
  // The server's error number from the last failed call (0 if none or not a server error).
  unsigned last_errno() const { return last_errno_; }

 private:
  enum class Phase { kIdle, kConnecting, kQuerying, kStoring };
  // Moves through the phases while the library has nothing to wait for.
  std::optional<Wait> Advance(int wait_status);
  std::optional<Wait> Finish(Result<QueryResult> outcome);
  // Polls for `wait` (the blocking driver); returns the events that happened, or a Status on
  // deadline/stop.
  Result<int> PollFor(const Wait& wait, MonoTime deadline);
  Status ClientError(std::string_view what);

  const Endpoint endpoint_;
  const std::string defaults_file_;
  const std::string label_;
  std::stop_token stop_;
  MYSQL* mysql_ = nullptr;
  unsigned last_errno_ = 0;

  // The statement in flight.
  Phase phase_ = Phase::kIdle;
  std::string sql_;  // must outlive the library's coroutine: it is sent after a connect
  MYSQL* connect_ret_ = nullptr;
  int query_err_ = 0;
  MYSQL_RES* res_ = nullptr;
  std::optional<Result<QueryResult>> outcome_;
};

}  // namespace lagwatch
