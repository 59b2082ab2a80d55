#include "exporters/http_server.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <CivetServer.h>

#include "exporters/metrics.h"

namespace lagwatch {

class HttpServer::Route : public CivetHandler {
 public:
  explicit Route(Handler h) : handler_(std::move(h)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    HttpResponse resp;
    try {
      resp = handler_();
    } catch (const std::exception& e) {
      resp = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
    }
    mg_printf(conn,
              "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
              "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
              resp.code, mg_get_response_code_text(conn, resp.code), resp.content_type.c_str(),
              resp.body.size());
    mg_write(conn, resp.body.data(), resp.body.size());
    const bool large = resp.body.size() >= kTrimAfterBytes;
    resp = {};
    // A large fleet's scrape builds tens of MB of temporaries; hand the pages back rather than
    // keep them in this worker's malloc arena until the next scrape.
    if (large) malloc_trim(0);
    return true;
  }

  static constexpr size_t kTrimAfterBytes = 1 << 20;

 private:
  Handler handler_;
};

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen,
                                                      const Metrics* metrics,
                                                      std::map<std::string, Handler> routes) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  routes["/metrics"] = [metrics] {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", metrics->TextExposition()};
  };
  routes.try_emplace("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });

  // CivetWeb takes "addr:port"; IPv6 as "[::1]:port" needs a "+" suffix form we do not offer.
  std::vector<std::string> options = {"listening_ports",    listen, "num_threads",       "4",
                                      "request_timeout_ms", "5000", "enable_keep_alive", "no"};
  // Where to knock at shutdown: the listen address, or loopback for a wildcard.
  std::string host = listen.substr(0, listen.rfind(':'));
  in_addr_t wake = inet_addr(host.c_str());
  s->wake_address_ =
      (wake == INADDR_NONE || wake == htonl(INADDR_ANY)) ? htonl(INADDR_LOOPBACK) : wake;
  try {
    s->server_ = std::make_unique<CivetServer>(options);
  } catch (const CivetException& e) {
    return Status::InvalidArgument("http.listen: cannot listen on " + listen + ": " + e.what());
  }
  for (auto& [path, handler] : routes) {
    s->routes_.push_back(std::make_unique<Route>(std::move(handler)));
    s->server_->addHandler(path, s->routes_.back().get());
  }
  return s;
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
