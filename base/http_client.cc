#include "base/http_client.h"

#include <string>

#include <openssl/crypto.h>

#include "base/net_stream.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

// The reply in `resp`, a whole answer: "HTTP/1.x NNN reason\r\n" headers "\r\n\r\n" body.
HttpReply Parse(const std::string& resp) {
  HttpReply reply;
  const size_t header_end = resp.find("\r\n\r\n");
  if (resp.size() > 12 && resp.rfind("HTTP/1.", 0) == 0 && resp[8] == ' ' &&
      header_end != std::string::npos && resp[9] >= '1' && resp[9] <= '9' && resp[10] >= '0' &&
      resp[10] <= '9' && resp[11] >= '0' && resp[11] <= '9') {
    reply.code = (resp[9] - '0') * 100 + (resp[10] - '0') * 10 + (resp[11] - '0');
    reply.body = resp.substr(header_end + 4);
  } else {
    reply.error = resp.empty() ? "no answer" : "not an HTTP answer";
  }
  return reply;
}

// A read or write failure in the words of this client's contract ("timed out" for a deadline).
std::string Why(const Status& st) {
  return st.code() == Status::Code::kDeadlineExceeded ? "timed out" : st.message();
}

}  // namespace

HttpReply HttpGet(const HttpTarget& target, const HttpRequestOptions& options) {
  // The steady clock, not a Clock: the deadline bounds real poll(2) waits (base/http_client.h).
  const MonoTime deadline = std::chrono::steady_clock::now() + options.timeout;
  HttpReply failed;
  const auto port = ParseInt<int>(target.port);
  if (!port || *port < 1 || *port > 65535) {
    failed.error = "not a port: " + target.port;
    return failed;
  }
  auto connected = NetStream::Connect(target.host, *port, deadline);
  if (!connected.ok()) {
    failed.error = connected.status().message();
    return failed;
  }
  NetStream& stream = **connected;
  if (target.tls) {
    TlsOptions tls;
    tls.enabled = true;
    tls.ca_file = target.cacert;
    tls.pinned_cert_file = target.pinned_cert;
    if (Status st = stream.StartTls(tls, target.host, deadline); !st.ok()) {
      failed.error = st.message();
      return failed;
    }
  }

  // Built in one buffer reserved up front, so no copy of the credentials is left unwiped.
  const std::string host =
      target.host.find(':') == std::string::npos ? target.host : "[" + target.host + "]";
  std::string req;
  req.reserve(options.path.size() + host.size() + options.authorization.size() + 64);
  req.append("GET ").append(options.path).append(" HTTP/1.0\r\nHost: ").append(host);
  req.append("\r\nConnection: close\r\n");
  if (!options.authorization.empty()) {
    req.append("Authorization: ").append(options.authorization).append("\r\n");
  }
  req.append("\r\n");
  Status sent = stream.WriteAll(req, deadline);
  OPENSSL_cleanse(req.data(), req.size());
  if (!sent.ok()) {
    failed.error = "cannot send the request: " + Why(sent);
    return failed;
  }

  std::string resp;
  char buf[16384];
  for (;;) {
    auto n = stream.Read(buf, sizeof buf, deadline);
    if (!n.ok()) {
      failed.error = "cannot read the answer: " + Why(n.status());
      return failed;
    }
    if (*n == 0) break;
    if (resp.size() + *n > kHttpMaxResponseBytes) {
      failed.error =
          "the answer is longer than " + std::to_string(kHttpMaxResponseBytes >> 20) + " MiB";
      return failed;
    }
    resp.append(buf, *n);
  }
  return Parse(resp);
}

}  // namespace lagwatch
