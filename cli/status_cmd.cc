#include "cli/status_cmd.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string_view>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <nlohmann/json.hpp>

#include "base/secret_file.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

constexpr int kExitUnhealthy = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

constexpr char kUsage[] =
    "usage: lagwatch status [--url http[s]://HOST:PORT | --config FILE] [--cacert FILE]\n"
    "                       [--user NAME --password-file FILE]\n";

// Where and how to ask.
struct Target {
  bool tls = false;
  std::string host;
  std::string port;
  std::string cacert;         // https: trust these certificates (else the system's), check the name
  std::string pinned_cert;    // https: the agent must present exactly this file's first certificate
  std::string authorization;  // "Basic ..." or empty
};

struct Reply {
  int code = 0;  // HTTP status; 0: no HTTP answer
  std::string body;
  std::string error;  // why there is no answer
};

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using SslCtx = std::unique_ptr<SSL_CTX, Deleter<SSL_CTX, SSL_CTX_free>>;
using Ssl = std::unique_ptr<SSL, Deleter<SSL, SSL_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;

// OpenSSL's most recent error, for messages.
std::string TlsError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "connection closed";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// A TCP connection with 3 s send and receive timeouts, or -1.
int Connect(const Target& t) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

// A byte stream over a connected socket, plain or TLS.
class Stream {
 public:
  explicit Stream(int fd) : fd_(fd) {}
  ~Stream() {
    if (ssl_) SSL_shutdown(ssl_.get());
    close(fd_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // TLS 1.2+ handshake; the certificate checked against t.cacert (or the system's trust store)
  // and the host name or IP, or compared with t.pinned_cert. "" on success, else why not.
  std::string StartTls(const Target& t) {
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
    if (SSL_connect(ssl_.get()) != 1) {
      long verify = SSL_get_verify_result(ssl_.get());
      std::string why = verify != X509_V_OK ? std::string("certificate not trusted: ") +
                                                  X509_verify_cert_error_string(verify)
                                            : TlsError();
      ssl_.reset();
      return "TLS handshake failed: " + why;
    }
    if (pinned) {
      X509Ptr peer(SSL_get1_peer_certificate(ssl_.get()));
      if (!peer || X509_cmp(peer.get(), pinned.get()) != 0) {
        return "TLS: the agent's certificate is not the one in " + t.pinned_cert;
      }
    }
    return "";
  }

  bool Write(const std::string& data) {
    if (ssl_) {
      return SSL_write(ssl_.get(), data.data(), static_cast<int>(data.size())) ==
             static_cast<int>(data.size());
    }
    return send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }

  // Up to sizeof buf bytes; <= 0 at the end or on error.
  ssize_t Read(char* buf, size_t size) {
    if (ssl_) return SSL_read(ssl_.get(), buf, static_cast<int>(size));
    return read(fd_, buf, size);
  }

 private:
  int fd_;
  SslCtx ctx_;
  Ssl ssl_;
};

// One HTTP/1.1 GET (Connection: close) with 3 s socket timeouts.
Reply Get(const Target& t, const std::string& path) {
  Reply reply;
  int fd = Connect(t);
  if (fd < 0) {
    reply.error = "cannot connect";
    return reply;
  }
  Stream stream(fd);
  if (t.tls) {
    reply.error = stream.StartTls(t);
    if (!reply.error.empty()) return reply;
  }
  const std::string host = t.host.find(':') == std::string::npos ? t.host : "[" + t.host + "]";
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n";
  if (!t.authorization.empty()) req += "Authorization: " + t.authorization + "\r\n";
  req += "\r\n";
  const bool sent = stream.Write(req);
  OPENSSL_cleanse(req.data(), req.size());
  if (!sent) {
    reply.error = "cannot send the request";
    return reply;
  }
  std::string resp;
  char buf[16384];
  ssize_t n;
  while ((n = stream.Read(buf, sizeof buf)) > 0 && resp.size() < (64u << 20)) {
    resp.append(buf, static_cast<size_t>(n));
  }
  if (resp.rfind("HTTP/1.", 0) == 0 && resp.size() > 12) reply.code = std::atoi(resp.c_str() + 9);
  size_t body = resp.find("\r\n\r\n");
  if (body != std::string::npos) reply.body = resp.substr(body + 4);
  if (reply.code == 0) reply.error = resp.empty() ? "no answer" : "not an HTTP answer";
  return reply;
}

// "Basic base64(user:password)"; the password is wiped from the intermediate buffer.
std::string BasicAuthorization(const std::string& user, std::string password) {
  std::string plain = user + ":" + password;
  std::string out(4 * ((plain.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(plain.data()),
                          static_cast<int>(plain.size()));
  out.resize(static_cast<size_t>(n));
  std::string header = "Basic " + out;
  OPENSSL_cleanse(out.data(), out.size());
  OPENSSL_cleanse(plain.data(), plain.size());
  OPENSSL_cleanse(password.data(), password.size());
  return header;
}

// A field as text for the terminal (control bytes escaped), or "-".
std::string Field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  return EscapeControl(it->is_string() ? it->get<std::string>() : it->dump());
}

// "p99_ms" of window `w`, or "-".
std::string Window(const nlohmann::json& r, const char* w, const char* key, bool percent) {
  auto wins = r.find("windows");
  if (wins == r.end() || !wins->contains(w) || !(*wins)[w].contains(key) ||
      !(*wins)[w][key].is_number()) {
    return "-";
  }
  char out[32];
  double v = (*wins)[w][key].get<double>();
  if (percent) {
    std::snprintf(out, sizeof out, "%.2f%%", 100 * v);
  } else {
    std::snprintf(out, sizeof out, "%.0f", v);
  }
  return out;
}

}  // namespace

// Never throws: whatever the JSON holds, a replica is healthy only if its "healthy" is 1.
std::string RenderStatusTable(const std::string& replicas_json, int* unhealthy) {
  auto doc = nlohmann::json::parse(replicas_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("replicas") || !doc["replicas"].is_array()) {
    *unhealthy = -1;
    return "";
  }
  *unhealthy = 0;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %-8s %-16s %-8s %-14s %9s %9s\n", "REPLICA", "TIER",
                "STATE", "HEALTHY", "DELAY ms", "P99 1m", "SLAR 5m");
  out += line;
  for (const auto& r : doc["replicas"]) {
    if (!r.is_object()) {
      *unhealthy = -1;
      return "";
    }
    auto h = r.find("healthy");
    const bool healthy = h != r.end() && h->is_number_integer() && h->get<int64_t>() == 1;
    if (!healthy) ++*unhealthy;
    std::string delay = r.contains("delay_ms") && r["delay_ms"].is_number()
                            ? Field(r, "delay_lower_ms") + ".." + Field(r, "delay_ms")
                            : "-";
    std::snprintf(line, sizeof line, "%-24s %-8s %-16s %-8s %-14s %9s %9s\n",
                  Field(r, "replica").c_str(), Field(r, "tier").c_str(), Field(r, "state").c_str(),
                  healthy ? "yes" : "NO", delay.c_str(), Window(r, "1m", "p99_ms", false).c_str(),
                  Window(r, "5m", "slar", true).c_str());
    out += line;
    if (r.contains("last_error") && r["last_error"].is_string() && !healthy) {
      out += "    last error: " + Field(r, "last_error") + "\n";
    }
  }
  return out;
}

int RunStatusCommand(const std::vector<std::string>& args, const ListenerFromConfig& from_config) {
  std::string url, config_path, cacert, user, password_file;
  for (size_t i = 0; i < args.size(); i += 2) {
    std::string* value = args[i] == "--url"             ? &url
                         : args[i] == "--config"        ? &config_path
                         : args[i] == "--cacert"        ? &cacert
                         : args[i] == "--user"          ? &user
                         : args[i] == "--password-file" ? &password_file
                                                        : nullptr;
    if (value == nullptr || i + 1 >= args.size() || !value->empty() || args[i + 1].empty()) {
      std::fputs(kUsage, stderr);
      return kExitUsage;
    }
    *value = args[i + 1];
  }
  if ((!url.empty() && !config_path.empty()) || user.empty() != password_file.empty()) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }

  Target target;
  target.cacert = cacert;
  if (!config_path.empty()) {
    auto listener = from_config(config_path);
    if (!listener.ok()) {
      std::fprintf(stderr, "lagwatch status: invalid config %s: %s\n", config_path.c_str(),
                   listener.status().message().c_str());
      return kExitUsage;
    }
    url = listener->url;
    if (!listener->cert_file.empty() && cacert.empty()) target.pinned_cert = listener->cert_file;
  } else if (url.empty()) {
    url = "http://127.0.0.1:9877";
  }
  const std::string_view scheme = url.rfind("https://", 0) == 0  ? "https://"
                                  : url.rfind("http://", 0) == 0 ? "http://"
                                                                 : "";
  std::string_view rest = std::string_view(url).substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  auto host_port = scheme.empty() ? std::nullopt : ParseListenAddress(rest);
  if (!host_port) {
    std::fprintf(stderr, "lagwatch status: not an http[s]://HOST:PORT URL: %s\n", url.c_str());
    return kExitUsage;
  }
  target.tls = scheme == "https://";
  target.host = host_port->host;
  target.port = std::to_string(host_port->port);
  if (target.host == "0.0.0.0") target.host = "127.0.0.1";
  if (target.host == "::") target.host = "::1";
  if (!target.tls && !cacert.empty()) {
    std::fprintf(stderr, "lagwatch status: --cacert needs an https agent (%s)\n", url.c_str());
    return kExitUsage;
  }
  if (!password_file.empty()) {
    Status st = CheckSecretFile("--password-file", password_file, InsecureFiles::kRefuse);
    auto password =
        st.ok() ? ReadSecretLine("--password-file", password_file) : Result<std::string>(st);
    if (!password.ok()) {
      std::fprintf(stderr, "lagwatch status: %s\n", password.status().message().c_str());
      return kExitUsage;
    }
    target.authorization = BasicAuthorization(user, std::move(password.value()));
  }

  const bool sent_credentials = !target.authorization.empty();
  Reply reply = Get(target, "/api/v1/replicas");
  OPENSSL_cleanse(target.authorization.data(), target.authorization.size());
  if (reply.code != 200) {
    std::string why = reply.code == 0 ? reply.error : "HTTP " + std::to_string(reply.code);
    if (reply.code == 401) {
      why += !sent_credentials ? ": the agent wants basic auth (--user NAME --password-file FILE)"
                               : ": the agent refused the credentials";
    }
    std::fprintf(stderr, "lagwatch status: no answer from %s/api/v1/replicas: %s\n", url.c_str(),
                 why.c_str());
    return kExitUnreachable;
  }
  int unhealthy = 0;
  std::string table = RenderStatusTable(reply.body, &unhealthy);
  if (unhealthy < 0) {
    std::fprintf(stderr, "lagwatch status: %s answered with something that is not the API\n",
                 url.c_str());
    return kExitUnreachable;
  }
  std::fputs(table.c_str(), stdout);
  return unhealthy > 0 ? kExitUnhealthy : 0;
}

}  // namespace lagwatch
