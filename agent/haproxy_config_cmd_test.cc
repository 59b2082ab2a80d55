#include "agent/haproxy_config_cmd.h"

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

Config Cluster() {
  auto c = ParseConfig(R"({
    "primary": { "host": "10.0.0.11", "port": 3306, "defaults_file": "/etc/lagwatch/p.cnf" },
    "replica_defaults_file": "/etc/lagwatch/r.cnf",
    "replicas": [ { "host": "10.0.0.12", "port": 3306 }, { "host": "db-3.example", "port": 3307 } ],
    "http": { "listen": "0.0.0.0:9877" },
    "haproxy": { "backend": "reads",
                 "instances": [ { "name": "lb1", "socket": "/run/haproxy/admin.sock" },
                                { "name": "lb2", "socket": "10.0.0.5:9999" } ],
                 "agent_check": { "listen": "127.0.0.1:9878" } }
  })");
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  return *c;
}

std::string Generate(const Config& c, HaproxyMode mode, HaproxyConfigOptions o = {}) {
  o.mode = mode;
  auto text = HaproxyBackendConfig(c, o);
  REQUIRE_MESSAGE(text.ok(), text.status().ToString());
  return *text;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST_CASE("push: every server twice, in maintenance but the configured primary's backup") {
  const std::string t = Generate(Cluster(), HaproxyMode::kPush);
  CHECK(Has(t, "backend reads"));
  CHECK(Has(t, "    server 10.0.0.11:3306 10.0.0.11:3306 weight 100 disabled"));
  CHECK(Has(t, "    server 10.0.0.12:3306 10.0.0.12:3306 weight 100 disabled"));
  CHECK(Has(t, "    server db-3.example:3307 db-3.example:3307 weight 100 disabled"));
  CHECK(Has(t, "    server 10.0.0.11:3306_primary 10.0.0.11:3306 backup"));
  CHECK(Has(t, "    server 10.0.0.12:3306_primary 10.0.0.12:3306 backup disabled"));
  CHECK(Has(t, "    server db-3.example:3307_primary db-3.example:3307 backup disabled"));
  // The sockets the instances need, as comments.
  CHECK(t.find("#   stats socket /run/haproxy/admin.sock mode 660 level admin") !=
        std::string::npos);
  CHECK(t.find("#   stats socket ipv4@10.0.0.5:9999 level admin") != std::string::npos);
  CHECK(t.find("agent-check") == std::string::npos);
  CHECK(t.find("option httpchk") == std::string::npos);
}

TEST_CASE("agent: each server sends its own name to the agent-check port") {
  HaproxyConfigOptions o;
  o.max_delay_ms = 500;
  const std::string t = Generate(Cluster(), HaproxyMode::kAgent, o);
  CHECK(Has(t,
            "    default-server agent-check agent-addr 127.0.0.1 agent-port 9878 agent-inter "
            "100ms on-marked-down shutdown-sessions"));
  CHECK(Has(t,
            "    server 10.0.0.12:3306 10.0.0.12:3306 weight 100 disabled agent-send "
            "\"10.0.0.12:3306 max_delay_ms=500\\n\""));
  CHECK(Has(t,
            "    server 10.0.0.11:3306_primary 10.0.0.11:3306 backup agent-send "
            "\"10.0.0.11:3306_primary max_delay_ms=500\\n\""));
  Config no_port = Cluster();
  no_port.haproxy.agent_check.listen.clear();
  HaproxyConfigOptions agent;
  agent.mode = HaproxyMode::kAgent;
  auto r = HaproxyBackendConfig(no_port, agent);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("haproxy.agent_check.listen") != std::string::npos);
}

TEST_CASE("http: a check of /check/<name> on the HTTP listener, servers not disabled") {
  HaproxyConfigOptions o;
  o.check_address = "10.0.0.9";
  o.backend = "other_pool";
  const std::string t = Generate(Cluster(), HaproxyMode::kHttp, o);
  CHECK(Has(t, "backend other_pool"));
  CHECK(Has(t, "    option httpchk"));
  CHECK(Has(t,
            "    http-check send meth GET uri-lf /check/%[srv_name] ver HTTP/1.1 hdr Host "
            "lagwatch"));
  CHECK(Has(t, "    http-check expect status 200"));
  CHECK(Has(t,
            "    default-server check addr 10.0.0.9 port 9877 inter 100ms fall 1 rise 1 "
            "on-marked-down shutdown-sessions"));
  CHECK(Has(t, "    server 10.0.0.12:3306 10.0.0.12:3306 weight 100"));
  CHECK(Has(t, "    server 10.0.0.12:3306_primary 10.0.0.12:3306 backup"));
  CHECK(t.find("disabled") == std::string::npos);
  // A wildcard listener is reached on loopback unless told otherwise.
  CHECK(Generate(Cluster(), HaproxyMode::kHttp).find("check addr 127.0.0.1 port 9877") !=
        std::string::npos);
  o.max_delay_ms = 1000;
  CHECK(Generate(Cluster(), HaproxyMode::kHttp, o)
            .find("uri-lf /check/%[srv_name]?max_delay_ms=1000 ") != std::string::npos);
}

TEST_CASE("http with basic auth and TLS: the check carries both") {
  Config c = Cluster();
  c.http.web.basic_auth_users["haproxy"] = "$2y$10$x";
  c.http.web.cert_file = "/etc/lagwatch/web.crt";
  std::string t = Generate(c, HaproxyMode::kHttp);
  CHECK(t.find(" hdr Authorization \"Basic CHANGE-ME\"\n") != std::string::npos);
  CHECK(t.find(" check-ssl verify required ca-file /etc/lagwatch/web.crt ") != std::string::npos);
  HaproxyConfigOptions o;
  o.ca_file = "/etc/haproxy/lagwatch-ca.pem";
  o.authorization = "Basic aGFwcm94eTpzZWNyZXQ=";
  t = Generate(c, HaproxyMode::kHttp, o);
  CHECK(t.find(" hdr Authorization \"Basic aGFwcm94eTpzZWNyZXQ=\"\n") != std::string::npos);
  CHECK(t.find(" check-ssl verify required ca-file /etc/haproxy/lagwatch-ca.pem ") !=
        std::string::npos);
}

TEST_CASE("IPv6 servers get a bracketed address and keep their id as the name") {
  auto c = ParseConfig(R"({
    "primary": { "host": "::1", "port": 3306, "defaults_file": "/p.cnf" },
    "replica_defaults_file": "/r.cnf",
    "replicas": [ { "host": "::1", "port": 3307 } ] })");
  REQUIRE(c.ok());
  const std::string t = Generate(*c, HaproxyMode::kPush);
  CHECK(Has(t, "    server ::1:3307 [::1]:3307 weight 100 disabled"));
  CHECK(Has(t, "    server ::1:3306_primary [::1]:3306 backup"));
}

TEST_CASE("a backend name HAProxy would refuse is refused") {
  HaproxyConfigOptions o;
  o.backend = "reads; evil";
  CHECK_FALSE(HaproxyBackendConfig(Cluster(), o).ok());
  o.backend = "ok";
  o.check_address = "a b";
  o.mode = HaproxyMode::kHttp;
  CHECK_FALSE(HaproxyBackendConfig(Cluster(), o).ok());
}

TEST_CASE("the command line: usage errors exit 2") {
  CHECK(RunHaproxyConfigCommand({}) == 2);
  CHECK(RunHaproxyConfigCommand({"--config"}) == 2);
  CHECK(RunHaproxyConfigCommand({"--config", "/nonexistent.json"}) == 2);
  CHECK(RunHaproxyConfigCommand({"--config", "x", "--mode", "pull"}) == 2);
  CHECK(RunHaproxyConfigCommand({"--config", "x", "--max-delay-ms", "-1"}) == 2);
  CHECK(RunHaproxyConfigCommand({"--config", "x", "--max-delay-ms", "100"}) == 2);  // push
  CHECK(RunHaproxyConfigCommand({"--config", "x", "--user", "haproxy"}) == 2);
  CHECK(RunHaproxyConfigCommand({"--config", "x", "--user", "a:b", "--password-file", "f"}) == 2);
}

}  // namespace
}  // namespace lagwatch
