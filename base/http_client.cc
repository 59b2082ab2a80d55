#include "base/http_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace lagwatch {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using SslCtx = std::unique_ptr<SSL_CTX, Deleter<SSL_CTX, SSL_CTX_free>>;
using Ssl = std::unique_ptr<SSL, Deleter<SSL, SSL_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using AddrInfo = std::unique_ptr<addrinfo, Deleter<addrinfo, freeaddrinfo>>;

// OpenSSL's most recent error, for messages.
std::string TlsError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "connection closed";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// "host", or "[host]" for an IPv6 address: the form of the Host header and of messages.
std::string Bracketed(const std::string& host) {
  return host.find(':') == std::string::npos ? host : "[" + host + "]";
}

// Waits until `fd` is ready for `events` or `deadline` passes: "" when ready, else why not.
std::string Wait(int fd, short events, MonoTime deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<Millis>(deadline - std::chrono::steady_clock::now());
    const int ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
    pollfd p = {fd, events, 0};
    const int n = poll(&p, 1, ms);
    if (n > 0) return "";  // also on POLLERR/POLLHUP: the next call on fd says what happened
    if (n == 0) return "timed out";
    if (errno != EINTR) return std::string("poll: ") + std::strerror(errno);
  }
}

// The addresses of t.host:t.port; numeric hosts are never looked up.
AddrInfo Resolve(const HttpTarget& t, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &res);
  if (rc == EAI_NONAME) {
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &res);
  }
  if (rc != 0) *error = "cannot resolve " + t.host + ": " + gai_strerror(rc);
  return AddrInfo(rc == 0 ? res : nullptr);
}

// A connected non-blocking TCP socket, or -1 with *error set.
int Connect(const HttpTarget& t, MonoTime deadline, std::string* error) {
  AddrInfo addrs = Resolve(t, error);
  if (!addrs) return -1;
  std::string why = "no address";
  for (addrinfo* a = addrs.get(); a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      why = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) return fd;
    if (errno == EINPROGRESS) {
      why = Wait(fd, POLLOUT, deadline);
      if (why.empty()) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (err == 0) return fd;
        why = std::strerror(err);
      }
    } else {
      why = std::strerror(errno);
    }
    close(fd);
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  *error = "cannot connect to " + Bracketed(t.host) + ":" + t.port + ": " + why;
  return -1;
}

// A byte stream over a connected non-blocking socket, plain or TLS, whose every call waits at
// most until `deadline`.
class Stream {
 public:
  Stream(int fd, MonoTime deadline) : fd_(fd), deadline_(deadline) {}
  ~Stream() {
    if (ssl_) SSL_shutdown(ssl_.get());  // one try at close_notify; the answer is already read
    close(fd_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // TLS 1.2+ handshake; the certificate checked against t.cacert (or the system's trust store)
  // and the host name or IP, or compared with t.pinned_cert. "" on success, else why not.
  std::string StartTls(const HttpTarget& t) {
    ctx_.reset(SSL_CTX_new(TLS_client_method()));
    if (!ctx_) return "TLS: " + TlsError();
    SSL_CTX_set_min_proto_version(ctx_.get(), TLS1_2_VERSION);
    SSL_CTX_set_options(ctx_.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
    X509Ptr pinned;
    if (!t.pinned_cert.empty()) {
      FILE* f = std::fopen(t.pinned_cert.c_str(), "r");
      if (f) {
        pinned.reset(PEM_read_X509(f, nullptr, nullptr, nullptr));
        std::fclose(f);
      }
      if (!pinned) return "cannot read a certificate from " + t.pinned_cert;
      SSL_CTX_set_verify(ctx_.get(), SSL_VERIFY_NONE, nullptr);  // compared below instead
    } else {
      SSL_CTX_set_verify(ctx_.get(), SSL_VERIFY_PEER, nullptr);
      int loaded = t.cacert.empty()
                       ? SSL_CTX_set_default_verify_paths(ctx_.get())
                       : SSL_CTX_load_verify_locations(ctx_.get(), t.cacert.c_str(), nullptr);
      if (loaded != 1) return "--cacert " + t.cacert + ": " + TlsError();
    }
    ssl_.reset(SSL_new(ctx_.get()));
    if (!ssl_ || SSL_set_fd(ssl_.get(), fd_) != 1) return "TLS: " + TlsError();
    if (pinned == nullptr) {
      in6_addr addr;
      bool is_ip = inet_pton(AF_INET, t.host.c_str(), &addr) == 1 ||
                   inet_pton(AF_INET6, t.host.c_str(), &addr) == 1;
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_.get());
      if (is_ip) {
        X509_VERIFY_PARAM_set1_ip_asc(param, t.host.c_str());
      } else {
        SSL_set_tlsext_host_name(ssl_.get(), t.host.c_str());
        X509_VERIFY_PARAM_set1_host(param, t.host.c_str(), 0);
      }
    }
    std::string why;
    for (;;) {
      ERR_clear_error();
      const int r = SSL_connect(ssl_.get());
      if (r == 1) break;
      if (!(why = WaitAsAsked(SSL_get_error(ssl_.get(), r))).empty()) {
        long verify = SSL_get_verify_result(ssl_.get());
        if (verify != X509_V_OK) {
          why = std::string("certificate not trusted: ") + X509_verify_cert_error_string(verify);
        }
        ssl_.reset();
        return "TLS handshake failed: " + why;
      }
    }
    if (pinned) {
      X509Ptr peer(SSL_get1_peer_certificate(ssl_.get()));
      if (!peer || X509_cmp(peer.get(), pinned.get()) != 0) {
        return "TLS: the agent's certificate is not the one in " + t.pinned_cert;
      }
    }
    return "";
  }

  // Sends all of `data`: "" on success, else why not.
  std::string WriteAll(std::string_view data) {
    size_t done = 0;
    std::string why;
    while (done < data.size() && why.empty()) {
      const char* p = data.data() + done;
      const size_t left = data.size() - done;
      if (ssl_) {
        ERR_clear_error();
        const int n = SSL_write(ssl_.get(), p, static_cast<int>(std::min<size_t>(left, INT_MAX)));
        if (n > 0) {
          done += static_cast<size_t>(n);
        } else {
          why = WaitAsAsked(SSL_get_error(ssl_.get(), n));
        }
        continue;
      }
      const ssize_t n = send(fd_, p, left, MSG_NOSIGNAL);
      if (n >= 0) {
        done += static_cast<size_t>(n);
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        why = Wait(fd_, POLLOUT, deadline_);
      } else if (errno != EINTR) {
        why = std::strerror(errno);
      }
    }
    return why;
  }

  // Up to `size` bytes into buf: > 0 bytes read, 0 at the end, -1 with *error set.
  ssize_t Read(char* buf, size_t size, std::string* error) {
    for (;;) {
      if (ssl_) {
        ERR_clear_error();
        const int n = SSL_read(ssl_.get(), buf, static_cast<int>(std::min<size_t>(size, INT_MAX)));
        if (n > 0) return n;
        const int e = SSL_get_error(ssl_.get(), n);
        if (e == SSL_ERROR_ZERO_RETURN) return 0;  // also a close without close_notify
        *error = WaitAsAsked(e);
      } else {
        const ssize_t n = recv(fd_, buf, size, 0);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        *error = errno == EAGAIN || errno == EWOULDBLOCK ? Wait(fd_, POLLIN, deadline_)
                                                         : std::strerror(errno);
      }
      if (!error->empty()) return -1;
    }
  }

 private:
  // After an SSL call failed with `ssl_error`: waits as it asks (SSL_ERROR_WANT_READ/WRITE) and
  // returns "", or returns why the call failed.
  std::string WaitAsAsked(int ssl_error) {
    if (ssl_error == SSL_ERROR_WANT_READ) return Wait(fd_, POLLIN, deadline_);
    if (ssl_error == SSL_ERROR_WANT_WRITE) return Wait(fd_, POLLOUT, deadline_);
    return TlsError();
  }

  int fd_;
  MonoTime deadline_;
  SslCtx ctx_;
  Ssl ssl_;
};

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

}  // namespace

HttpReply HttpGet(const HttpTarget& target, const HttpRequestOptions& options) {
  const MonoTime deadline = std::chrono::steady_clock::now() + options.timeout;
  HttpReply failed;
  const int fd = Connect(target, deadline, &failed.error);
  if (fd < 0) return failed;
  Stream stream(fd, deadline);
  if (target.tls) {
    failed.error = stream.StartTls(target);
    if (!failed.error.empty()) return failed;
  }

  // Built in one buffer reserved up front, so no copy of the credentials is left unwiped.
  const std::string host = Bracketed(target.host);
  std::string req;
  req.reserve(options.path.size() + host.size() + options.authorization.size() + 64);
  req.append("GET ").append(options.path).append(" HTTP/1.0\r\nHost: ").append(host);
  req.append("\r\nConnection: close\r\n");
  if (!options.authorization.empty()) {
    req.append("Authorization: ").append(options.authorization).append("\r\n");
  }
  req.append("\r\n");
  std::string why = stream.WriteAll(req);
  OPENSSL_cleanse(req.data(), req.size());
  if (!why.empty()) {
    failed.error = "cannot send the request: " + why;
    return failed;
  }

  std::string resp;
  char buf[16384];
  for (;;) {
    const ssize_t n = stream.Read(buf, sizeof buf, &why);
    if (n == 0) break;
    if (n < 0) {
      failed.error = "cannot read the answer: " + why;
      return failed;
    }
    if (resp.size() + static_cast<size_t>(n) > kHttpMaxResponseBytes) {
      failed.error =
          "the answer is longer than " + std::to_string(kHttpMaxResponseBytes >> 20) + " MiB";
      return failed;
    }
    resp.append(buf, static_cast<size_t>(n));
  }
  return Parse(resp);
}

}  // namespace lagwatch
