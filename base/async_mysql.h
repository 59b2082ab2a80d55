// A MysqlConn driven by an EventLoop: the waits the connection asks for become fd watches and
// timers on the loop, so one thread multiplexes the connections of many replicas. Every statement
// has a deadline; when it passes, the statement is reported as DeadlineExceeded and, exactly like
// MysqlConn::Query, the connection is closed (the next one reconnects) — unless the caller asked
// the statement to linger: then the connection keeps waiting for the server a while longer, so a
// server that was only hung (stopped, swapping, stalled) is back the moment it answers, without a
// new connection for every deadline (each one a handshake the server would see interrupted).
//
// Loop-affine: construct anywhere, but call Query/Cancel and destroy it on the loop's thread (or
// while the loop is stopped). Callbacks run on the loop's thread.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "base/event_loop.h"
#include "base/mysql_conn.h"

namespace lagwatch {

class AsyncMysqlConn {
 public:
  using Callback = std::function<void(Result<QueryResult>)>;

  AsyncMysqlConn(EventLoop* loop, MysqlTarget target);
  // Abandons a statement in flight without calling back.
  ~AsyncMysqlConn() { Cancel(); }
  AsyncMysqlConn(const AsyncMysqlConn&) = delete;
  AsyncMysqlConn& operator=(const AsyncMysqlConn&) = delete;

  // Runs `sql` (connecting first if needed); `done` is called exactly once with the outcome (see
  // MysqlConn::Query), possibly before Query returns (e.g. an unreadable option file).
  // With `linger` > 0, at `deadline` `done` gets DeadlineExceeded but the statement goes on:
  // until `deadline + linger` the connection waits for its end (lingering()). When it ends, or
  // is given up then (the connection closed), its outcome is dropped and `late` is called;
  // connected() says whether the connection is there to be used.
  // REQUIRES: no statement in flight and none lingering.
  void Query(std::string sql, MonoTime deadline, Callback done, Millis linger = Millis(0),
             std::function<void()> late = nullptr);
  // Abandons the statement in flight or lingering, if any: closes the connection, no callback.
  void Cancel();

  bool busy() const { return static_cast<bool>(done_); }
  // A statement past its deadline is still waited for (see Query).
  bool lingering() const { return static_cast<bool>(late_); }
  // Whether the server's answer to the statement in flight has (begun to) arrive(d) but was not
  // processed yet: the loop is behind, not the server (a poll of the socket, no waiting).
  bool AnswerWaiting() const;
  bool connected() const { return conn_.connected(); }
  unsigned last_errno() const { return conn_.last_errno(); }
  // The server certificate's expiry on this connection (MysqlConn::peer_not_after_unix).
  std::optional<int64_t> peer_not_after_unix() const { return conn_.peer_not_after_unix(); }

 private:
  // Registers what `wait` asks for, or completes when the statement is finished (nullopt).
  void Handle(std::optional<MysqlConn::Wait> wait);
  void Resume(int wait_events);
  void Complete(Result<QueryResult> outcome);
  void Disarm();  // drops the fd watch and both timers

  EventLoop* const loop_;
  MysqlConn conn_;
  Callback done_;               // set while a statement is in flight
  std::function<void()> late_;  // set while it lingers past its deadline
  Millis linger_{0};
  int watched_fd_ = -1;
  EventLoop::TimerId deadline_timer_ = 0;
  EventLoop::TimerId library_timer_ = 0;  // the library's own MYSQL_WAIT_TIMEOUT
};

}  // namespace lagwatch
