#include "base/async_mysql.h"

#include <poll.h>

#include <mysql.h>

namespace lagwatch {

AsyncMysqlConn::AsyncMysqlConn(EventLoop* loop, MysqlTarget target)
    : loop_(loop), conn_(std::move(target), {}, loop->clock()) {}

void AsyncMysqlConn::Query(std::string sql, MonoTime deadline, Callback done, Millis linger,
                           std::function<void()> late) {
  done_ = std::move(done);
  linger_ = late ? linger : Millis(0);
  deadline_timer_ = loop_->At(deadline, [this, deadline, late = std::move(late)]() mutable {
    deadline_timer_ = 0;
    Status late_status = Status::DeadlineExceeded("no answer from " + conn_.label() + " in time");
    if (linger_ <= Millis(0)) {
      Complete(conn_.Abort(std::move(late_status)));
      return;
    }
    // Keep the watches: the statement goes on, its outcome will go to `late` instead.
    late_ = std::move(late);
    deadline_timer_ = loop_->At(deadline + linger_, [this] {
      deadline_timer_ = 0;
      Complete(conn_.Abort(Status::DeadlineExceeded("gave up on " + conn_.label())));
    });
    Callback done = std::move(done_);
    done_ = nullptr;
    done(std::move(late_status));
  });
  Handle(conn_.Begin(std::move(sql)));
}

bool AsyncMysqlConn::AnswerWaiting() const {
  if (!busy() || watched_fd_ < 0) return false;
  pollfd p{watched_fd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

void AsyncMysqlConn::Cancel() {
  if (!done_ && !late_) return;
  Disarm();
  conn_.Abort(Status::Cancelled("abandoned"));
  done_ = nullptr;
  late_ = nullptr;
}

void AsyncMysqlConn::Handle(std::optional<MysqlConn::Wait> wait) {
  if (!wait) {
    Complete(conn_.TakeResult());
    return;
  }
  // A new socket within one statement (the library reconnecting) means it closed the old one.
  if (watched_fd_ >= 0 && watched_fd_ != wait->fd) loop_->Forget(watched_fd_);
  watched_fd_ = wait->fd;
  const int wait_events = wait->events;
  if (wait_events & (MYSQL_WAIT_READ | MYSQL_WAIT_WRITE | MYSQL_WAIT_EXCEPT)) {
    Status st = loop_->Watch(wait->fd, static_cast<uint32_t>(PollEventsFor(wait_events)),
                             [this, wait_events](uint32_t happened) {
                               Resume(WaitEventsFrom(static_cast<int>(happened), wait_events));
                             });
    if (!st.ok()) {
      watched_fd_ = -1;
      Complete(conn_.Abort(st));
      return;
    }
  }
  if (wait_events & MYSQL_WAIT_TIMEOUT) {
    if (library_timer_) loop_->Cancel(library_timer_);
    library_timer_ = loop_->At(loop_->clock().Now() + Millis(wait->timeout_ms), [this] {
      library_timer_ = 0;
      Resume(MYSQL_WAIT_TIMEOUT);
    });
  }
}

void AsyncMysqlConn::Resume(int wait_events) {
  if (library_timer_) loop_->Cancel(library_timer_);
  library_timer_ = 0;
  Handle(conn_.Continue(wait_events));
}

void AsyncMysqlConn::Disarm() {
  // A failed statement closes the connection (Connector/C closes its socket itself on a failed
  // connect or a lost connection): the fd is then gone from the epoll set, and its number may
  // already be another thread's (OpenSSL opening a CA file for another connection's handshake),
  // so it is only forgotten. An open connection keeps its socket until Close, after this.
  if (watched_fd_ >= 0) {
    if (conn_.connected()) {
      loop_->Unwatch(watched_fd_);
    } else {
      loop_->Forget(watched_fd_);
    }
  }
  watched_fd_ = -1;
  if (deadline_timer_) loop_->Cancel(deadline_timer_);
  if (library_timer_) loop_->Cancel(library_timer_);
  deadline_timer_ = library_timer_ = 0;
}

void AsyncMysqlConn::Complete(Result<QueryResult> outcome) {
  Disarm();
  if (late_) {
    // The statement ended after its deadline (or was given up): its outcome is stale, but the
    // connection is free again, or closed if the server never answered.
    std::function<void()> late = std::move(late_);
    late_ = nullptr;
    late();
    return;
  }
  Callback done = std::move(done_);
  done_ = nullptr;
  if (done) done(std::move(outcome));
}

}  // namespace lagwatch
