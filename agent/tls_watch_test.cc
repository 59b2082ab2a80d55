#include "agent/tls_watch.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include <doctest/doctest.h>

#include "base/fake_clock.h"

namespace lagwatch {
namespace {

// A TCP port on 127.0.0.1 that counts the connections made to it and closes each at once (so
// the watch's MySQL connect fails fast, having reached the port).
class CountingPort {
 public:
  CountingPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 10) <= 0) continue;
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        ++accepted_;
        ::close(c);
      }
    });
  }
  ~CountingPort() {
    thread_.request_stop();
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::jthread thread_;
};

MysqlTarget TlsTarget(int port, const std::string& option_file) {
  MysqlTarget t{{"127.0.0.1", port}, option_file, "server 127.0.0.1:" + std::to_string(port), {}};
  t.tls.enabled = true;
  return t;
}

std::optional<double> Expiry(Metrics& metrics, int port) {
  auto& family = metrics.tls_certificate_expiry;
  const std::map<std::string, std::string> labels{{"target", "mysql"},
                                                  {"server", "127.0.0.1:" + std::to_string(port)}};
  if (!family.Has(labels)) return std::nullopt;
  return family.Add(labels).Value();
}

TEST_CASE(
    "tls watch: a server a prober's connection showed is not connected to again that interval") {
  const std::string option_file = "/tmp/lw-tls-watch-test.cnf";
  std::ofstream(option_file) << "[client]\nuser=nobody\n";
  CountingPort shown, unseen;
  FakeClock clock;
  Metrics metrics("test", clock);
  const Millis interval(60'000);
  TlsWatch watch(RedisConfig{}, &metrics, clock, interval);
  watch.SetTargets({TlsTarget(shown.port(), option_file), TlsTarget(unseen.port(), option_file)});

  // A prober's handshake showed one server's certificate: its expiry is published at once.
  watch.Learned("127.0.0.1:" + std::to_string(shown.port()), 2'000'000'000);
  CHECK(Expiry(metrics, shown.port()) == 2e9);
  // A server not watched (not among the targets) is ignored.
  watch.Learned("127.0.0.1:1", 1'000'000'000);
  CHECK_FALSE(Expiry(metrics, 1).has_value());

  // The round connects only to the server no prober showed.
  watch.RunRound({}, Millis(1));
  CHECK(shown.accepted() == 0);
  CHECK(unseen.accepted() == 1);

  // An interval later the prober's connection is old news (its server may have a new
  // certificate since): the round connects to both.
  clock.Advance(interval);
  watch.RunRound({}, Millis(1));
  CHECK(shown.accepted() == 1);
  CHECK(unseen.accepted() == 2);
  // What the prober showed stays published: the watch's own connection learned nothing.
  CHECK(Expiry(metrics, shown.port()) == 2e9);
  std::remove(option_file.c_str());
}

}  // namespace
}  // namespace lagwatch
