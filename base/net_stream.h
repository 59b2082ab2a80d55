// A TCP byte stream, plain or TLS, whose every call has a deadline: the one socket and TLS layer
// under lagwatch's HTTP client (base/http_client.h) and every Redis connection (base/redis_conn.h).
// MySQL connections are Connector/C's own; they take the same TlsOptions (base/mysql_conn.h).
//
// Why not hiredis's sockets: Debian 12's hiredis 0.14 has no TLS, and no TLS-capable Redis client
// is packaged there; hiredis keeps the protocol (redisFormatCommandArgv, redisReader), this the
// bytes.
//
// Deadlines are on the steady clock (base/clock.h's MonoTime) and read from it directly, not
// from an injected Clock: they bound real poll(2) waits, which a fake clock could not shorten.
//
// Thread-compatible: one thread uses a stream at a time. SIGPIPE cannot come from a plain socket
// (MSG_NOSIGNAL); over TLS, OpenSSL writes with write(2), so a process that uses TLS ignores
// SIGPIPE (agent/main.cc does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace lagwatch {

// How to speak TLS to a server: the `tls` blocks of the configuration (docs/configuration.md,
// "TLS"). Redis connections and MySQL connections (Connector/C's options, base/mysql_conn.h) read
// the same fields; `required` is MySQL's only, `server_name` and `pinned_cert_file` are not
// MySQL's (Connector/C checks the name it connects to).
struct TlsOptions {
  bool enabled = false;
  // PEM bundle of the certificate authorities to trust; empty: the system's trust store.
  std::string ca_file;
  // The client's own certificate and key (mutual TLS); both or neither.
  std::string cert_file;
  std::string key_file;
  // The name the server's certificate must carry (a DNS name or an IP address), also sent as SNI;
  // empty: the host connected to.
  std::string server_name;
  // Chain and name checked. Off only by an explicit key, warned about at every start.
  bool verify = true;
  // MySQL: refuse a server that cannot do TLS (MYSQL_OPT_SSL_ENFORCE) instead of going on in
  // plaintext. A TLS Redis connection is always required.
  bool required = true;
  // The lowest protocol version accepted: 12 (TLS 1.2) or 13 (TLS 1.3).
  int min_version = 12;
  // HTTP client only (`lagwatch status --config`): the server must present exactly the first
  // certificate of this PEM file; no chain or name is checked and ca_file is ignored.
  std::string pinned_cert_file;

  bool operator==(const TlsOptions&) const = default;
};

// What a TLS handshake established, for `lagwatch check`, logs and the certificate metrics.
struct TlsPeer {
  bool tls = false;       // false: plaintext (the rest is empty)
  std::string protocol;   // "TLSv1.3"
  std::string cipher;     // "TLS_AES_256_GCM_SHA384"
  bool verified = false;  // chain and name checked (or the pinned certificate matched)
  std::string subject;    // the peer certificate's subject, one line
  // The peer certificate's notAfter, unix seconds; nullopt when it sent none or it is unreadable.
  std::optional<int64_t> not_after_unix;
};

// Whole days from `now_unix` until `not_after_unix` (negative once expired), rounded down.
int64_t DaysUntil(int64_t not_after_unix, int64_t now_unix);

// The named reason of a TLS failure, a stable token for logs, metrics and `lagwatch check`:
//   unknown_ca        the chain does not lead to a trusted CA (self-signed, wrong ca_file)
//   name_mismatch     the certificate is not for the name checked (server_name or the host)
//   expired           the certificate (or one in its chain) has expired
//   not_yet_valid     ... is not valid yet
//   untrusted         any other verification failure
//   not_tls           the server does not speak TLS there (a plaintext port)
//   plaintext_refused the server refused a plaintext client (a TLS-only port, or MySQL's
//                     require_secure_transport)
//   client_cert       the server refused the client's certificate or wanted one
//   handshake         the handshake failed otherwise (no common protocol version or cipher, ...)
//   config            the local files (ca_file, cert_file, key_file) could not be used
// Status::Tls(reason, message) carries one (base/status.h).
namespace tls_reason {
inline constexpr char kUnknownCa[] = "unknown_ca";
inline constexpr char kNameMismatch[] = "name_mismatch";
inline constexpr char kExpired[] = "expired";
inline constexpr char kNotYetValid[] = "not_yet_valid";
inline constexpr char kUntrusted[] = "untrusted";
inline constexpr char kNotTls[] = "not_tls";
inline constexpr char kPlaintextRefused[] = "plaintext_refused";
inline constexpr char kClientCert[] = "client_cert";
inline constexpr char kHandshake[] = "handshake";
inline constexpr char kConfig[] = "config";
}  // namespace tls_reason
// Every reason above, for metrics that create their series at zero.
inline constexpr const char* kTlsReasons[] = {
    tls_reason::kUnknownCa,        tls_reason::kNameMismatch,
    tls_reason::kExpired,          tls_reason::kNotYetValid,
    tls_reason::kUntrusted,        tls_reason::kNotTls,
    tls_reason::kPlaintextRefused, tls_reason::kClientCert,
    tls_reason::kHandshake,        tls_reason::kConfig};

// The reason for an OpenSSL certificate verification result (X509_V_ERR_*).
const char* TlsReasonForVerifyResult(long verify_result);
// The reason for an error text from a TLS library (OpenSSL's, as Connector/C passes it on):
// verification failures by their words ("certificate has expired", "self-signed certificate",
// "hostname mismatch", ...), "wrong version number" as not_tls, alerts about the client's
// certificate as client_cert; kHandshake for anything else.
const char* TlsReasonForErrorText(std::string_view text);

class NetStream {
 public:
  // Connects to host:port by TCP before `deadline`. Numeric hosts are never looked up; a name is
  // resolved by the system resolver (its own timeouts). `label` names the peer in every message
  // of the stream (e.g. "Redis 10.0.0.5:6379"); empty: "HOST:PORT". Unavailable: "cannot resolve
  // HOST: ...", "cannot connect to LABEL: Connection refused"; DeadlineExceeded "...: timed out".
  static Result<std::unique_ptr<NetStream>> Connect(const std::string& host, int port,
                                                    MonoTime deadline, std::string label = "");
  ~NetStream();
  NetStream(const NetStream&) = delete;
  NetStream& operator=(const NetStream&) = delete;

  // The TLS handshake (client side) as `tls` says, checking the server's certificate for
  // tls.server_name or, when that is empty, `host` (its DNS name or IP address).
  // Status::Tls with a named reason (above) and a message saying what OpenSSL said, e.g.
  // "TLS handshake with HOST:PORT failed (unknown_ca): certificate not trusted: self-signed
  // certificate"; DeadlineExceeded when `deadline` passes first. REQUIRES: no TLS yet.
  Status StartTls(const TlsOptions& tls, const std::string& host, MonoTime deadline);

  // Sends all of `data` before `deadline`. Unavailable (or Tls) when the connection failed,
  // DeadlineExceeded when the deadline passed: either way the stream is of no further use.
  Status WriteAll(std::string_view data, MonoTime deadline);

  // Reads up to `size` bytes into `buf`, waiting until `deadline` for at least one: the number
  // read, 0 at the end of the stream (the peer closed), or a Status as for WriteAll.
  Result<size_t> Read(char* buf, size_t size, MonoTime deadline);

  // Bytes already received and decrypted, readable without waiting for the socket (poll cannot
  // see them).
  bool HasBuffered() const;
  // The socket, for a caller that polls for readability between reads (with HasBuffered first).
  int fd() const { return fd_; }
  // "host:port" as given to Connect ("[::1]:6379" for IPv6).
  const std::string& address() const { return address_; }
  // What messages call the peer: Connect's label, else the address.
  const std::string& label() const { return label_; }
  // Plaintext until StartTls succeeded.
  const TlsPeer& peer() const { return peer_; }

 private:
  NetStream(int fd, std::string address, std::string label)
      : fd_(fd), address_(std::move(address)), label_(std::move(label)) {}
  // WaitFd on the socket; a failure's message says `what` and the address.
  Status Wait(short events, MonoTime deadline, std::string_view what);
  // After an SSL call failed with `ssl_error`: waits as it asks (WANT_READ/WRITE) and returns Ok,
  // or returns why the call failed.
  Status WaitAsAsked(int ssl_error, MonoTime deadline, std::string_view what);

  int fd_;
  std::string address_;
  std::string label_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  TlsPeer peer_;
};

// Waits until `fd` is ready for poll `events` or `deadline` passes: Ok when ready (also on
// POLLERR/POLLHUP: the next call on fd says what happened), DeadlineExceeded "timed out".
Status WaitFd(int fd, short events, MonoTime deadline);

}  // namespace lagwatch
