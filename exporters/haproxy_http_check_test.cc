#include "exporters/haproxy_http_check.h"

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

HttpRequest Get(std::string path, std::string query = "",
                std::vector<std::pair<std::string, std::string>> headers = {}) {
  return HttpRequest{std::move(path), std::move(query), std::move(headers)};
}

TEST_CASE("an HTTP check names its server in the path or in send-state's header") {
  auto t = ParseHttpCheck(Get("/check/10.0.0.12:3306"));
  REQUIRE(t.ok());
  CHECK(t->server.id == "10.0.0.12:3306");
  CHECK(t->server.entry == HaproxyEntry::kReplica);
  CHECK_FALSE(t->max_delay_ms);
  t = ParseHttpCheck(Get("/check/10.0.0.12:3306_primary", "max_delay_ms=500"));
  REQUIRE(t.ok());
  CHECK(t->server.entry == HaproxyEntry::kPrimary);
  CHECK(t->max_delay_ms == 500);
  // HAProxy's `http-check send-state` header, as HAProxy 2.6.12 sent it.
  t = ParseHttpCheck(Get("/check", "",
                         {{"x-haproxy-server-state",
                           "UP; address=127.0.0.1; port=3307; "
                           "name=reads/127.0.0.1:3307; node=vm; weight=100/100; "
                           "scur=0/0; qcur=0"}}));
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  CHECK(t->server.id == "127.0.0.1:3307");
  for (const HttpRequest& bad :
       {Get("/check"), Get("/check/"), Get("/checkx/a:1"), Get("/check/a:1/b"), Get("/check/a b"),
        Get("/check/a:1", "max_delay_ms=-5"), Get("/check/a:1", "max_delay_ms=1e3"),
        Get("/check/a:1", "other=1"),
        Get("/check", "", {{"X-Haproxy-Server-State", "UP; port=3307"}}),
        Get("/check", "", {{"X-Haproxy-Server-State", "UP; name=nobackend"}})}) {
    CAPTURE(bad.path);
    CAPTURE(bad.query);
    CHECK_FALSE(ParseHttpCheck(bad).ok());
  }
}

HaproxyAnswerFn Answers() {
  return [](const CheckTarget& t) -> std::optional<HaproxyAnswer> {
    if (t.server.id != "a:1") return std::nullopt;
    HaproxyAnswer a;
    const bool strict = t.max_delay_ms && *t.max_delay_ms < 12;
    a.verdict = strict ? HaproxyAnswer::Verdict::kDown : HaproxyAnswer::Verdict::kUp;
    a.reason = strict ? "lagging" : "usable";
    a.weight = 50;
    a.delay_ms = 12;
    a.max_delay_ms = t.max_delay_ms.value_or(200);
    a.state = "ok";
    return a;
  };
}

TEST_CASE("an HTTP check is 200 or 503 with the verdict in the body and the headers") {
  Metrics metrics("test");
  HttpResponse r = HaproxyHttpCheck(Get("/check/a:1"), Answers(), &metrics.haproxy);
  CHECK(r.code == 200);
  CHECK(r.body == "usable delay_ms=12 max_delay_ms=200 state=ok\n");
  CHECK(r.headers == std::vector<std::pair<std::string, std::string>>{
                         {"X-Lagwatch-Verdict", "usable"}, {"X-Lagwatch-Delay-Ms", "12"}});
  r = HaproxyHttpCheck(Get("/check/a:1", "max_delay_ms=10"), Answers(), &metrics.haproxy);
  CHECK(r.code == 503);
  CHECK(r.body == "unusable lagging delay_ms=12 max_delay_ms=10 state=ok\n");
  CHECK(r.headers.front().second == "lagging");
  r = HaproxyHttpCheck(Get("/check/b:2"), Answers(), &metrics.haproxy);
  CHECK(r.code == 404);
  r = HaproxyHttpCheck(Get("/check/a;b"), Answers(), &metrics.haproxy);
  CHECK(r.code == 400);
  CHECK(metrics.haproxy.Check("http", "up").Value() == 1);
  CHECK(metrics.haproxy.Check("http", "down").Value() == 1);
  CHECK(metrics.haproxy.Check("http", "unknown").Value() == 1);
  CHECK(metrics.haproxy.Check("http", "malformed").Value() == 1);
}

// GET `path` on 127.0.0.1:port with `headers`: the whole response.
std::string Exchange(int port, const std::string& path, const std::string& headers = "") {
  const int fd = test::ConnectLoopback(port);
  REQUIRE(fd >= 0);
  const std::string request = "GET " + path + " HTTP/1.0\r\n" + headers + "\r\n";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  return test::ReadAll(fd);
}

TEST_CASE("the check route serves its path and those under it, behind basic auth like the API") {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt) != nullptr);
  crypt_data data{};
  HttpConfig http;
  http.web.basic_auth_users["haproxy"] = crypt_rn("secret", salt, &data, sizeof data);
  Metrics metrics("test");
  HaproxyAnswerFn answers = Answers();
  auto s = HttpServer::Start("127.0.0.1:0", http, &metrics, {},
                             {{std::string(kHaproxyCheckPath), [&](const HttpRequest& request) {
                                 return HaproxyHttpCheck(request, answers, &metrics.haproxy);
                               }}});
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  const int port = (*s)->port();
  // "haproxy:secret" in base64.
  const std::string auth = "Authorization: Basic aGFwcm94eTpzZWNyZXQ=\r\n";
  CHECK(Exchange(port, "/check/a:1").rfind("HTTP/1.1 401", 0) == 0);
  CHECK(metrics.haproxy.Check("http", "up").Value() == 0);
  std::string resp = Exchange(port, "/check/a:1", auth);
  CHECK(resp.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(resp.find("\r\nX-Lagwatch-Delay-Ms: 12\r\n") != std::string::npos);
  CHECK(resp.ends_with("\r\n\r\nusable delay_ms=12 max_delay_ms=200 state=ok\n"));
  resp = Exchange(port, "/check/a:1?max_delay_ms=5", auth);
  CHECK(resp.rfind("HTTP/1.1 503", 0) == 0);
  CHECK(resp.find("X-Lagwatch-Verdict: lagging") != std::string::npos);
  resp = Exchange(port, "/check", auth + "X-Haproxy-Server-State: UP; name=reads/a:1; node=x\r\n");
  CHECK(resp.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(Exchange(port, "/checkout", auth).rfind("HTTP/1.1 404", 0) == 0);
  CHECK(Exchange(port, "/check/b:2", auth).rfind("HTTP/1.1 404", 0) == 0);
}

}  // namespace
}  // namespace lagwatch
