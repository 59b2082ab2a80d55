// The agent's HTTP listener (http.*): /metrics in the Prometheus text format, /healthz, and
// any JSON routes the agent registers. One CivetWeb server per process.
//
// Security (README "HTTP security"): with http.web_config_file, TLS (certificate and key files)
// and basic auth (bcrypt hashes) as exporters/web_config.h describes. Basic auth guards every
// path except /healthz and /readyz, which stay open for liveness and readiness probes and say
// nothing but "ok", "ready" or why not. Limits bound what a client can make the server hold:
// http.max_connections requests at once, http.max_request_bytes of request line and headers,
// http.request_timeout_ms to send them; no keep-alive.
//
// Thread-safe: handlers run on CivetWeb's worker threads and must be thread-safe themselves.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "exporters/web_config.h"

class CivetServer;

namespace lagwatch {

class Metrics;
struct HttpAuthMetrics;

struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Extra response headers (names and values made by lagwatch, never by the client).
  std::vector<std::pair<std::string, std::string>> headers = {};
};

// What a prefix route sees of a GET request.
struct HttpRequest {
  std::string path;   // decoded, e.g. "/check/10.0.0.12:3306"
  std::string query;  // after "?", as sent; "" without one
  std::vector<std::pair<std::string, std::string>> headers;
  // The first value of header `name` (ASCII case-insensitive), or nullptr.
  const std::string* Header(std::string_view name) const;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;
  // A route for a path and everything under it ("/check" serves "/check" and "/check/...").
  using RequestHandler = std::function<HttpResponse(const HttpRequest&)>;

  // Serves GET /metrics from `metrics` (Metrics::TextExposition; `metrics` must outlive the
  // server) plus `routes` (exact path -> GET handler); other methods get 405, other paths 404
  // (after authentication), and `prefix_routes` (prefix -> GET handler of that path and the
  // paths under it), behind authentication like the others. Counts refusals in
  // metrics->http_auth.
  // Returns InvalidArgument naming http.listen if the address cannot be bound, or
  // http.web_config_file if TLS cannot start (certificate or key rejected, OpenSSL missing).
  static Result<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, const HttpConfig& http, const Metrics* metrics,
      std::map<std::string, Handler> routes,
      std::map<std::string, RequestHandler> prefix_routes = {});
  ~HttpServer();

  // The port actually bound (useful with port 0).
  int port() const;

 private:
  HttpServer() = default;
  class Route;

  // Starts CivetWeb with `options`, then closes `pem_fd` (the staged TLS key and certificate,
  // opened as `pem_path`; -1 and "" without TLS). The error Start returns if it cannot.
  Status Listen(const std::vector<std::string>& options, int pem_fd, const std::string& pem_path,
                const WebConfig& web, const std::string& listen);
  // Serves `routes`, /metrics from `metrics` and /healthz (unless `routes` has one), and a
  // catch-all 404, each behind auth_ unless it is an open path.
  void AddRoutes(std::map<std::string, Handler> routes,
                 std::map<std::string, RequestHandler> prefix_routes, const Metrics* metrics);

  // Declared before server_: CivetWeb's workers use them until server_ is closed.
  std::unique_ptr<BasicAuth> auth_;  // null: no authentication
  const HttpAuthMetrics* auth_failures_ = nullptr;
  std::vector<std::unique_ptr<Route>> routes_;
  std::unique_ptr<CivetServer> server_;
  uint32_t wake_address_ = 0;  // network byte order
};

}  // namespace lagwatch
