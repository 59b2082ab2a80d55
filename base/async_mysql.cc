#include "base/async_mysql.h"

#include <poll.h>

#include <mysql.h>

namespace lagwatch {

AsyncMysqlConn::AsyncMysqlConn(EventLoop* loop, Endpoint endpoint, std::string defaults_file,
                               std::string label)
    : loop_(loop),
      conn_(std::move(endpoint), std::move(defaults_file), std::move(label), {}, loop->clock()) {}

void AsyncMysqlConn::Query(std::string sql, MonoTime deadline, Callback done) {
  done_ = std::move(done);
  deadline_timer_ = loop_->At(deadline, [this] {
    deadline_timer_ = 0;
    Complete(conn_.Abort(Status::DeadlineExceeded("no answer from " + conn_.label() + " in time")));
  });
  Handle(conn_.Begin(std::move(sql)));
}

bool AsyncMysqlConn::AnswerWaiting() const {
  if (!done_ || watched_fd_ < 0) return false;
  pollfd p{watched_fd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

void AsyncMysqlConn::Cancel() {
  if (!done_) return;
  Disarm();
  conn_.Abort(Status::Cancelled("abandoned"));
  done_ = nullptr;
}

void AsyncMysqlConn::Handle(std::optional<MysqlConn::Wait> wait) {
  if (!wait) {
    Complete(conn_.TakeResult());
    return;
  }
  if (watched_fd_ >= 0 && watched_fd_ != wait->fd) loop_->Unwatch(watched_fd_);
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
  // The fd may already be closed (a failed statement closes the connection); unwatching a
  // closed fd is harmless, and no other watch on this loop can have reused its number yet.
  if (watched_fd_ >= 0) loop_->Unwatch(watched_fd_);
  watched_fd_ = -1;
  if (deadline_timer_) loop_->Cancel(deadline_timer_);
  if (library_timer_) loop_->Cancel(library_timer_);
  deadline_timer_ = library_timer_ = 0;
}

void AsyncMysqlConn::Complete(Result<QueryResult> outcome) {
  Disarm();
  Callback done = std::move(done_);
  done_ = nullptr;
  if (done) done(std::move(outcome));
}

}  // namespace lagwatch
