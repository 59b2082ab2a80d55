#include "base/mysql_conn.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include <errmsg.h>
#include <mysql.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

// Connector/C's installed header for its I/O layer (its plugins' interface), for the connection's
// SSL handle (AfterTlsConnect). It needs mysql.h's types, the `uchar` of Connector/C's own
// ma_global.h (not installed), and HAVE_TLS to declare the TLS container, as for plugins built
// outside Connector/C's tree.
#define HAVE_TLS 1
typedef unsigned char uchar;
#include <ma_pvio.h>

#include "base/mysql_errors.h"
#include "base/strings.h"

namespace lagwatch {
namespace {
// Longest single poll(); bounds how late a stop request is noticed.
constexpr int kPollSliceMs = 50;
// How many waits of one statement may still be answered at once past its deadline (PollFor).
constexpr int kLateWaits = 64;

// A stored result in memory (fetching rows does no I/O), as text cells.
QueryResult ToQueryResult(MYSQL_RES* res) {
  QueryResult out;
  unsigned n = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  for (unsigned i = 0; i < n; ++i) out.columns.emplace_back(fields[i].name);
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
  return out;
}

}  // namespace

MysqlConn::MysqlConn(MysqlTarget target, std::stop_token stop, const Clock& clock)
    : target_(std::move(target)), stop_(std::move(stop)), clock_(clock) {}

MysqlConn::~MysqlConn() { Close(); }

void MysqlConn::Close() {
  if (!mysql_) return;
  // Shut the socket first so mysql_close's COM_QUIT cannot block on a hung peer.
  int fd = mysql_get_socket(mysql_);
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  mysql_close(mysql_);
  mysql_ = nullptr;
  blocking_socket_ = false;
  peer_not_after_unix_.reset();
}

int PollEventsFor(int wait_events) {
  int events = 0;
  if (wait_events & MYSQL_WAIT_READ) events |= POLLIN;
  if (wait_events & MYSQL_WAIT_WRITE) events |= POLLOUT;
  if (wait_events & MYSQL_WAIT_EXCEPT) events |= POLLPRI;
  return events;
}

Result<int> MysqlConn::PollFor(const Wait& wait, MonoTime deadline, int* late_waits) {
  const short events = static_cast<short>(PollEventsFor(wait.events));
  MonoTime lib_deadline = MonoTime::max();
  if (wait.events & MYSQL_WAIT_TIMEOUT) {
    lib_deadline = clock_.Now() + Millis(wait.timeout_ms);
  }
  for (;;) {
    if (stop_.stop_requested()) return Status::Cancelled("shutting down");
    auto now = clock_.Now();
    // Past the deadline, what is already waiting is still taken, without waiting for more: a
    // thread kept from running past it (a busy host, a CPU quota) finds the answer there, and
    // the server was not late. `late_waits` bounds how often, so that a server trickling bytes
    // cannot hold the statement open.
    const bool late = now >= deadline && *late_waits > 0;
    if (now >= deadline && !late)
      return Status::DeadlineExceeded("no answer from " + target_.label + " in time");
    if (!late && now >= lib_deadline) return MYSQL_WAIT_TIMEOUT;
    auto until = std::min(deadline, lib_deadline);
    int slice =
        late ? 0 : static_cast<int>(std::min<int64_t>(kPollSliceMs, ToMillis(until - now) + 1));
    struct pollfd pfd = {wait.fd, events, 0};
    int n = ::poll(&pfd, wait.fd >= 0 ? 1 : 0, slice);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable("poll failed for " + target_.label);
    }
    if (late) {
      --*late_waits;
      if (n == 0) return Status::DeadlineExceeded("no answer from " + target_.label + " in time");
    }
    if (n == 0) continue;
    return WaitEventsFrom(pfd.revents, wait.events);
  }
}

std::optional<bool> ParseReadOnly(std::string_view value) {
  const auto v = ParseInt<int>(value);
  if (!v || (*v != 0 && *v != 1)) return std::nullopt;
  return *v == 1;
}

Result<std::optional<bool>> ReadReadOnly(SqlConnection& conn, MonoTime deadline) {
  auto r = conn.Query("SELECT @@read_only", deadline);
  if (!r.ok()) return r.status();
  if (r->rows.size() != 1 || r->rows[0].size() != 1 || !r->rows[0][0]) {
    return std::optional<bool>();
  }
  return ParseReadOnly(*r->rows[0][0]);
}

int WaitEventsFrom(int revents, int wait_events) {
  int happened = 0;
  if (revents & (POLLIN | POLLHUP | POLLERR)) happened |= MYSQL_WAIT_READ;
  if (revents & (POLLOUT | POLLHUP | POLLERR)) happened |= MYSQL_WAIT_WRITE;
  if (revents & POLLPRI) happened |= MYSQL_WAIT_EXCEPT;
  // A hang-up with no requested event still has to be handed back so the library sees EOF.
  return happened ? happened : (wait_events & (MYSQL_WAIT_READ | MYSQL_WAIT_WRITE));
}

Status MysqlConn::ClientError(std::string_view what) {
  last_errno_ = mysql_errno(mysql_);
  std::string msg = std::string(what) + " " + target_.label + ": " + mysql_error(mysql_);
  // Client-side codes (2000+) mean the connection is gone; lower codes are the server's verdict.
  if (last_errno_ >= CR_MIN_ERROR) {
    Close();
    return Status::Unavailable(std::move(msg));
  }
  return Status::ServerError(std::move(msg));
}

void MysqlConn::KeepNonBlocking() {
  // Connector/C 3.3 (Debian 12) leaves the socket blocking after a TLS handshake, and its
  // non-blocking API then reads with SSL_read on it: the read would wait in read(2) for the
  // server instead of handing the wait back, holding up every connection of an event loop while
  // one server hangs (MariaDB's CONC-594). Plaintext reads are MSG_DONTWAIT, so this changes
  // nothing there.
  blocking_socket_ = false;
  const int fd = mysql_get_socket(mysql_);
  if (fd < 0) return;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && !(flags & O_NONBLOCK)) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void MysqlConn::UseBlockingSocket() {
  // Connector/C 3.3's blocking TLS read waits for more bytes with poll(2) for
  // options.read_timeout, which is in seconds, taken as milliseconds: with the socket left
  // non-blocking (KeepNonBlocking) a read that finds nothing gave up after 5 ms ("Connection
  // timed out"), so a binary log stream over TLS was cut between two heartbeat events, about
  // nine times a second. A blocking socket waits in read(2) instead, for the socket's receive
  // timeout (SO_RCVTIMEO, the caller's) or a shutdown. Plaintext reads are unaffected either
  // way: they wait with the library's own timeout in milliseconds.
  if (blocking_socket_) return;
  blocking_socket_ = true;
  const int fd = mysql_get_socket(mysql_);
  if (fd < 0) return;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK)) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

void MysqlConn::AfterTlsConnect() {
  // Connector/C leaves OpenSSL's read-ahead off, so each TLS record the server sends costs a
  // read(2) of its 5-byte header and another of its body, on top of the read that finds nothing
  // and hands the wait back. With read-ahead one read takes what has arrived. Measured with
  // bench/scale --quick --n 1000 --tls: lagwatch's reads 16.9k/s -> 11.6k/s, CPU 0.44 -> 0.35
  // cores. Connector/C reads through SSL_read before it ever waits on the socket, so bytes
  // OpenSSL holds are never waited for. The handle is Connector/C's own (it sets the MYSQL as
  // the SSL's app data): anything else is left alone.
  MARIADB_PVIO* pvio = mysql_->net.pvio;
  if (!pvio || !pvio->ctls || !pvio->ctls->ssl) return;
  SSL* ssl = static_cast<SSL*>(pvio->ctls->ssl);
  if (SSL_get_app_data(ssl) != mysql_) return;
  SSL_set_read_ahead(ssl, 1);
  // The handshake's peer certificate, so that what expires when is known from the connections
  // the agent makes anyway (agent/tls_watch.h) instead of from more of them.
  if (const X509* cert = SSL_get0_peer_certificate(ssl)) {
    std::tm tm{};
    if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) == 1) peer_not_after_unix_ = timegm(&tm);
  }
}

void MysqlConn::SetTlsOptions() {
  const TlsOptions& tls = target_.tls;
  if (!tls.enabled) return;
  auto file = [](const std::string& f) { return f.empty() ? nullptr : f.c_str(); };
  // Also turns TLS on when no file is given (the system's trust store then).
  mysql_ssl_set(mysql_, file(tls.key_file), file(tls.cert_file), file(tls.ca_file), nullptr,
                nullptr);
  my_bool verify = tls.verify ? 1 : 0;
  my_bool enforce = tls.required ? 1 : 0;
  mysql_options(mysql_, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
  mysql_options(mysql_, MYSQL_OPT_SSL_ENFORCE, &enforce);
  mysql_options(mysql_, MARIADB_OPT_TLS_VERSION,
                tls.min_version >= 13 ? "TLSv1.3" : "TLSv1.2,TLSv1.3");
}

Status MysqlConn::ConnectError() {
  last_errno_ = mysql_errno(mysql_);
  std::string msg = "cannot connect to " + target_.label + ": " + mysql_error(mysql_);
  if (last_errno_ == CR_SSL_CONNECTION_ERROR) {
    const char* reason = TlsReasonForErrorText(mysql_error(mysql_));
    return Status::Tls(reason, msg + " (" + reason + ")");
  }
  if (last_errno_ == kErSecureTransportRequired) {
    return Status::Tls(tls_reason::kPlaintextRefused,
                       msg + " (plaintext_refused: the server requires TLS; set tls)");
  }
  if (last_errno_ == kErAccessDenied && !target_.tls.enabled &&
      (mysql_->server_capabilities & CLIENT_SSL)) {
    msg +=
        " (over plaintext, and the server offers TLS: MariaDB answers a plaintext login this "
        "way when require_secure_transport is ON; if it is, set tls)";
  }
  return Status::Unavailable(std::move(msg));
}

Status MysqlConn::Abort(Status why) {
  if (res_) mysql_free_result(res_);
  res_ = nullptr;
  phase_ = Phase::kIdle;
  Close();
  return why;
}

std::optional<MysqlConn::Wait> MysqlConn::Begin(std::string sql) {
  sql_ = std::move(sql);
  last_errno_ = 0;
  outcome_.reset();
  if (mysql_) {
    if (blocking_socket_) KeepNonBlocking();
    phase_ = Phase::kQuerying;
    return Advance(mysql_real_query_start(&query_err_, mysql_, sql_.data(), sql_.size()));
  }
  if (::access(target_.defaults_file.c_str(), R_OK) != 0) {
    return Finish(Status::InvalidArgument("cannot read option file " + target_.defaults_file +
                                          " for " + target_.label));
  }
  mysql_ = mysql_init(nullptr);
  if (!mysql_)
    return Finish(Status::Unavailable("out of memory creating a connection to " + target_.label));
  mysql_options(mysql_, MYSQL_OPT_NONBLOCK, nullptr);
  mysql_options(mysql_, MYSQL_READ_DEFAULT_FILE, target_.defaults_file.c_str());
  mysql_options(mysql_, MYSQL_READ_DEFAULT_GROUP, "lagwatch");
  unsigned int secs = 5;
  mysql_options(mysql_, MYSQL_OPT_CONNECT_TIMEOUT, &secs);
  mysql_options(mysql_, MYSQL_OPT_READ_TIMEOUT, &secs);
  mysql_options(mysql_, MYSQL_OPT_WRITE_TIMEOUT, &secs);
  SetTlsOptions();
  phase_ = Phase::kConnecting;
  return Advance(mysql_real_connect_start(
      &connect_ret_, mysql_, target_.endpoint.host.c_str(), nullptr, nullptr, nullptr,
      static_cast<unsigned>(target_.endpoint.port), nullptr, 0));
}

std::optional<MysqlConn::Wait> MysqlConn::Continue(int events) {
  switch (phase_) {
    case Phase::kConnecting:
      return Advance(mysql_real_connect_cont(&connect_ret_, mysql_, events));
    case Phase::kQuerying:
      return Advance(mysql_real_query_cont(&query_err_, mysql_, events));
    case Phase::kStoring:
      return Advance(mysql_store_result_cont(&res_, mysql_, events));
    case Phase::kIdle:
      break;
  }
  return std::nullopt;
}

std::optional<MysqlConn::Wait> MysqlConn::Advance(int wait_status) {
  for (;;) {
    if (wait_status) {
      Wait w{mysql_get_socket(mysql_), wait_status, -1};
      if (wait_status & MYSQL_WAIT_TIMEOUT) {
        w.timeout_ms = static_cast<int>(mysql_get_timeout_value_ms(mysql_));
      }
      return w;
    }
    switch (phase_) {
      case Phase::kConnecting:
        if (!connect_ret_) {
          Status s = ConnectError();
          Close();  // a failed handshake leaves nothing reusable, whatever the error class
          return Finish(std::move(s));
        }
        KeepNonBlocking();
        AfterTlsConnect();
        phase_ = Phase::kQuerying;
        wait_status = mysql_real_query_start(&query_err_, mysql_, sql_.data(), sql_.size());
        break;
      case Phase::kQuerying:
        if (query_err_) return Finish(ClientError("query failed on"));
        phase_ = Phase::kStoring;
        wait_status = mysql_store_result_start(&res_, mysql_);
        break;
      case Phase::kStoring: {
        if (!res_) {
          if (mysql_field_count(mysql_) != 0)
            return Finish(ClientError("reading result failed on"));
          QueryResult out;
          out.affected_rows = mysql_affected_rows(mysql_);
          return Finish(std::move(out));
        }
        QueryResult out = ToQueryResult(res_);
        mysql_free_result(res_);
        res_ = nullptr;
        return Finish(std::move(out));
      }
      case Phase::kIdle:
        return std::nullopt;
    }
  }
}

std::optional<MysqlConn::Wait> MysqlConn::Finish(Result<QueryResult> outcome) {
  outcome_ = std::move(outcome);
  phase_ = Phase::kIdle;
  return std::nullopt;
}

Result<QueryResult> MysqlConn::TakeResult() {
  if (!outcome_) return Status::Unavailable("no statement finished on " + target_.label);
  Result<QueryResult> r = std::move(*outcome_);
  outcome_.reset();
  return r;
}

Result<QueryResult> MysqlConn::Query(std::string_view sql, MonoTime deadline) {
  std::optional<Wait> w = Begin(std::string(sql));
  int late_waits = kLateWaits;
  while (w) {
    Result<int> ev = PollFor(*w, deadline, &late_waits);
    if (!ev.ok()) return Abort(ev.status());
    w = Continue(ev.value());
  }
  return TakeResult();
}

Status MysqlConn::SendCommand(uint8_t command, std::string_view arg, bool read_reply) {
  if (!mysql_) return Status::Unavailable("not connected to " + target_.label);
  last_errno_ = 0;
  UseBlockingSocket();
  // Connector/C's own command path (mysql.h's methods table): it frames the packet, and reads
  // and checks the reply unless told to skip it.
  if (mysql_->methods->db_command(mysql_, static_cast<enum enum_server_command>(command),
                                  arg.data(), arg.size(), read_reply ? 0 : 1, nullptr) != 0) {
    return ClientError("command failed on");
  }
  return Status::Ok();
}

Result<std::string_view> MysqlConn::ReadPacket() {
  if (!mysql_) return Status::Unavailable("not connected to " + target_.label);
  UseBlockingSocket();
  const unsigned long n = mysql_net_read_packet(mysql_);
  // packet_error (mariadb_com.h) is an unsigned int's -1, widened.
  if (n == static_cast<unsigned long>(packet_error))
    return ClientError("reading the stream failed on");
  return std::string_view(reinterpret_cast<const char*>(mysql_->net.read_pos), n);
}

int MysqlConn::fd() const { return mysql_ ? static_cast<int>(mysql_get_socket(mysql_)) : -1; }

std::optional<int64_t> ParseCertificateTime(std::string_view text) {
  // ASN1_TIME_print's form, which both servers use: "Jan  2 06:09:05 2027 GMT".
  std::tm tm{};
  const std::string t(text);
  const char* end = strptime(t.c_str(), "%b %d %H:%M:%S %Y GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(timegm(&tm));
}

Result<TlsPeer> MysqlConn::InspectTls(MonoTime deadline) {
  auto r = Query(
      "SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher', "
      "'Ssl_server_not_after')",
      deadline);
  if (!r.ok()) return r.status();
  TlsPeer peer;
  for (const auto& row : r->rows) {
    if (row.size() < 2 || !row[0] || !row[1]) continue;
    const std::string name = AsciiLower(*row[0]);
    if (name == "ssl_version") peer.protocol = *row[1];
    if (name == "ssl_cipher") peer.cipher = *row[1];
    if (name == "ssl_server_not_after") peer.not_after_unix = ParseCertificateTime(*row[1]);
  }
  const char* version = nullptr;
  if (mysql_ && mariadb_get_infov(mysql_, MARIADB_CONNECTION_TLS_VERSION, &version) == 0 &&
      version && *version) {
    peer.protocol = version;
  }
  if (const char* cipher = mysql_ ? mysql_get_ssl_cipher(mysql_) : nullptr) peer.cipher = cipher;
  if (peer_not_after_unix_) peer.not_after_unix = peer_not_after_unix_;
  peer.tls = !peer.cipher.empty();
  if (!peer.tls) return TlsPeer{};
  peer.verified = target_.tls.enabled && target_.tls.verify;
  return peer;
}

SqlConnector MysqlConnector(const Clock& clock) {
  return [&clock](const MysqlTarget& target, std::stop_token stop) {
    return std::make_unique<MysqlConn>(target, std::move(stop), clock);
  };
}

}  // namespace lagwatch
