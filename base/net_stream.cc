#include "base/net_stream.h"

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
#include <ctime>

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
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using AddrInfo = std::unique_ptr<addrinfo, Deleter<addrinfo, freeaddrinfo>>;

// OpenSSL's most recent error, for messages; the queue is cleared.
std::string TlsError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "connection closed";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// "host", or "[host]" for an IPv6 address.
std::string Bracketed(const std::string& host) {
  return host.find(':') == std::string::npos ? host : "[" + host + "]";
}

bool IsIpAddress(const std::string& host) {
  in6_addr addr;
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 ||
         inet_pton(AF_INET6, host.c_str(), &addr) == 1;
}

// The addresses of host:port; numeric hosts are never looked up.
Result<AddrInfo> Resolve(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc == EAI_NONAME) {
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  }
  if (rc != 0) return Status::Unavailable("cannot resolve " + host + ": " + gai_strerror(rc));
  return AddrInfo(res);
}

std::optional<int64_t> UnixTime(const ASN1_TIME* t) {
  std::tm tm{};
  if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return std::nullopt;
  return static_cast<int64_t>(timegm(&tm));
}

std::string Subject(X509* cert) {
  char buf[512];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof buf);
  return buf;
}

// Builds the client context `tls` describes: Ok, or Tls(config) naming the file at fault.
Status MakeContext(const TlsOptions& tls, SSL_CTX** out) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return Status::Tls(tls_reason::kConfig, "TLS: " + TlsError());
  *out = ctx;
  SSL_CTX_set_min_proto_version(ctx, tls.min_version >= 13 ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Writes may be retried with the same data from another buffer address (a grown buffer).
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (!tls.pinned_cert_file.empty() || !tls.verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    const int loaded = tls.ca_file.empty()
                           ? SSL_CTX_set_default_verify_paths(ctx)
                           : SSL_CTX_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr);
    if (loaded != 1) {
      return Status::Tls(tls_reason::kConfig,
                         "cannot load CA file " + tls.ca_file + ": " + TlsError());
    }
  }
  if (!tls.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1) {
      return Status::Tls(tls_reason::kConfig,
                         "cannot load certificate " + tls.cert_file + ": " + TlsError());
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      return Status::Tls(tls_reason::kConfig, "cannot use key " + tls.key_file + " with " +
                                                  tls.cert_file + ": " + TlsError());
    }
  }
  return Status::Ok();
}

}  // namespace

int64_t DaysUntil(int64_t not_after_unix, int64_t now_unix) {
  const int64_t s = not_after_unix - now_unix;
  return s >= 0 ? s / 86400 : -((-s + 86399) / 86400);
}

const char* TlsReasonForVerifyResult(long verify_result) {
  switch (verify_result) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_UNTRUSTED:
      return tls_reason::kUnknownCa;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return tls_reason::kNameMismatch;
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return tls_reason::kExpired;
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return tls_reason::kNotYetValid;
    default:
      return tls_reason::kUntrusted;
  }
}

const char* TlsReasonForErrorText(std::string_view text) {
  auto has = [&](std::string_view words) { return text.find(words) != std::string_view::npos; };
  if (has("certificate has expired")) return tls_reason::kExpired;
  if (has("certificate is not yet valid")) return tls_reason::kNotYetValid;
  if (has("self-signed certificate") || has("self signed certificate") ||
      has("unable to get local issuer certificate") || has("unable to get issuer certificate") ||
      has("unable to verify the first certificate") || has("certificate not trusted")) {
    return tls_reason::kUnknownCa;
  }
  if (has("hostname mismatch") || has("IP address mismatch") ||
      has("Validation of SSL server certificate failed") || has("does not match")) {
    return tls_reason::kNameMismatch;
  }
  if (has("wrong version number") || has("packet length too long") || has("http request") ||
      has("does not support SSL") || has("not support TLS")) {
    return tls_reason::kNotTls;
  }
  if (has("certificate required") || has("alert bad certificate") || has("alert unknown ca") ||
      has("peer did not return a certificate")) {
    return tls_reason::kClientCert;
  }
  if (has("certificate verify failed")) return tls_reason::kUntrusted;
  return tls_reason::kHandshake;
}

Status WaitFd(int fd, short events, MonoTime deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<Millis>(deadline - std::chrono::steady_clock::now());
    const int ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
    pollfd p = {fd, events, 0};
    const int n = poll(&p, 1, ms);
    if (n > 0) return Status::Ok();
    if (n == 0) return Status::DeadlineExceeded("timed out");
    if (errno != EINTR) return Status::Unavailable(std::string("poll: ") + std::strerror(errno));
  }
}

Result<std::unique_ptr<NetStream>> NetStream::Connect(const std::string& host, int port,
                                                      MonoTime deadline, std::string label) {
  const std::string port_text = std::to_string(port);
  const std::string address = Bracketed(host) + ":" + port_text;
  if (label.empty()) label = address;
  auto addrs = Resolve(host, port_text);
  if (!addrs.ok()) return addrs.status();
  std::string why = "no address";
  bool timed_out = false;
  for (addrinfo* a = addrs->get(); a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      why = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      return std::unique_ptr<NetStream>(new NetStream(fd, address, label));
    }
    if (errno == EINPROGRESS) {
      Status st = WaitFd(fd, POLLOUT, deadline);
      if (st.ok()) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (err == 0) return std::unique_ptr<NetStream>(new NetStream(fd, address, label));
        why = std::strerror(err);
      } else {
        why = st.message();
        timed_out = st.code() == Status::Code::kDeadlineExceeded;
      }
    } else {
      why = std::strerror(errno);
    }
    close(fd);
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  std::string msg = "cannot connect to " + label + ": " + why;
  return timed_out ? Status::DeadlineExceeded(std::move(msg)) : Status::Unavailable(std::move(msg));
}

NetStream::~NetStream() {
  if (ssl_) {
    SSL_shutdown(ssl_);  // one try at close_notify, never waited for
    SSL_free(ssl_);
  }
  if (ctx_) SSL_CTX_free(ctx_);
  close(fd_);
}

Status NetStream::Wait(short events, MonoTime deadline, std::string_view what) {
  Status st = WaitFd(fd_, events, deadline);
  if (st.ok()) return st;
  std::string msg = std::string(what) + " " + label_ + ": " + st.message();
  return st.code() == Status::Code::kDeadlineExceeded ? Status::DeadlineExceeded(std::move(msg))
                                                      : Status::Unavailable(std::move(msg));
}

Status NetStream::WaitAsAsked(int ssl_error, MonoTime deadline, std::string_view what) {
  if (ssl_error == SSL_ERROR_WANT_READ) return Wait(POLLIN, deadline, what);
  if (ssl_error == SSL_ERROR_WANT_WRITE) return Wait(POLLOUT, deadline, what);
  if (ssl_error == SSL_ERROR_SYSCALL && errno != 0 && ERR_peek_error() == 0) {
    return Status::Unavailable(std::string(what) + " " + label_ + ": " + std::strerror(errno));
  }
  const std::string err = TlsError();
  const char* reason = TlsReasonForErrorText(err);
  return Status::Tls(
      reason, "TLS " + std::string(what) + " " + label_ + " failed (" + reason + "): " + err);
}

Status NetStream::StartTls(const TlsOptions& tls, const std::string& host, MonoTime deadline) {
  if (Status st = MakeContext(tls, &ctx_); !st.ok()) return st;
  X509Ptr pinned;
  if (!tls.pinned_cert_file.empty()) {
    if (FILE* f = std::fopen(tls.pinned_cert_file.c_str(), "r")) {
      pinned.reset(PEM_read_X509(f, nullptr, nullptr, nullptr));
      std::fclose(f);
    }
    if (!pinned) {
      return Status::Tls(tls_reason::kConfig,
                         "cannot read a certificate from " + tls.pinned_cert_file);
    }
  }
  ssl_ = SSL_new(ctx_);
  if (!ssl_ || SSL_set_fd(ssl_, fd_) != 1) return Status::Tls(tls_reason::kConfig, TlsError());
  // One read(2) per burst of records instead of one for each record's 5-byte header and another
  // for its body: Read tries SSL_read before it waits, and HasBuffered counts what OpenSSL holds.
  SSL_set_read_ahead(ssl_, 1);
  const std::string& name = tls.server_name.empty() ? host : tls.server_name;
  const bool ip = IsIpAddress(name);
  if (!ip) SSL_set_tlsext_host_name(ssl_, name.c_str());
  if (!pinned && tls.verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    if (ip) {
      X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    }
  }
  for (;;) {
    ERR_clear_error();
    errno = 0;
    const int r = SSL_connect(ssl_);
    if (r == 1) break;
    const int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      if (Status st = WaitAsAsked(e, deadline, "TLS handshake with"); !st.ok()) return st;
      continue;
    }
    const long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) {
      ERR_clear_error();
      const char* reason = TlsReasonForVerifyResult(verify);
      return Status::Tls(
          reason, "TLS handshake with " + label_ + " failed (" + reason +
                      "): certificate not trusted: " + X509_verify_cert_error_string(verify) +
                      " (checked for " + name + ")");
    }
    std::string err = e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0
                          ? (errno ? std::string(std::strerror(errno)) : "connection closed")
                          : TlsError();
    // A peer that closes during the handshake without a word is most often a plaintext server
    // reading our ClientHello as a command it cannot parse.
    const char* reason = err == "connection closed" || err == "Connection reset by peer"
                             ? tls_reason::kNotTls
                             : TlsReasonForErrorText(err);
    return Status::Tls(reason, "TLS handshake with " + label_ + " failed (" + reason + "): " + err);
  }
  peer_.tls = true;
  peer_.protocol = SSL_get_version(ssl_);
  peer_.cipher = SSL_get_cipher_name(ssl_);
  X509Ptr cert(SSL_get1_peer_certificate(ssl_));
  if (cert) {
    peer_.subject = Subject(cert.get());
    peer_.not_after_unix = UnixTime(X509_get0_notAfter(cert.get()));
  }
  if (pinned) {
    if (!cert || X509_cmp(cert.get(), pinned.get()) != 0) {
      return Status::Tls(tls_reason::kUntrusted, "TLS: the certificate of " + label_ +
                                                     " is not the one in " + tls.pinned_cert_file);
    }
    peer_.verified = true;
  } else {
    peer_.verified = tls.verify;
  }
  return Status::Ok();
}

Status NetStream::WriteAll(std::string_view data, MonoTime deadline) {
  size_t done = 0;
  while (done < data.size()) {
    const char* p = data.data() + done;
    const size_t left = data.size() - done;
    if (ssl_) {
      ERR_clear_error();
      errno = 0;
      const int n = SSL_write(ssl_, p, static_cast<int>(std::min<size_t>(left, INT_MAX)));
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (Status st = WaitAsAsked(SSL_get_error(ssl_, n), deadline, "write to"); !st.ok()) {
        return st;
      }
      continue;
    }
    const ssize_t n = send(fd_, p, left, MSG_NOSIGNAL);
    if (n >= 0) {
      done += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Status st = Wait(POLLOUT, deadline, "write to"); !st.ok()) return st;
    } else if (errno != EINTR) {
      return Status::Unavailable("write to " + label_ + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

Result<size_t> NetStream::Read(char* buf, size_t size, MonoTime deadline) {
  for (;;) {
    if (ssl_) {
      ERR_clear_error();
      errno = 0;
      const int n = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(size, INT_MAX)));
      if (n > 0) return static_cast<size_t>(n);
      const int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_ZERO_RETURN) return size_t{0};  // also a close without close_notify
      if (Status st = WaitAsAsked(e, deadline, "read from"); !st.ok()) return st;
      continue;
    }
    const ssize_t n = recv(fd_, buf, size, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::Unavailable("read from " + label_ + ": " + std::strerror(errno));
    }
    if (Status st = Wait(POLLIN, deadline, "read from"); !st.ok()) return st;
  }
}

bool NetStream::HasBuffered() const { return ssl_ && SSL_has_pending(ssl_) == 1; }

}  // namespace lagwatch
