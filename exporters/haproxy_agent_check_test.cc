#include "exporters/haproxy_agent_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <doctest/doctest.h>

#include "base/test_socket.h"
#include "exporters/metrics.h"

namespace lagwatch {
namespace {

using namespace std::chrono_literals;

TEST_CASE("an agent-send line names a server and may carry a pool's limit") {
  auto t = ParseAgentSend("10.0.0.12:3306");
  REQUIRE(t);
  CHECK(t->server.id == "10.0.0.12:3306");
  CHECK(t->server.entry == HaproxyEntry::kReplica);
  CHECK_FALSE(t->max_delay_ms);
  t = ParseAgentSend(" 10.0.0.12:3306_primary \r");
  REQUIRE(t);
  CHECK(t->server.entry == HaproxyEntry::kPrimary);
  t = ParseAgentSend("10.0.0.12:3306 max_delay_ms=500");
  REQUIRE(t);
  CHECK(t->max_delay_ms == 500);
  for (const char* bad : {"", "a b", "a max_delay_ms=", "a max_delay_ms=-1", "a max_delay_ms=x",
                          "a max_delay_ms=86400001", "a~b", "a\x01", "GET / HTTP/1.0"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseAgentSend(bad));
  }
}

int Connect(int port) {
  const int fd = test::ConnectLoopback(port, 5);
  REQUIRE(fd >= 0);
  return fd;
}

using test::ReadAll;

std::string Ask(int port, const std::string& request) {
  const int fd = Connect(port);
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  return ReadAll(fd);
}

struct Fixture {
  Metrics metrics{"test"};
  std::unique_ptr<AgentCheckServer> server;
  std::atomic<int> asked{0};

  explicit Fixture(AgentCheckOptions o = {"127.0.0.1:0", 64, 1000}) {
    auto s = AgentCheckServer::Start(
        o,
        [this](const CheckTarget& t) -> std::optional<HaproxyAnswer> {
          ++asked;
          if (t.server.id != "a:1") return std::nullopt;
          HaproxyAnswer a;
          a.verdict = t.max_delay_ms ? HaproxyAnswer::Verdict::kDown : HaproxyAnswer::Verdict::kUp;
          a.reason = "lagging";
          a.weight = 30;
          a.delay_ms = 250;
          a.max_delay_ms = t.max_delay_ms;
          return a;
        },
        &metrics.haproxy);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    server = std::move(s).value();
  }
  int port() const { return server->port(); }
  double Count(const char* answer) { return metrics.haproxy.Check("agent", answer).Value(); }
};

TEST_CASE("the agent-check port answers one line from memory and closes") {
  Fixture f;
  CHECK(Ask(f.port(), "a:1\n") == "ready up 30%\n");
  CHECK(Ask(f.port(), "a:1 max_delay_ms=100\n") ==
        "ready down #lagging delay_ms=250 max_delay_ms=100\n");
  CHECK(Ask(f.port(), "b:2\n") == "maint #unknown\n");
  CHECK(f.Count("up") == 1);
  CHECK(f.Count("down") == 1);
  CHECK(f.Count("unknown") == 1);
  // A line that arrives in pieces is answered once whole.
  const int fd = Connect(f.port());
  send(fd, "a:", 2, MSG_NOSIGNAL);
  std::this_thread::sleep_for(20ms);
  send(fd, "1\n", 2, MSG_NOSIGNAL);
  CHECK(ReadAll(fd) == "ready up 30%\n");
}

TEST_CASE("hostile input to the agent-check port is counted and closed without an answer") {
  Fixture f({"127.0.0.1:0", 64, 200});
  CHECK(Ask(f.port(), "a b c\n").empty());
  CHECK(Ask(f.port(), std::string("\x01\x02\xff\n", 4)).empty());
  CHECK(Ask(f.port(), std::string(10000, 'a')).empty());
  CHECK(Ask(f.port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n").empty());
  CHECK(f.Count("malformed") == 4);
  CHECK(f.asked == 0);
  // A client that never finishes its line is closed at the deadline.
  const auto t0 = std::chrono::steady_clock::now();
  const int fd = Connect(f.port());
  send(fd, "a:1", 3, MSG_NOSIGNAL);
  CHECK(ReadAll(fd).empty());
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took >= 190ms);
  CHECK(took < 2000ms);
  CHECK(f.Count("timeout") == 1);
  // A connection closed without a word (a port scan, a TCP check) is nothing.
  close(Connect(f.port()));
  // ... and the port still answers.
  CHECK(Ask(f.port(), "a:1\n") == "ready up 30%\n");
}

TEST_CASE("the agent-check port holds a bounded number of connections") {
  Fixture f({"127.0.0.1:0", 2, 1000});
  const int idle1 = Connect(f.port());
  const int idle2 = Connect(f.port());
  std::this_thread::sleep_for(50ms);
  CHECK(Ask(f.port(), "a:1\n").empty());  // a third: closed at once
  CHECK(f.Count("busy") == 1);
  close(idle1);
  close(idle2);
  std::this_thread::sleep_for(50ms);
  CHECK(Ask(f.port(), "a:1\n") == "ready up 30%\n");
}

TEST_CASE("the agent-check port answers hundreds of checks a second") {
  Fixture f;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 500; ++i) REQUIRE(Ask(f.port(), "a:1\n") == "ready up 30%\n");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("500 agent checks, one connection each, in " << seconds * 1000 << " ms");
  CHECK(seconds < 2.5);
}

TEST_CASE("the agent-check port refuses an address it cannot listen on, naming the key") {
  Metrics metrics("test");
  auto answer = [](const CheckTarget&) { return std::optional<HaproxyAnswer>(); };
  auto first = AgentCheckServer::Start({"127.0.0.1:0", 64, 1000}, answer, &metrics.haproxy);
  REQUIRE(first.ok());
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  for (const std::string& listen :
       {std::string("nonsense"), std::string("192.0.2.1:9878"), taken}) {
    CAPTURE(listen);
    auto s = AgentCheckServer::Start({listen, 64, 1000}, answer, &metrics.haproxy);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().rfind("haproxy.agent_check.listen:", 0) == 0);
  }
}

}  // namespace
}  // namespace lagwatch
