#include "base/http_client.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

// A loopback HTTP server of its own for each test, on a port the kernel picks: each connection
// gets respond(request), then is closed; when respond gives nullopt, the connection is held open
// and never answered. Stops and joins its thread on destruction.
class TinyServer {
 public:
  using Respond = std::function<std::optional<std::string>(const std::string& request)>;

  explicit TinyServer(Respond respond) : respond_(std::move(respond)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listen_fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(listen_fd_, 8) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = std::to_string(ntohs(addr.sin_port));
    thread_ = std::jthread([this](std::stop_token stop) { Serve(stop); });
  }
  ~TinyServer() {
    thread_.request_stop();
    thread_.join();
    close(listen_fd_);
  }
  TinyServer(const TinyServer&) = delete;
  TinyServer& operator=(const TinyServer&) = delete;

  HttpTarget target() const {
    HttpTarget t;
    t.host = "127.0.0.1";
    t.port = port_;
    return t;
  }
  std::string last_request() const {
    std::lock_guard lock(mu_);
    return last_request_;
  }

 private:
  // Whether fd became readable within 20 ms.
  static bool Readable(int fd) {
    pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 20) > 0;
  }

  void Serve(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      if (!Readable(listen_fd_)) continue;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::string request;
      char buf[4096];
      while (!stop.stop_requested() && request.find("\r\n\r\n") == std::string::npos) {
        if (!Readable(fd)) continue;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mu_);
        last_request_ = request;
      }
      if (std::optional<std::string> answer = respond_(request)) {
        for (size_t done = 0; done < answer->size();) {
          const ssize_t n = send(fd, answer->data() + done, answer->size() - done, MSG_NOSIGNAL);
          if (n <= 0) break;
          done += static_cast<size_t>(n);
        }
      } else {
        while (!stop.stop_requested()) Readable(fd);
      }
      close(fd);
    }
  }

  Respond respond_;
  int listen_fd_ = -1;
  std::string port_;
  mutable std::mutex mu_;
  std::string last_request_;
  std::jthread thread_;
};

HttpRequestOptions Get(const std::string& path, Millis timeout = Millis(5000)) {
  HttpRequestOptions o;
  o.path = path;
  o.timeout = timeout;
  return o;
}

// GET `options` from a server that answers any request with `answer`; *request gets what the
// server received.
HttpReply GetAnswered(const std::string& answer, const HttpRequestOptions& options = Get("/"),
                      std::string* request = nullptr) {
  TinyServer server([&](const std::string&) -> std::optional<std::string> { return answer; });
  HttpReply reply = HttpGet(server.target(), options);
  if (request) *request = server.last_request();
  return reply;
}

TEST_CASE("http client: a 200 gives its code and the whole body, after the request it sent") {
  const std::string body(100'000, 'x');  // longer than one read
  HttpRequestOptions options = Get("/metrics?x=1");
  options.authorization = "Basic Ym9iOmh1bnRlcjI=";
  std::string request;
  HttpReply reply =
      GetAnswered("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body, options, &request);
  CHECK(reply.code == 200);
  CHECK(reply.error == "");
  CHECK(reply.body == body);
  CHECK(request.rfind("GET /metrics?x=1 HTTP/1.0\r\n", 0) == 0);
  CHECK(request.find("\r\nHost: 127.0.0.1\r\n") != std::string::npos);
  CHECK(request.find("\r\nConnection: close\r\n") != std::string::npos);
  CHECK(request.find("\r\nAuthorization: Basic Ym9iOmh1bnRlcjI=\r\n") != std::string::npos);
}

TEST_CASE("http client: any status code is an answer; no Authorization header without one") {
  std::string request;
  HttpReply reply = GetAnswered("HTTP/1.0 401 Unauthorized\r\n\r\n", Get("/"), &request);
  CHECK(reply.code == 401);
  CHECK(reply.body == "");
  CHECK(reply.error == "");
  CHECK(request.find("Authorization") == std::string::npos);
}

TEST_CASE("http client: an answer that is not HTTP, or none, gives code 0 and says so") {
  HttpReply not_http = GetAnswered("SSH-2.0-OpenSSH_9.2\r\n\r\nmore");
  CHECK(not_http.code == 0);
  CHECK(not_http.body == "");
  CHECK(not_http.error == "not an HTTP answer");
  HttpReply none = GetAnswered("");  // closed without a word
  CHECK(none.code == 0);
  CHECK(none.error == "no answer");
}

TEST_CASE("http client: a server that accepts and never answers fails within the deadline") {
  TinyServer server([](const std::string&) -> std::optional<std::string> { return {}; });
  const auto start = std::chrono::steady_clock::now();
  HttpReply reply = HttpGet(server.target(), Get("/", Millis(300)));
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(reply.code == 0);
  CHECK(reply.error == "cannot read the answer: timed out");
  CHECK(took >= Millis(250));
  CHECK(took < std::chrono::seconds(2));
}

TEST_CASE("http client: a refused connection gives code 0 and names the address") {
  // Bound but not listening: the kernel refuses connections to it, and no one else can take it.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  HttpTarget target;
  target.host = "127.0.0.1";
  target.port = std::to_string(ntohs(addr.sin_port));
  HttpReply reply = HttpGet(target, Get("/"));
  close(fd);
  CHECK(reply.code == 0);
  CHECK(reply.body == "");
  CHECK(reply.error == "cannot connect to 127.0.0.1:" + target.port + ": Connection refused");
}

}  // namespace
}  // namespace lagwatch
