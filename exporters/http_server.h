// The agent's HTTP listener (http.listen): /metrics in the Prometheus text format, /healthz, and
// any JSON routes the agent registers. One CivetWeb server per process.
// Thread-safe: handlers run on CivetWeb's worker threads and must be thread-safe themselves.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/status.h"

class CivetServer;

namespace lagwatch {

class Metrics;

struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;

  // Serves /metrics from `metrics` (Metrics::TextExposition; `metrics` must outlive the server)
  // plus `routes` (path -> GET handler). Returns InvalidArgument if the address cannot be bound.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& listen,
                                                   const Metrics* metrics,
                                                   std::map<std::string, Handler> routes);
  ~HttpServer();

  // The port actually bound (useful with port 0).
  int port() const;

 private:
  HttpServer() = default;
  class Route;
  std::unique_ptr<CivetServer> server_;
  std::vector<std::unique_ptr<Route>> routes_;
  uint32_t wake_address_ = 0;  // network byte order
};

}  // namespace lagwatch
