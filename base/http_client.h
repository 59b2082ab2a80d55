// lagwatch's one HTTP GET client: `lagwatch status` (plain or TLS, cli/status_cmd.cc), the
// integration tests' harness (tests/harness.cc) and the benchmarks' scraper (bench/bench_util.cc)
// all call HttpGet.
//
// Why not CivetWeb's own client (mg_connect_client_secure, mg_download): its options take a CA
// file and nothing else, so it can neither pin one certificate (what `lagwatch status --config`
// does with the agent's cert_file) nor check the host name or IP against --cacert; and Debian
// 12's CivetWeb 1.15 calls SSL_get_peer_certificate, which OpenSSL 3 no longer exports, so its
// first TLS connection would crash. The shim libraries that supply that function
// (exporters/openssl_shim.cc, docs/configuration.md "HTTP security") are loaded only when the
// HTTP server starts TLS (exporters/http_server.cc), not for a client. Why not libcurl (Debian's
// libcurl4, which could): measured on Debian 12, linking it would load 25 shared libraries the
// binary does not load today (9.5 MB: nghttp2, librtmp, libssh2, libldap, Kerberos, ...) for one
// GET; this one is ~100 lines of HTTP/1.0 over base/net_stream.h, the socket and TLS layer every
// Redis connection needs anyway. Its deadline is on the steady clock, not an injected Clock: it
// bounds real poll(2) waits, which a fake clock could not shorten.
#pragma once

#include <cstddef>
#include <string>

#include "base/clock.h"

namespace lagwatch {

// Where to ask.
struct HttpTarget {
  bool tls = false;
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  std::string port;  // decimal
  // TLS only. With pinned_cert empty: the server's certificate must chain to a certificate in
  // the PEM file `cacert` (empty: the system's trust store) and be for `host` (its DNS name or
  // IP address). With pinned_cert set: the server must present exactly the first certificate of
  // that PEM file; no chain or name is checked, and cacert is ignored.
  std::string cacert;
  std::string pinned_cert;
};

// What to ask, and how long to wait.
struct HttpRequestOptions {
  std::string path = "/";     // sent as it is: already percent-encoded
  std::string authorization;  // the Authorization header's value ("Basic ..."); empty: none
  // One deadline for all of it: connect, TLS handshake, sending, and receiving to the end.
  Millis timeout{3000};
};

// The answer.
struct HttpReply {
  int code = 0;       // the HTTP status (100..999); 0: no HTTP answer, and `error` says why
  std::string body;   // everything after the headers, as sent (the server must not send chunked)
  std::string error;  // empty when code != 0
};

// The most HttpGet reads; a longer answer is an error.
inline constexpr size_t kHttpMaxResponseBytes = 64u << 20;

// GET options.path from target as HTTP/1.0 with Host (IPv6 in brackets), Connection: close and
// the Authorization header if any, then reads to EOF (the server closes after the body; HTTP/1.0
// also keeps servers from answering chunked).
//
// Success: code is the status line's code, whatever it is (a 401 or a 500 is a success here),
// and body follows the headers. Failure, with code 0, body empty and error set to one line fit
// for a user: the name does not resolve ("cannot resolve ..."); no address accepts the
// connection ("cannot connect to HOST:PORT: Connection refused"); the TLS setup or handshake
// fails ("TLS handshake with HOST:PORT failed (unknown_ca): certificate not trusted: ..." and the
// like: NetStream::StartTls), or the pinned certificate is not the one presented ("TLS: the
// certificate of HOST:PORT is not the one in FILE");
// the request cannot be sent or the answer read ("cannot read the answer: ..."); the answer is
// empty ("no answer"), not HTTP ("not an HTTP answer") or over kHttpMaxResponseBytes; and the
// deadline passes at any step ("...: timed out").
//
// Every step has the deadline options.timeout after the call began; the one exception is
// resolving a host *name* (getaddrinfo, the system resolver's own timeouts): addresses are never
// looked up. The request buffer, which holds the credentials, is wiped (OPENSSL_cleanse) before
// returning; the caller owns and wipes options.authorization.
//
// Thread-safe: calls share no state (each has its own socket and, for TLS, its own SSL_CTX).
// A process that uses TLS ignores SIGPIPE (base/net_stream.h).
HttpReply HttpGet(const HttpTarget& target, const HttpRequestOptions& options);

}  // namespace lagwatch
