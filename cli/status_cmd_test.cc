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
