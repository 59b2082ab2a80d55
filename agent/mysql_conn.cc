#include "agent/mysql_conn.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include <errmsg.h>
#include <mysql.h>

namespace lagwatch {
namespace {
// Longest single poll(); bounds how late a stop request is noticed.
constexpr int kPollSliceMs = 50;
}  // namespace

int QueryResult::Column(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return static_cast<int>(i);
  }
  return -1;
}

MysqlConn::MysqlConn(Endpoint endpoint, std::string defaults_file, std::string label,
                     std::stop_token stop)
    : endpoint_(std::move(endpoint)),
      defaults_file_(std::move(defaults_file)),
      label_(std::move(label)),
      stop_(std::move(stop)) {}

MysqlConn::~MysqlConn() { Close(); }

void MysqlConn::Close() {
  if (!mysql_) return;
  // Shut the socket first so mysql_close's COM_QUIT cannot block on a hung peer.
  int fd = mysql_get_socket(mysql_);
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  mysql_close(mysql_);
  mysql_ = nullptr;
}

Result<int> MysqlConn::Wait(int wait_status, MonoTime deadline) {
  int fd = mysql_get_socket(mysql_);
  short events = 0;
  if (wait_status & MYSQL_WAIT_READ) events |= POLLIN;
  if (wait_status & MYSQL_WAIT_WRITE) events |= POLLOUT;
  if (wait_status & MYSQL_WAIT_EXCEPT) events |= POLLPRI;
  MonoTime lib_deadline = MonoTime::max();
  if (wait_status & MYSQL_WAIT_TIMEOUT) {
    lib_deadline = std::chrono::steady_clock::now() + Millis(mysql_get_timeout_value_ms(mysql_));
  }
  for (;;) {
    if (stop_.stop_requested()) return Status::Cancelled("shutting down");
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return Status::DeadlineExceeded("no answer from " + label_ + " in time");
    if (now >= lib_deadline) return MYSQL_WAIT_TIMEOUT;
    auto until = std::min(deadline, lib_deadline);
    int slice = static_cast<int>(std::min<int64_t>(kPollSliceMs, ToMillis(until - now) + 1));
    struct pollfd pfd = {fd, events, 0};
    int n = ::poll(&pfd, fd >= 0 ? 1 : 0, slice);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable("poll failed for " + label_);
    }
    if (n == 0) continue;
    int happened = 0;
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) happened |= MYSQL_WAIT_READ;
    if (pfd.revents & (POLLOUT | POLLHUP | POLLERR)) happened |= MYSQL_WAIT_WRITE;
    if (pfd.revents & POLLPRI) happened |= MYSQL_WAIT_EXCEPT;
    // A hang-up with no requested event still has to be handed back so the library sees EOF.
    return happened ? happened : (wait_status & (MYSQL_WAIT_READ | MYSQL_WAIT_WRITE));
  }
}

Status MysqlConn::ClientError(std::string_view what) {
  last_errno_ = mysql_errno(mysql_);
  std::string msg = std::string(what) + " " + label_ + ": " + mysql_error(mysql_);
  // Client-side codes (2000+) mean the connection is gone; lower codes are the server's verdict.
  if (last_errno_ >= CR_MIN_ERROR) {
    Close();
    return Status::Unavailable(std::move(msg));
  }
  return Status::ServerError(std::move(msg));
}

Status MysqlConn::Abort(Status why) {
  Close();
  return why;
}

Status MysqlConn::Connect(MonoTime deadline) {
  if (mysql_) return Status::Ok();
  last_errno_ = 0;
  if (::access(defaults_file_.c_str(), R_OK) != 0) {
    return Status::InvalidArgument("cannot read option file " + defaults_file_ + " for " + label_);
  }
  mysql_ = mysql_init(nullptr);
  if (!mysql_) return Status::Unavailable("out of memory creating a connection to " + label_);
  mysql_options(mysql_, MYSQL_OPT_NONBLOCK, nullptr);
  mysql_options(mysql_, MYSQL_READ_DEFAULT_FILE, defaults_file_.c_str());
  mysql_options(mysql_, MYSQL_READ_DEFAULT_GROUP, "lagwatch");
  unsigned int secs = 5;
  mysql_options(mysql_, MYSQL_OPT_CONNECT_TIMEOUT, &secs);
  mysql_options(mysql_, MYSQL_OPT_READ_TIMEOUT, &secs);
  mysql_options(mysql_, MYSQL_OPT_WRITE_TIMEOUT, &secs);

  MYSQL* ret = nullptr;
  int st = mysql_real_connect_start(&ret, mysql_, endpoint_.host.c_str(), nullptr, nullptr, nullptr,
                                    static_cast<unsigned>(endpoint_.port), nullptr, 0);
  while (st) {
    Result<int> ev = Wait(st, deadline);
    if (!ev.ok()) return Abort(ev.status());
    st = mysql_real_connect_cont(&ret, mysql_, ev.value());
  }
  if (!ret) {
    Status s = ClientError("cannot connect to");
    Close();  // a failed handshake leaves nothing reusable, whatever the error class
    return Status::Unavailable(s.message());
  }
  return Status::Ok();
}

Result<QueryResult> MysqlConn::Query(std::string_view sql, MonoTime deadline) {
  if (Status s = Connect(deadline); !s.ok()) return s;
  last_errno_ = 0;
  int err = 0;
  int st = mysql_real_query_start(&err, mysql_, sql.data(), sql.size());
  while (st) {
    Result<int> ev = Wait(st, deadline);
    if (!ev.ok()) return Abort(ev.status());
    st = mysql_real_query_cont(&err, mysql_, ev.value());
  }
  if (err) return ClientError("query failed on");

  QueryResult out;
  MYSQL_RES* res = nullptr;
  st = mysql_store_result_start(&res, mysql_);
  while (st) {
    Result<int> ev = Wait(st, deadline);
    if (!ev.ok()) return Abort(ev.status());
    st = mysql_store_result_cont(&res, mysql_, ev.value());
  }
  if (!res) {
    if (mysql_field_count(mysql_) != 0) return ClientError("reading result failed on");
    out.affected_rows = mysql_affected_rows(mysql_);
    return out;
  }
  unsigned n = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  for (unsigned i = 0; i < n; ++i) out.columns.emplace_back(fields[i].name);
  // A stored result is in memory: fetching rows does no I/O.
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    unsigned long* lengths = mysql_fetch_lengths(res);
    auto& r = out.rows.emplace_back();
    r.reserve(n);
    for (unsigned i = 0; i < n; ++i) {
      if (row[i]) {
        r.emplace_back(std::string(row[i], lengths[i]));
      } else {
        r.emplace_back(std::nullopt);
      }
    }
  }
  mysql_free_result(res);
  return out;
}

}  // namespace lagwatch
