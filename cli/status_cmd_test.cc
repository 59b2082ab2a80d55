#include "cli/status_cmd.h"

#include <algorithm>

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

TEST_CASE("RenderPrimaryLine: the primary, the topology, and its moves when it moved") {
  CHECK(RenderPrimaryLine(R"({"primary": "127.0.0.1:3306", "state": "up",
      "topology": {"state": "ok", "configured_primary": "127.0.0.1:3306", "changes": 0}})") ==
        "primary 127.0.0.1:3306 (up; topology ok)\n");
  CHECK(RenderPrimaryLine(R"({"primary": "127.0.0.1:3307", "state": "up",
      "topology": {"state": "ok", "configured_primary": "127.0.0.1:3306", "changes": 1}})") ==
        "primary 127.0.0.1:3307 (up; topology ok; moved 1 time since start, configured "
        "127.0.0.1:3306)\n");
  CHECK(RenderPrimaryLine(R"({"primary": "127.0.0.1:3307", "state": "up",
      "topology": {"state": "ambiguous", "configured_primary": "127.0.0.1:3307", "changes": 0}})")
            .find("topology ambiguous: SEVERAL WRITABLE SERVERS") != std::string::npos);
  // Not the API, or fields of the wrong type: no line, never a throw.
  for (const char* bad : {"", "[]", "nonsense", R"({"primary": 3})",
                          R"({"primary": "a", "topology": {"state": "ok"}})",
                          R"({"primary": "a", "topology": {"state": "ok",
                              "configured_primary": "a", "changes": -1}})"}) {
    CHECK(RenderPrimaryLine(bad).empty());
  }
  CHECK(RenderPrimaryLine(R"({"primary": "a\u001b[2J", "topology": {"state": "ok",
      "configured_primary": "a", "changes": 2}})")
            .find('\x1b') == std::string::npos);
}

TEST_CASE("RenderStatusTable: one row per replica, unhealthy counted, last error shown") {
  int unhealthy = -2;
  std::string table = RenderStatusTable(R"({"replicas": [
      {"replica": "127.0.0.1:3307", "tier": "tier1", "state": "stopped", "healthy": 0,
       "delay_lower_ms": 1009, "delay_ms": 1059, "last_error": "SQL thread stopped",
       "windows": {"1m": {"p99_ms": 44}, "5m": {"slar": 0.991}}},
      {"replica": "127.0.0.1:3308", "tier": "tier1", "state": "ok", "healthy": 1,
       "delay_lower_ms": 0, "delay_ms": 8,
       "windows": {"1m": {"p99_ms": 41}, "5m": {"slar": 1}}}]})",
                                        &unhealthy);
  CHECK(unhealthy == 1);
  CHECK(table.find("REPLICA") == 0);
  CHECK(table.find("127.0.0.1:3307           tier1    stopped          NO       1009..1059") !=
        std::string::npos);
  CHECK(table.find("99.10%") != std::string::npos);
  CHECK(table.find("    last error: SQL thread stopped\n") != std::string::npos);
  CHECK(table.find("127.0.0.1:3308           tier1    ok               yes      0..8") !=
        std::string::npos);
  CHECK(table.find("100.00%") != std::string::npos);
}

TEST_CASE("RenderStatusTable: wrong types never throw; only \"healthy\": 1 is healthy") {
  int unhealthy = -2;
  std::string table = RenderStatusTable(R"({"replicas": [
      {"replica": 5, "healthy": "1", "delay_ms": "x", "windows": 3},
      {"healthy": null, "windows": {"1m": 7, "5m": {"slar": "high"}}, "last_error": 1},
      {"healthy": 1.0},
      {"healthy": true},
      {}]})",
                                        &unhealthy);
  CHECK(unhealthy == 5);
  CHECK(table.find("5 ") != std::string::npos);  // a number shown as it is
  for (const std::string bad :
       {"", "null", "[]", "{}", R"({"replicas": {}})", R"({"replicas": [1]})",
        R"({"replicas": [{}, "x"]})", R"({"replicas": [null]})", "{\"replicas\": [", "\xff\xfe"}) {
    CAPTURE(bad);
    unhealthy = -2;
    CHECK(RenderStatusTable(bad, &unhealthy).empty());
    CHECK(unhealthy == -1);
  }
  // Text from the agent cannot send escape sequences to the terminal or add lines.
  unhealthy = -2;
  table = RenderStatusTable(
      R"({"replicas": [{"replica": "r\u001b[2J", "healthy": 0,
                        "last_error": "Error 'x\nFAKE ROW\u001b[31m' on query"}]})",
      &unhealthy);
  CHECK(unhealthy == 1);
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find("r\\x1b[2J") != std::string::npos);
  CHECK(table.find("    last error: Error 'x\\x0aFAKE ROW\\x1b[31m' on query\n") !=
        std::string::npos);
  CHECK(std::count(table.begin(), table.end(), '\n') == 3);  // header, row, last error

  unhealthy = -2;
  CHECK(RenderStatusTable(R"({"replicas": []})", &unhealthy).find("REPLICA") == 0);
  CHECK(unhealthy == 0);
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

TEST_CASE("RenderStatusTable: the SERVER column names the flavor and version, escaped") {
  int unhealthy = 0;
  std::string table = RenderStatusTable(R"({"replicas": [
      {"replica": "127.0.0.1:3307", "healthy": 1,
       "server": {"flavor": "MariaDB", "version": "10.11.19-MariaDB-0+deb12u1-log"}},
      {"replica": "127.0.0.1:3308", "healthy": 1, "server": {"flavor": "MySQL", "version": "8.4.3"}},
      {"replica": "127.0.0.1:3309", "healthy": 1, "server": null},
      {"replica": "127.0.0.1:3310", "healthy": 1, "server": {"flavor": 7, "version": "x"}},
      {"replica": "127.0.0.1:3311", "healthy": 1,
       "server": {"flavor": "MySQL", "version": "8.0\u001b[2J"}}]})",
                                        &unhealthy);
  CHECK(unhealthy == 0);
  CHECK(table.find("SERVER\n") != std::string::npos);
  CHECK(table.find("  MariaDB 10.11.19\n") != std::string::npos);
  CHECK(table.find("  MySQL 8.4.3\n") != std::string::npos);
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find("MySQL 8.0\\x1b[2J") != std::string::npos);
  CHECK(std::count(table.begin(), table.end(), '\n') == 6);
}

}  // namespace
}  // namespace lagwatch

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace lagwatch {
namespace {

TEST_CASE("RenderClusterLine names the cluster of the replicas' answer, escaped, or nothing") {
  CHECK(RenderClusterLine(R"({"cluster": "shop", "replicas": []})") == "cluster shop\n");
  CHECK(RenderClusterLine(R"({"cluster": "a\u001b[2J", "replicas": []})") == "cluster a\\x1b[2J\n");
  for (const char* none : {"", "[]", "nonsense", R"({"replicas": []})", R"({"cluster": 7})"}) {
    CAPTURE(none);
    CHECK(RenderClusterLine(none).empty());
  }
}

// What `lagwatch status ARGS` printed on stdout, and its exit code.
struct Ran {
  int code;
  std::string out;
};

Ran RunStatus(const std::vector<std::string>& args, const ListenerFromConfig& from_config) {
  char path[] = "/tmp/lw-status-test-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::fflush(stdout);
  const int saved = dup(1);
  dup2(fd, 1);
  const int code = RunStatusCommand(args, from_config);
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path);
  return {code, out};
}

// A loopback port that nothing listens on (bound once, then closed).
int ClosedPort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  close(s);
  return ntohs(addr.sin_port);
}

TEST_CASE("status --all: a block per configuration, down ones said, others passed over quietly") {
  const std::filesystem::path dir = "/tmp/lw-status-all-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string config = R"({"primary": {}, "replicas": []})";
  std::ofstream(dir / "shop.json") << config;
  std::ofstream(dir / "lagwatch.json") << "// the single unit's\n" << config;
  std::ofstream(dir / "broken.json") << config;
  std::ofstream(dir / "notes.json") << R"({"owner": "dba"})";  // not a lagwatch config
  std::ofstream(dir / "web.yml") << "basic_auth_users: {}\n";
  std::filesystem::create_directories(dir / "old.json");
  const int port = ClosedPort();
  std::vector<std::pair<std::string, std::optional<std::string>>> asked;
  auto from_config = [&](const std::string& path,
                         const std::optional<std::string>& instance) -> Result<AgentListener> {
    asked.emplace_back(std::filesystem::path(path).filename().string(), instance);
    if (instance == "broken") return Status::InvalidArgument("replicas: must be a non-empty array");
    return AgentListener{"http://127.0.0.1:" + std::to_string(port), "",
                         instance.value_or("127.0.0.1:3306")};
  };

  Ran r = RunStatus({"--all", "--dir", dir.string()}, from_config);
  INFO(r.out);
  CHECK(r.code == 3);
  // In name order; NAME.json as lagwatch@NAME reads it, lagwatch.json as the single unit does.
  using Asked = std::vector<std::pair<std::string, std::optional<std::string>>>;
  CHECK(asked ==
        Asked{{"broken.json", "broken"}, {"lagwatch.json", std::nullopt}, {"shop.json", "shop"}});
  CHECK(r.out.find("== " + (dir / "broken.json").string() +
                   ": NOT LOADED: replicas: must be a non-empty array\n") == 0);
  CHECK(r.out.find("\n== " + (dir / "shop.json").string() + " (http://127.0.0.1:" +
                   std::to_string(port) + ")\ncluster shop: NOT ANSWERING: ") != std::string::npos);
  CHECK(r.out.find("cluster 127.0.0.1:3306: NOT ANSWERING") != std::string::npos);
  CHECK(r.out.find("notes") == std::string::npos);
  CHECK(r.out.find("web.yml") == std::string::npos);
  CHECK(r.out.find("old.json") == std::string::npos);

  // Nothing that is a configuration: a usage error, and nobody asked.
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "notes.json") << "[]";
  asked.clear();
  CHECK(RunStatus({"--all", "--dir", dir.string()}, from_config).code == 2);
  CHECK(asked.empty());
  std::filesystem::remove_all(dir);
  CHECK(RunStatus({"--all", "--dir", dir.string()}, from_config).code == 2);
}

TEST_CASE("status flags: --all excludes --url and --config; --dir needs --all") {
  auto never = [](const std::string&, const std::optional<std::string>&) -> Result<AgentListener> {
    FAIL("not to be asked");
    return Status::InvalidArgument("");
  };
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--all", "--url", "http://127.0.0.1:1"},
                                             {"--config", "/x.json", "--all"},
                                             {"--dir", "/etc/lagwatch"},
                                             {"--all", "--all"},
                                             {"--all", "--dir"},
                                             {"--all", "--user", "alice"}}) {
    CAPTURE(bad.size());
    CHECK(RunStatus(bad, never).code == 2);
  }
}

}  // namespace
}  // namespace lagwatch
