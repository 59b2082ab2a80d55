// One MySQL/MariaDB client connection whose every call has a hard deadline.
//
// The client library's own timeouts are whole seconds (docs/architecture.md, "Facts the code relies
// on"), too coarse for a 150 ms probe,
// so this drives MariaDB Connector/C's non-blocking API. A statement is a small state machine
// (connect if needed, send, store the result) advanced by Begin/Continue; two drivers use it:
//   - Query() blocks the calling thread, polling the socket until the caller's deadline (the
//     heartbeat writer and the position sampler, one thread each);
//   - AsyncMysqlConn (base/async_mysql.h) hands the waits to an event loop, so one thread drives
//     the connections of hundreds of replicas.
// When a deadline passes the connection is torn down (the server may still be executing the
// statement; the caller must treat the outcome as unknown) and the next statement reconnects.
//
// Credentials come only from the option file (`[client]` user/password); host and port are given
// explicitly because an option file without them falls back to a unix socket. TLS as the target's
// TlsOptions say (Connector/C's MYSQL_OPT_SSL_* options; an option file's ssl-* lines still apply
// when the target's TLS is off).
//
// Thread-compatible: one thread uses a connection at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/endpoint.h"
#include "base/net_stream.h"
#include "base/query_result.h"
#include "base/status.h"

typedef struct st_mysql MYSQL;
typedef struct st_mysql_res MYSQL_RES;

namespace lagwatch {

// The poll()/epoll events (POLLIN, POLLOUT, POLLPRI: the same bits as EPOLLIN...) to wait for
// the library's MYSQL_WAIT_* events, and back from what happened to what Continue expects.
int PollEventsFor(int wait_events);
int WaitEventsFrom(int revents, int wait_events);

// A blocking statement runner: what the heartbeat writer and the position sampler need of a
// connection, so their tests can give them a fake one (a server that answers late, refuses,
// or is read-only) and a FakeClock.
class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  // Runs one statement, blocking until it is done or `deadline` passes (see MysqlConn::Query).
  virtual Result<QueryResult> Query(std::string_view sql, MonoTime deadline) = 0;
  // The server's error number from the last failed call (0 if none or not a server error).
  virtual unsigned last_errno() const = 0;
};

// A @@read_only value as a server returns it: nullopt when it is not 0 or 1.
std::optional<bool> ParseReadOnly(std::string_view value);
// The server's @@read_only on `conn`: nullopt when the reply is not 0 or 1 (the query's failure
// is the error). The writer asks it before writing again, the sampler after each position.
Result<std::optional<bool>> ReadReadOnly(SqlConnection& conn, MonoTime deadline);

// Where a server is, the option file with its credentials and how to speak TLS to it: all a
// connection needs.
struct MysqlTarget {
  Endpoint endpoint;
  std::string defaults_file;  // MySQL option file with [client] user/password
  std::string label;          // names the peer in messages, e.g. "primary 127.0.0.1:3306"
  TlsOptions tls;             // enabled false: as the option file says (plaintext by default)
  bool operator==(const MysqlTarget&) const = default;
};

// How TLS maps onto Connector/C (docs/configuration.md, "TLS"): enabled sets MYSQL_OPT_SSL_CA /
// _CERT / _KEY (empty ones left unset) and MARIADB_OPT_TLS_VERSION from min_version; verify sets
// MYSQL_OPT_SSL_VERIFY_SERVER_CERT (chain and the host name or IP connected to); required sets
// MYSQL_OPT_SSL_ENFORCE (a server without TLS is refused). Failures:
//   - a TLS error (CR_SSL_CONNECTION_ERROR) is Status::Tls, its reason from the library's text
//     (TlsReasonForErrorText: unknown_ca, name_mismatch, expired, not_tls when TLS is required
//     and the server has none, ...);
//   - MySQL's ER_SECURE_TRANSPORT_REQUIRED (3159) to a plaintext client is Tls plaintext_refused;
//   - MariaDB answers a plaintext login under require_secure_transport with a bare "Access
//     denied" (1045): when the connection was plaintext and the server offered TLS, the message
//     says that TLS may be required (the reason stays the server's).

class MysqlConn final : public SqlConnection {
 public:
  // `target.label` names the peer in error messages ("replica 127.0.0.1:3307"). `stop`
  // (optional) aborts a wait early when shutdown is requested. `clock` (which must outlive the
  // connection) is what deadlines are measured on.
  explicit MysqlConn(MysqlTarget target, std::stop_token stop = {},
                     const Clock& clock = SystemClock::Get());
  ~MysqlConn() override;
  MysqlConn(const MysqlConn&) = delete;
  MysqlConn& operator=(const MysqlConn&) = delete;

  // Runs one statement (connecting first if needed) and stores its whole result, blocking until
  // it is done or `deadline` passes. An answer already there when the deadline is found passed
  // (the thread was kept from running) is still read: the server was not late.
  // ServerError: the server rejected the statement (the connection stays usable).
  // Unavailable: refused/closed/auth failure, DeadlineExceeded: not done in time (either way the
  // connection is closed and the statement may or may not have run); InvalidArgument: the option
  // file cannot be read; Cancelled: the stop token fired.
  Result<QueryResult> Query(std::string_view sql, MonoTime deadline) override;

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
  const std::string& label() const { return target_.label; }
  // The connection's TLS as Connector/C and the server say: protocol and cipher from the library,
  // the server certificate's expiry from the handshake (peer_not_after_unix), else from the
  // server's Ssl_server_not_after; verified when TLS is on with verify set (the library refused
  // the connection otherwise). Runs one statement (connecting first if needed), blocking
  // until `deadline`; fails as Query does.
  Result<TlsPeer> InspectTls(MonoTime deadline);
  // The server certificate's expiry (unix seconds) as this connection's handshake saw it, read
  // from Connector/C's own OpenSSL handle at the connect; nullopt when not connected, not over
  // TLS or not readable. Costs nothing: no statement, no new connection.
  std::optional<int64_t> peer_not_after_unix() const { return peer_not_after_unix_; }
  unsigned last_errno() const override { return last_errno_; }

  // The binary log dump (heartbeat/binlog_listener.h), on a connection Query has opened. Both
  // block the calling thread: the stream has one thread of its own, and a read ends when a
  // packet arrives, the socket's receive timeout passes or the socket is shut down (from
  // another thread, with ::shutdown on fd(): the one call that may come from elsewhere).
  //
  // Sends `command` (a COM_* code: COM_REGISTER_SLAVE, COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID)
  // with `arg`; with `read_reply` also reads its OK. ServerError when the server refuses (the
  // connection stays open), Unavailable when the connection is gone (closed) or was never made.
  Status SendCommand(uint8_t command, std::string_view arg, bool read_reply);
  // The next packet of the server's reply, its first byte included (0x00 before an event,
  // 0xfe for the end of the stream); valid until the next call or Close. An error packet is
  // ServerError with the server's message (the connection stays open: the caller closes it);
  // a lost connection, a timeout or a shutdown is Unavailable (closed), as is no connection.
  Result<std::string_view> ReadPacket();
  // The connection's socket, -1 when not connected.
  int fd() const;

 private:
  enum class Phase { kIdle, kConnecting, kQuerying, kStoring };
  // Moves through the phases while the library has nothing to wait for.
  std::optional<Wait> Advance(int wait_status);
  std::optional<Wait> Finish(Result<QueryResult> outcome);
  // Polls for `wait` (the blocking driver); returns the events that happened, or a Status on
  // deadline/stop. Past the deadline, events already there are still returned, `*late_waits`
  // times at most (counted down).
  Result<int> PollFor(const Wait& wait, MonoTime deadline, int* late_waits);
  Status ClientError(std::string_view what);

  // Sets the TLS options of target_.tls on the fresh handle mysql_.
  void SetTlsOptions();
  // After the connect, and before a statement after SendCommand/ReadPacket: the socket
  // non-blocking again (see the definition).
  void KeepNonBlocking();
  // Before SendCommand/ReadPacket: the socket blocking (see the definition).
  void UseBlockingSocket();
  // After the connect, over TLS: OpenSSL reads ahead (see the definition), and the peer
  // certificate's expiry is kept (peer_not_after_unix).
  void AfterTlsConnect();
  // The Status for a failed connect, as the class comment says.
  Status ConnectError();

  const MysqlTarget target_;
  std::stop_token stop_;
  const Clock& clock_;
  MYSQL* mysql_ = nullptr;
  unsigned last_errno_ = 0;
  bool blocking_socket_ = false;  // UseBlockingSocket made it so (until KeepNonBlocking)
  std::optional<int64_t> peer_not_after_unix_;  // this connection's (AfterTlsConnect)

  // The statement in flight.
  Phase phase_ = Phase::kIdle;
  std::string sql_;  // must outlive the library's coroutine: it is sent after a connect
  MYSQL* connect_ret_ = nullptr;
  int query_err_ = 0;
  MYSQL_RES* res_ = nullptr;
  std::optional<Result<QueryResult>> outcome_;
};

// Opens the connection a worker thread uses to `target` (a MysqlConn in the daemon, a fake in
// tests). The connection must honour `stop` in its waits.
using SqlConnector =
    std::function<std::unique_ptr<SqlConnection>(const MysqlTarget& target, std::stop_token stop)>;

// A certificate time as MySQL and MariaDB print it in Ssl_server_not_after ("Jan  2 06:09:05
// 2027 GMT"), unix seconds; nullopt for anything else.
std::optional<int64_t> ParseCertificateTime(std::string_view text);

// A connector for real MySQL connections, whose deadlines are on `clock`.
SqlConnector MysqlConnector(const Clock& clock);

}  // namespace lagwatch
