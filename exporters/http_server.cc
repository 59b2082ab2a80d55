#include "exporters/http_server.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <malloc.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <CivetServer.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>

#include "base/log.h"
#include "base/strings.h"
#include "exporters/metrics.h"

namespace lagwatch {
namespace {

// Paths served without authentication: probes rarely carry credentials, and these bodies say
// nothing but "ok", "ready" or why not.
const std::set<std::string> kOpenPaths = {"/healthz", "/readyz"};

// While Start runs on this thread, CivetWeb's complaints are collected for the error it returns.
thread_local std::vector<std::string>* t_start_log = nullptr;

int LogMessage(const mg_connection*, const char* message) {
  if (t_start_log) {
    t_start_log->push_back(message);
  } else {
    // A failed TLS handshake, a malformed request: the client's problem, at most one line per 10 s.
    LogLimited(LogLevel::kWarn, "http-server", std::string("http: ") + message);
  }
  return 1;
}

// Debian 12's CivetWeb 1.15 finds OpenSSL with dlopen("libssl.so") and dlopen("libcrypto.so")
// (names that only libssl-dev installs) and looks up SSL_get_peer_certificate, which OpenSSL 3 no
// longer exports: the pointer stays null and the first TLS connection crashes the process. Two
// shims that ship with lagwatch (exporters/openssl_shim.cc) carry those sonames, link
// libssl.so.3 / libcrypto.so.3 and add the missing function. Loaded here, before CivetWeb looks,
// they are what its dlopen finds: glibc matches an already loaded library by soname.
constexpr const char* kTlsShims[] = {"liblagwatch-civetweb-crypto.so",
                                     "liblagwatch-civetweb-ssl.so"};

// Where the shims are, relative to the directory of the running binary: lib/ in the build tree,
// ../LIBDIR/lagwatch when installed.
std::vector<std::string> ShimDirs() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  std::string dir(exe, static_cast<size_t>(n));
  dir.resize(dir.rfind('/') + 1);
  return {dir + "lib/", dir + LAGWATCH_SHIM_INSTALL_RELDIR "/"};
}

Status LoadTlsShims() {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [] {
    const std::vector<std::string> dirs = ShimDirs();
    for (const char* name : kTlsShims) {
      std::string tried;
      bool loaded = false;
      for (const auto& dir : dirs) {
        const std::string path = dir + name;
        if (access(path.c_str(), F_OK) != 0) {
          tried += (tried.empty() ? "" : ", ") + path;
          continue;
        }
        // Never closed: CivetWeb keeps using it.
        if (!dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
          const char* err = dlerror();
          status = Status::InvalidArgument("TLS cannot load " + path + ": " +
                                           (err ? err : "dlopen failed"));
          return;
        }
        loaded = true;
        break;
      }
      if (!loaded) {
        status = Status::InvalidArgument(std::string("TLS needs ") + name +
                                         ", installed with lagwatch; not found in " + tried);
        return;
      }
    }
  });
  return status;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// CivetWeb 1.15 wants the key and the certificate in one PEM file (ssl_certificate); the web
// config keeps them apart, like the exporter-toolkit. Joined in an anonymous memory file, the key
// is never copied to disk. Returns the descriptor (the caller closes it once the server runs).
Result<int> JoinedPem(const WebConfig& web) {
  std::string pem = ReadFile(web.key_file) + "\n" + ReadFile(web.cert_file);
  int fd = memfd_create("lagwatch-tls", MFD_CLOEXEC);
  bool ok = fd >= 0;
  for (size_t off = 0; ok && off < pem.size();) {
    ssize_t n = write(fd, pem.data() + off, pem.size() - off);
    ok = n > 0;
    off += ok ? static_cast<size_t>(n) : 0;
  }
  const int err = errno;
  explicit_bzero(pem.data(), pem.size());
  if (!ok) {
    if (fd >= 0) close(fd);
    return Status::InvalidArgument(std::string("cannot stage the TLS key in memory: ") +
                                   strerror(err));
  }
  return fd;
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
}

void SendText(mg_connection* conn, int code, const std::string& body,
              const std::string& extra_headers = "") {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\n%sConnection: close\r\n\r\n",
            code, mg_get_response_code_text(conn, code), body.size(), extra_headers.c_str());
  mg_write(conn, body.data(), body.size());
}

// The counter of lagwatch_http_auth_failures_total for a refusal.
prometheus::Counter& FailureCounter(const HttpAuthMetrics& m, BasicAuth::Verdict v) {
  if (v == BasicAuth::Verdict::kMissing) return m.missing;
  if (v == BasicAuth::Verdict::kMalformed) return m.malformed;
  return m.bad_credentials;
}

// CivetWeb's options for `listen` and the limits of `http`, without TLS.
std::vector<std::string> CivetOptions(const std::string& listen, const HttpConfig& http) {
  // CivetWeb takes "addr:port"; IPv6 as "[::1]:port" needs a "+" suffix form we do not offer.
  // A queue of 16 accepted connections and a backlog of 64 bound what waits for a worker.
  return {"listening_ports",    listen + (http.web.tls() ? "s" : ""),
          "num_threads",        std::to_string(http.max_connections),
          "connection_queue",   "16",
          "listen_backlog",     "64",
          "max_request_size",   std::to_string(http.max_request_bytes),
          "request_timeout_ms", std::to_string(http.request_timeout_ms),
          "enable_keep_alive",  "no"};
}

// The key and certificate staged for CivetWeb (JoinedPem): `fd` is closed once the server has
// read it.
struct StagedPem {
  int fd = -1;
  std::string path;  // what CivetWeb opens; empty without TLS
};

// Loads the TLS shims, stages the PEM and adds the TLS options to `options`. InvalidArgument
// naming http.web_config_file if the shims or the key cannot be loaded.
Result<StagedPem> StageTls(const WebConfig& web, std::vector<std::string>& options) {
  if (Status st = LoadTlsShims(); !st.ok()) {
    return Status::InvalidArgument("http.web_config_file: " + st.message());
  }
  auto fd = JoinedPem(web);
  if (!fd.ok()) return Status::InvalidArgument("http.web_config_file: " + fd.status().message());
  StagedPem pem{*fd, "/proc/self/fd/" + std::to_string(*fd)};
  // ssl_protocol_version 4: TLS 1.2 and newer; 5: TLS 1.3 only. The cipher list applies to
  // TLS 1.2 (forward secrecy and AEAD only); TLS 1.3 suites are all fine.
  options.insert(options.end(), {"ssl_certificate", pem.path, "ssl_certificate_chain",
                                 web.cert_file, "ssl_protocol_version", web.tls13_only ? "5" : "4",
                                 "ssl_cipher_list", "ECDHE+AESGCM:ECDHE+CHACHA20"});
  return pem;
}

// Where to knock at shutdown (network byte order): `host`, or loopback for a wildcard.
uint32_t WakeAddress(const std::string& host) {
  in_addr_t wake = inet_addr(host.c_str());
  return (wake == INADDR_NONE || wake == htonl(INADDR_ANY)) ? htonl(INADDR_LOOPBACK) : wake;
}

// Why CivetWeb did not start, from its exception text and what it logged meanwhile: an
// InvalidArgument naming http.web_config_file if TLS failed, else http.listen.
Status StartFailure(std::vector<std::string> start_log, std::string error,
                    const std::string& pem_path, const WebConfig& web, const std::string& listen) {
  // CivetWeb's exception only guesses ("possible problem binding to port"); its log says why.
  bool tls_failed = false;
  if (!start_log.empty()) error.clear();
  for (auto& line : start_log) {
    if (!pem_path.empty()) {
      ReplaceAll(line, pem_path,
                 "(cert_file " + web.cert_file + ", key_file " + web.key_file + ")");
    }
    tls_failed = tls_failed || line.find("SSL") != std::string::npos ||
                 line.find("ssl") != std::string::npos;
    error += (error.empty() ? "" : "; ") + line;
  }
  if (tls_failed) {
    return Status::InvalidArgument("http.web_config_file: TLS cannot start: " + error);
  }
  return Status::InvalidArgument("http.listen: cannot listen on " + listen + ": " + error);
}

// Warns when `listen` is reachable from other hosts without credentials, or sends them in clear.
void WarnIfExposed(const std::string& listen, const std::string& host, const WebConfig& web) {
  const bool loopback = host == "localhost" || host.rfind("127.", 0) == 0 || host == "[::1]";
  if (!loopback && !web.auth()) {
    Log(LogLevel::kWarn, "http.listen " + listen +
                             " is reachable from other hosts and needs no credentials; see "
                             "http.web_config_file");
  } else if (!loopback && !web.tls()) {
    Log(LogLevel::kWarn, "http.listen " + listen +
                             ": basic auth without TLS sends passwords in clear text over the "
                             "network; see tls_server_config");
  }
}

}  // namespace

const std::string* HttpRequest::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (AsciiLower(n) == AsciiLower(name)) return &v;
  }
  return nullptr;
}

class HttpServer::Route : public CivetHandler {
 public:
  // `path` empty: the catch-all that answers 404. `auth` null: open to everyone.
  Route(std::string path, Handler h, const BasicAuth* auth, const HttpAuthMetrics* failures)
      : path_(std::move(path)), handler_(std::move(h)), auth_(auth), failures_(failures) {}
  // A prefix route: `path` and the paths under it.
  Route(std::string path, RequestHandler h, const BasicAuth* auth, const HttpAuthMetrics* failures)
      : path_(std::move(path)), request_handler_(std::move(h)), auth_(auth), failures_(failures) {}
  bool handleGet(CivetServer*, mg_connection* conn) override { return Serve(conn, true); }
  bool handleHead(CivetServer*, mg_connection* conn) override { return Serve(conn, false); }
  bool handlePost(CivetServer*, mg_connection* conn) override { return Serve(conn, false); }
  bool handlePut(CivetServer*, mg_connection* conn) override { return Serve(conn, false); }
  bool handleDelete(CivetServer*, mg_connection* conn) override { return Serve(conn, false); }
  bool handleOptions(CivetServer*, mg_connection* conn) override { return Serve(conn, false); }
  bool handlePatch(CivetServer*, mg_connection* conn) override { return Serve(conn, false); }

  static constexpr size_t kTrimAfterBytes = 1 << 20;

 private:
  bool Serve(mg_connection* conn, bool get) {
    const mg_request_info* ri = mg_get_request_info(conn);
    if (auth_) {
      auto verdict = auth_->Check(mg_get_header(conn, "Authorization"));
      if (verdict != BasicAuth::Verdict::kOk) {
        FailureCounter(*failures_, verdict).Increment();
        // The user name is the client's text: not logged. Never the password.
        LogLimited(LogLevel::kWarn, "http-auth",
                   std::string("http: refused ") + ri->request_method + " " + ri->local_uri +
                       " from " + ri->remote_addr + ": " + BasicAuth::Reason(verdict));
        SendText(conn, 401, "unauthorized\n",
                 "WWW-Authenticate: Basic realm=\"lagwatch\", charset=\"UTF-8\"\r\n");
        return true;
      }
    }
    // CivetWeb matches handlers by prefix ("/metrics" also takes "/metricsfoo"); serve exact paths,
    // and a prefix route's path and what is under it.
    const std::string_view uri = ri->local_uri;
    const bool under = request_handler_ && uri.starts_with(path_) && uri.size() > path_.size() &&
                       uri[path_.size()] == '/';
    if (path_.empty() || (path_ != uri && !under)) {
      SendText(conn, 404, "not found\n");
      return true;
    }
    if (!get) {
      SendText(conn, 405, "method not allowed\n", "Allow: GET\r\n");
      return true;
    }
    HttpResponse resp;
    try {
      resp = request_handler_ ? request_handler_(Request(ri)) : handler_();
    } catch (const std::exception& e) {
      resp = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
    }
    std::string extra;
    for (const auto& [name, value] : resp.headers) extra += name + ": " + value + "\r\n";
    mg_printf(conn,
              "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
              "Cache-Control: no-store\r\n%sConnection: close\r\n\r\n",
              resp.code, mg_get_response_code_text(conn, resp.code), resp.content_type.c_str(),
              resp.body.size(), extra.c_str());
    mg_write(conn, resp.body.data(), resp.body.size());
    const bool large = resp.body.size() >= kTrimAfterBytes;
    resp = {};
    // A large fleet's scrape builds tens of MB of temporaries; hand the pages back rather than
    // keep them in this worker's malloc arena until the next scrape.
    if (large) malloc_trim(0);
    return true;
  }

  static HttpRequest Request(const mg_request_info* ri) {
    HttpRequest r;
    r.path = ri->local_uri;
    if (ri->query_string) r.query = ri->query_string;
    for (int i = 0; i < ri->num_headers; ++i) {
      r.headers.emplace_back(ri->http_headers[i].name, ri->http_headers[i].value);
    }
    return r;
  }

  const std::string path_;
  const Handler handler_;
  const RequestHandler request_handler_;
  const BasicAuth* const auth_;
  const HttpAuthMetrics* const failures_;
};

Result<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& listen, const HttpConfig& http, const Metrics* metrics,
    std::map<std::string, Handler> routes, std::map<std::string, RequestHandler> prefix_routes) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  const WebConfig& web = http.web;
  s->auth_failures_ = &metrics->http_auth;
  if (web.auth()) s->auth_ = std::make_unique<BasicAuth>(web.basic_auth_users, SystemClock::Get());

  std::vector<std::string> options = CivetOptions(listen, http);
  StagedPem pem;
  if (web.tls()) {
    auto staged = StageTls(web, options);
    if (!staged.ok()) return staged.status();
    pem = std::move(staged).value();
  }
  const std::string host = listen.substr(0, listen.rfind(':'));
  s->wake_address_ = WakeAddress(host);
  if (Status st = s->Listen(options, pem.fd, pem.path, web, listen); !st.ok()) return st;
  s->AddRoutes(std::move(routes), std::move(prefix_routes), metrics);
  WarnIfExposed(listen, host, web);
  return s;
}

Status HttpServer::Listen(const std::vector<std::string>& options, int pem_fd,
                          const std::string& pem_path, const WebConfig& web,
                          const std::string& listen) {
  CivetCallbacks callbacks{};
  callbacks.log_message = LogMessage;
  std::vector<std::string> start_log;
  t_start_log = &start_log;
  std::string error;
  try {
    server_ = std::make_unique<CivetServer>(options, &callbacks);
  } catch (const CivetException& e) {
    error = e.what();
  }
  t_start_log = nullptr;
  if (pem_fd >= 0) close(pem_fd);  // CivetWeb has read it into its SSL context (or failed)
  if (!server_) return StartFailure(std::move(start_log), std::move(error), pem_path, web, listen);
  for (auto& line : start_log) Log(LogLevel::kWarn, "http: " + line);
  return Status::Ok();
}

void HttpServer::AddRoutes(std::map<std::string, Handler> routes,
                           std::map<std::string, RequestHandler> prefix_routes,
                           const Metrics* metrics) {
  routes["/metrics"] = [metrics] {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", metrics->TextExposition()};
  };
  routes.try_emplace("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  const BasicAuth* auth = auth_.get();
  for (auto& [path, handler] : routes) {
    routes_.push_back(std::make_unique<Route>(
        path, std::move(handler), kOpenPaths.count(path) ? nullptr : auth, auth_failures_));
    server_->addHandler(path, routes_.back().get());
  }
  for (auto& [path, handler] : prefix_routes) {
    routes_.push_back(std::make_unique<Route>(path, std::move(handler), auth, auth_failures_));
    server_->addHandler(path, routes_.back().get());
  }
  // Everything else: 401 without credentials, like any protected path, then 404.
  routes_.push_back(std::make_unique<Route>("", Handler(), auth, auth_failures_));
  server_->addHandler("/", routes_.back().get());
}

HttpServer::~HttpServer() {
  if (!server_) return;
  // CivetWeb's listener thread notices the stop flag only when its poll() returns, which without
  // traffic is after up to 2 s. Knock on our own port until close() has joined it.
  const int port = this->port();
  std::atomic<bool> closed{false};
  std::thread knocker([&] {
    while (!closed.load()) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      addr.sin_addr.s_addr = wake_address_;
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  server_->close();
  closed = true;
  knocker.join();
}

int HttpServer::port() const {
  auto ports = server_->getListeningPorts();
  return ports.empty() ? 0 : ports[0];
}

}  // namespace lagwatch
