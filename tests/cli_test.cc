// The command line: --version, --help, and --check-config / --config rejecting each kind of bad
// config with exit code 2 and the offending key named.
#include <sys/stat.h>

#include <functional>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using nlohmann::json;

const std::string kDir = "/tmp/lw-cli";

// An option file with `mode` (the secret-file check looks at the mode, not the content).
std::string OptionFile(const std::string& name, mode_t mode) {
  mkdir(kDir.c_str(), 0700);
  std::string path = WriteTempFile(kDir, name, "[client]\nuser=u\npassword=not-a-real-secret\n");
  chmod(path.c_str(), mode);
  return path;
}

json Valid() {
  return json::parse(R"({
    "agent_id": 1,
    "primary": { "host": "127.0.0.1", "port": 3306, "defaults_file": ")" +
                     OptionFile("primary.cnf", 0600) + R"(" },
    "replica_defaults_file": ")" +
                     OptionFile("replica.cnf", 0600) + R"(",
    "replicas": [ { "host": "127.0.0.1", "port": 3307, "tier": "tier1", "weight": 50 },
                  { "host": "127.0.0.1", "port": 3308, "tier": "tier1", "weight": 50 } ],
    "http": { "listen": "127.0.0.1:0" }
  })");
}

RunResult Check(const json& config, const std::string& name) {
  mkdir(kDir.c_str(), 0700);
  std::string path = WriteTempFile(kDir, name, config.dump(2));
  return RunCommand({LagwatchBinary(), "--check-config", path});
}

TEST_CASE("--version and --help exit 0; a bad command line exits 2") {
  auto v = RunCommand({LagwatchBinary(), "--version"});
  CHECK(v.exit_code == 0);
  CHECK(v.output.rfind("lagwatch ", 0) == 0);
  auto h = RunCommand({LagwatchBinary(), "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.output.find("--check-config") != std::string::npos);
  CHECK(RunCommand({LagwatchBinary(), "--bogus"}).exit_code == 2);
  CHECK(RunCommand({LagwatchBinary()}).exit_code == 2);
}

TEST_CASE("--check-config accepts a valid config") {
  auto r = Check(Valid(), "valid.json");
  INFO(r.output);
  CHECK(r.exit_code == 0);
}

TEST_CASE("each kind of bad config exits 2 naming the key") {
  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
    const char* key;
  };
  const std::vector<Case> cases = {
      {"unknown key",
       [](json& j) {
         j["probe"] = {{"intervall_ms", 200}};
       },
       "probe.intervall_ms"},
      {"wrong type", [](json& j) { j["replicas"][0]["port"] = "3307"; }, "replicas[0].port"},
      {"out-of-range interval",
       [](json& j) {
         j["probe"] = {{"interval_ms", 0}};
       },
       "probe.interval_ms"},
      {"bad table identifier",
       [](json& j) {
         j["heartbeat"] = {{"table", "heartbeat.hb;DROP TABLE users"}};
       },
       "heartbeat.table"},
      {"duplicate replica", [](json& j) { j["replicas"][1]["port"] = 3307; }, "replicas[1]"},
      {"missing option file", [](json& j) { j["replica_defaults_file"] = kDir + "/absent.cnf"; },
       "replica_defaults_file"},
      {"option file others can read",
       [](json& j) { j["replica_defaults_file"] = OptionFile("world.cnf", 0644); },
       "replica_defaults_file"},
      {"option file its group can read",
       [](json& j) { j["primary"]["defaults_file"] = OptionFile("group.cnf", 0640); },
       "primary.defaults_file"},
      {"Redis password file others can read",
       [](json& j) {
         j["redis"] = {{"password_file", OptionFile("redis-world.pw", 0604)}};
       },
       "redis.password_file"},
      {"empty Redis password file",
       [](json& j) {
         std::string p = WriteTempFile(kDir, "empty.pw", "");
         chmod(p.c_str(), 0600);
         j["redis"] = {{"password_file", p}};
       },
       "redis.password_file"},
      {"Redis user without a password",
       [](json& j) {
         j["redis"] = {{"username", "lw"}};
       },
       "redis.username"},
      {"unknown insecure_files policy", [](json& j) { j["insecure_files"] = "ignore"; },
       "insecure_files"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    json j = Valid();
    c.mutate(j);
    auto r = Check(j, "bad.json");
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(std::string(c.key) + ":") != std::string::npos);
  }
}

TEST_CASE("insecure_files \"warn\" accepts a group-readable option file and says so") {
  json j = Valid();
  j["insecure_files"] = "warn";
  j["primary"]["defaults_file"] = OptionFile("group-warn.cnf", 0640);
  auto r = Check(j, "warn.json");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("primary.defaults_file:") != std::string::npos);
  CHECK(r.output.find("chmod 600") != std::string::npos);
}

TEST_CASE("--config with a bad config exits 2 before starting anything") {
  mkdir(kDir.c_str(), 0700);
  json j = Valid();
  j["slo"] = {{"delay_ms", "fast"}};
  std::string path = WriteTempFile(kDir, "bad-run.json", j.dump());
  auto r = RunCommand({LagwatchBinary(), "--config", path});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("slo.delay_ms:") != std::string::npos);
  auto missing = RunCommand({LagwatchBinary(), "--config", kDir + "/does-not-exist.json"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("does-not-exist.json") != std::string::npos);
}

}  // namespace
}  // namespace lagwatch::test
