#include "exporters/http_server.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "base/test_socket.h"
#include "exporters/metrics.h"

namespace lagwatch {
namespace {

// Sends `request` to 127.0.0.1:port and returns everything the server says before it closes.
std::string SendRaw(int port, const std::string& request) {
  const int fd = test::ConnectLoopback(port);
  REQUIRE(fd >= 0);
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  return test::ReadAll(fd);
}

int Code(const std::string& resp) {
  return resp.rfind("HTTP/1.", 0) == 0 && resp.size() > 12 ? std::atoi(resp.c_str() + 9) : 0;
}

int Get(int port, const std::string& path, const std::string& headers = "") {
  return Code(SendRaw(port, "GET " + path + " HTTP/1.0\r\n" + headers + "\r\n"));
}

// "alice:secret" in base64.
const std::string kAliceSecret = "Authorization: Basic YWxpY2U6c2VjcmV0\r\n";

HttpConfig WithAlice() {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt) != nullptr);
  crypt_data data{};
  HttpConfig http;
  http.web.basic_auth_users["alice"] = crypt_rn("secret", salt, &data, sizeof data);
  return http;
}

std::map<std::string, HttpServer::Handler> Routes() {
  return {{"/readyz",
           [] {
             return HttpResponse{200, "text/plain", "ready\n"};
           }},
          {"/api/v1/x", [] {
             return HttpResponse{200, "application/json", "{}\n"};
           }}};
}

TEST_CASE("without a web config every route is open, on its exact path and for GET only") {
  Metrics metrics("test");
  auto s = HttpServer::Start("127.0.0.1:0", HttpConfig{}, &metrics, Routes());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const int port = (*s)->port();
  CHECK(Get(port, "/metrics") == 200);
  CHECK(Get(port, "/healthz") == 200);
  CHECK(Get(port, "/readyz") == 200);
  CHECK(Get(port, "/api/v1/x") == 200);
  CHECK(Get(port, "/metricsfoo") == 404);
  CHECK(Get(port, "/api/v1/x/y") == 404);
  CHECK(Get(port, "/") == 404);
  CHECK(Code(SendRaw(port, "POST /metrics HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi")) == 405);
  CHECK(Code(SendRaw(port, "DELETE /api/v1/x HTTP/1.0\r\n\r\n")) == 405);
}

TEST_CASE("with users, every path but the probes answers 401 until the right password comes") {
  Metrics metrics("test");
  auto s = HttpServer::Start("127.0.0.1:0", WithAlice(), &metrics, Routes());
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const int port = (*s)->port();
  for (const std::string path : {"/metrics", "/api/v1/x", "/nope"}) {
    CAPTURE(path);
    const std::string resp = SendRaw(port, "GET " + path + " HTTP/1.0\r\n\r\n");
    CHECK(Code(resp) == 401);
    CHECK(resp.find("\r\nWWW-Authenticate: Basic realm=\"lagwatch\"") != std::string::npos);
    CHECK(resp.find("\"replicas\"") == std::string::npos);
    CHECK(Get(port, path, "Authorization: Basic YWxpY2U6d3Jvbmc=\r\n") == 401);  // alice:wrong
    CHECK(Get(port, path, "Authorization: Basic\r\n") == 401);
    CHECK(Get(port, path, kAliceSecret) == (path == "/nope" ? 404 : 200));
  }
  CHECK(Code(SendRaw(port, "POST /metrics HTTP/1.0\r\n\r\n")) == 401);
  CHECK(Code(SendRaw(port, "POST /metrics HTTP/1.0\r\n" + kAliceSecret + "\r\n")) == 405);
  CHECK(Get(port, "/healthz") == 200);
  CHECK(Get(port, "/readyz") == 200);

  const std::string text = metrics.TextExposition();
  CHECK(text.find("lagwatch_http_auth_failures_total{reason=\"missing\"} 4") != std::string::npos);
  CHECK(text.find("lagwatch_http_auth_failures_total{reason=\"malformed\"} 3") !=
        std::string::npos);
  CHECK(text.find("lagwatch_http_auth_failures_total{reason=\"bad_credentials\"} 3") !=
        std::string::npos);
}

TEST_CASE("a request line and headers over max_request_bytes are refused, then serving goes on") {
  Metrics metrics("test");
  HttpConfig http;
  http.max_request_bytes = 1024;
  auto s = HttpServer::Start("127.0.0.1:0", http, &metrics, Routes());
  REQUIRE(s.ok());
  const int port = (*s)->port();
  CHECK(Get(port, "/healthz", "X-Pad: " + std::string(900, 'a') + "\r\n") == 200);
  const int big = Get(port, "/healthz", "X-Pad: " + std::string(2000, 'a') + "\r\n");
  CHECK((big == 0 || (big >= 400 && big < 500)));
  CHECK(Get(port, "/healthz") == 200);
}

TEST_CASE("a port already bound is an error naming http.listen") {
  Metrics metrics("test");
  auto first = HttpServer::Start("127.0.0.1:0", HttpConfig{}, &metrics, {});
  REQUIRE(first.ok());
  const std::string listen = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = HttpServer::Start(listen, HttpConfig{}, &metrics, {});
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().message().rfind("http.listen: cannot listen on " + listen, 0) == 0);
  CHECK(second.status().message().find("in use") != std::string::npos);
}

}  // namespace
}  // namespace lagwatch
