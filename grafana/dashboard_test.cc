// Proof that the Grafana dashboard works: a real Prometheus, loaded with the recording rules in
// alerts/*.rules.yml, scrapes a real lagwatch on a sandbox (MariaDB primary + 2 replicas +
// Redis), routers' feedback is written with redis-cli, and then every query of every panel in
// grafana/dashboards/lagwatch.json (template variables expanded to "all"), every template
// variable query and every recording rule must return at least one finite sample.
//
// LAGWATCH_RULES_DIR (environment) replaces alerts/ as the directory globbed for *.rules.yml;
// for trying a dashboard change against rules that are not committed yet.
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/harness.h"

namespace lagwatch::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kDir = "/tmp/lw-gf";
constexpr int kBasePort = 27706;        // sandbox: 27706..27710 (agent HTTP on 27710)
constexpr int kPrometheusPort = 27711;  // the test's own Prometheus
const std::string kDashboard =
    std::string(LAGWATCH_SOURCE_DIR) + "/grafana/dashboards/lagwatch.json";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Tail(const std::string& text, size_t n = 3000) {
  return text.size() <= n ? text : "…" + text.substr(text.size() - n);
}

json LoadDashboard() {
  std::ifstream in(kDashboard);
  REQUIRE_MESSAGE(in.good(), "cannot read " << kDashboard);
  json d;
  try {
    d = json::parse(in);
  } catch (const json::exception& e) {
    FAIL("bad JSON in " << kDashboard << ": " << e.what());
  }
  return d;
}

// One query of one panel.
struct Target {
  std::string panel;  // title (and refId)
  std::string expr;
};

// Every non-row panel, walking rows' nested `panels` too.
void CollectPanels(const json& panels, std::vector<json>& out) {
  if (!panels.is_array()) return;
  for (const auto& p : panels) {
    if (p.contains("panels")) CollectPanels(p["panels"], out);
    if (p.value("type", "") != "row") out.push_back(p);
  }
}

std::vector<Target> CollectTargets(const json& dashboard) {
  std::vector<json> panels;
  CollectPanels(dashboard["panels"], panels);
  std::vector<Target> out;
  for (const auto& p : panels) {
    for (const auto& t : p.value("targets", json::array())) {
      out.push_back(
          {p.value("title", "?") + " [" + t.value("refId", "?") + "]", t.value("expr", "")});
    }
  }
  return out;
}

// The template variables' queries (label_values(...)), by name.
std::map<std::string, std::string> VariableQueries(const json& dashboard) {
  std::map<std::string, std::string> out;
  for (const auto& v : dashboard["templating"]["list"]) {
    if (v.value("type", "") != "query") continue;
    const json& q = v["query"];
    out[v["name"]] = q.is_object() ? q.value("query", "") : q.get<std::string>();
  }
  return out;
}

// Expands Grafana variables the way the dashboard is used with "All" selected: every dashboard
// variable becomes the regex ".*" (they are only used with =~), interval macros a fixed range.
// Unknown variables are left in place, so Prometheus rejects the query and the test names it.
std::string Substitute(const std::string& expr, const std::set<std::string>& variables) {
  static const std::map<std::string, std::string> kMacros = {
      {"__rate_interval", "1m"}, {"__interval", "15s"}, {"__range", "5m"}};
  std::string out;
  for (size_t i = 0; i < expr.size();) {
    if (expr[i] != '$') {
      out += expr[i++];
      continue;
    }
    size_t start = i + 1;
    size_t end = start;
    bool braced = start < expr.size() && expr[start] == '{';
    std::string name;
    if (braced) {
      end = expr.find('}', start);
      if (end == std::string::npos) {
        out += expr.substr(i);
        break;
      }
      name = expr.substr(start + 1, end - start - 1);
      name = name.substr(0, name.find(':'));  // ${var:format}
      ++end;
    } else {
      while (end < expr.size() &&
             (std::isalnum(static_cast<unsigned char>(expr[end])) || expr[end] == '_')) {
        ++end;
      }
      name = expr.substr(start, end - start);
    }
    if (auto m = kMacros.find(name); m != kMacros.end()) {
      out += m->second;
    } else if (variables.count(name)) {
      out += ".*";
    } else {
      out += expr.substr(i, end - i);
    }
    i = end;
  }
  return out;
}

std::string UrlEncode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Prometheus as a child process; SIGTERM and waitpid on destruction (SIGKILL after 15 s).
class PrometheusServer {
 public:
  PrometheusServer(const std::string& config, const std::string& dir, int port)
      : port_(port), log_path_(dir + "/prometheus.log") {
    const std::vector<std::string> args = {
        "prometheus",
        "--config.file=" + config,
        "--storage.tsdb.path=" + dir + "/tsdb",
        "--web.listen-address=127.0.0.1:" + std::to_string(port),
        "--log.level=warn",
    };
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      execvp(argv[0], argv.data());
      _exit(127);
    }
  }
  ~PrometheusServer() { Stop(); }
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  int port() const { return port_; }
  std::string Log() const { return ReadFile(log_path_); }
  bool Running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    auto until = Clock::now() + 15s;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > until) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int port_;
  std::string log_path_;
};

// The rule files Prometheus loads: alerts/*.rules.yml (absolute paths, sorted).
std::vector<std::string> RuleFiles() {
  const char* env = std::getenv("LAGWATCH_RULES_DIR");
  const fs::path dir = env && *env ? fs::path(env) : fs::path(LAGWATCH_SOURCE_DIR) / "alerts";
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.size() > 10 &&
        name.compare(name.size() - 10, 10, ".rules.yml") == 0) {
      out.push_back(fs::absolute(e.path()).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string PrometheusConfig(int scrape_port, const std::vector<std::string>& rule_files) {
  std::ostringstream c;
  c << "global:\n"
       "  scrape_interval: 1s\n"
       "  scrape_timeout: 900ms\n"
       "  evaluation_interval: 1s\n"
       "rule_files:\n";
  for (const auto& f : rule_files) c << "  - " << json(f).dump() << "\n";
  c << "scrape_configs:\n"
       "  - job_name: lagwatch\n"
       "    static_configs:\n"
       "      - targets: [\"127.0.0.1:"
    << scrape_port << "\"]\n";
  return c.str();
}

// The outcome of one instant query.
struct Answer {
  bool ok = false;     // status success, non-empty, at least one finite sample
  std::string detail;  // why not, or the response
};

bool FiniteSample(const json& value) {
  if (!value.is_array() || value.size() != 2 || !value[1].is_string()) return false;
  return std::isfinite(std::strtod(value[1].get<std::string>().c_str(), nullptr));
}

Answer Query(int port, const std::string& promql) {
  auto [code, body] = HttpGet(port, "/api/v1/query?query=" + UrlEncode(promql));
  Answer a;
  a.detail = "HTTP " + std::to_string(code) + ": " + Tail(body, 600);
  if (code != 200) return a;
  json r = json::parse(body, nullptr, false);
  if (r.is_discarded() || r.value("status", "") != "success") return a;
  const json& data = r["data"];
  const std::string type = data.value("resultType", "");
  const json& result = data["result"];
  if (type == "scalar") {
    a.ok = FiniteSample(result);
  } else if (type == "vector" && result.is_array()) {
    if (result.empty()) a.detail = "empty result";
    for (const auto& s : result) a.ok = a.ok || FiniteSample(s["value"]);
    if (!result.empty() && !a.ok) a.detail = "only non-finite samples: " + Tail(body, 600);
  }
  return a;
}

// Label values the way Grafana's label_values(selector, label) asks for them.
Answer LabelValues(int port, const std::string& variable_query,
                   const std::set<std::string>& variables) {
  static const std::regex kLabelValues(R"(^\s*label_values\((.*),\s*([A-Za-z_]\w*)\s*\)\s*$)");
  std::smatch m;
  Answer a;
  if (!std::regex_match(variable_query, m, kLabelValues)) {
    a.detail = "not of the form label_values(selector, label)";
    return a;
  }
  const std::string selector = Substitute(m[1].str(), variables);
  auto [code, body] =
      HttpGet(port, "/api/v1/label/" + m[2].str() + "/values?match%5B%5D=" + UrlEncode(selector));
  a.detail = "HTTP " + std::to_string(code) + ": " + Tail(body, 600);
  json r = json::parse(body, nullptr, false);
  a.ok = code == 200 && !r.is_discarded() && r.value("status", "") == "success" &&
         r["data"].is_array() && !r["data"].empty();
  return a;
}

// Why `expr` could mix clusters (docs/operations.md, "Fleets"), or nothing: every selector of a
// lagwatch series or recording rule must filter on the Cluster variable (`cluster=~"$cluster"`),
// and every aggregation must keep `cluster` (`by (cluster, ...)`; one without `by` sums
// clusters together).
std::vector<std::string> ClusterProblems(const std::string& expr) {
  static const std::regex kSelector(R"((lagwatch[_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?)");
  static const std::regex kAggregation(
      R"(\b(sum|max|min|avg|count|group|topk|bottomk)\b\s*(by\s*\(([^)]*)\))?\s*\()");
  static const std::regex kClusterLabel(R"((^|[\s,(])cluster\s*(,|$))");
  std::vector<std::string> problems;
  for (std::sregex_iterator it(expr.begin(), expr.end(), kSelector), end; it != end; ++it) {
    if ((*it)[2].str().find("cluster=~\"$cluster\"") == std::string::npos) {
      problems.push_back((*it)[1].str() + " without cluster=~\"$cluster\"");
    }
  }
  for (std::sregex_iterator it(expr.begin(), expr.end(), kAggregation), end; it != end; ++it) {
    if (!(*it)[2].matched) {
      problems.push_back((*it)[1].str() + " without by (cluster, ...)");
    } else if (!std::regex_search((*it)[3].str(), kClusterLabel)) {
      problems.push_back((*it)[0].str() + " drops cluster");
    }
  }
  return problems;
}

void Hincrby(const Sandbox& sandbox, const std::string& field, int by) {
  RunResult r = RedisCli(sandbox.redis_port(), sandbox.RouterLogin(),
                         {"HINCRBY", "rw_stats:shop", field, std::to_string(by)});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("ClusterProblems finds a selector without the cluster filter and a mixing aggregation") {
  CHECK(ClusterProblems(R"(max by (cluster, replica) (lagwatch_x{cluster=~"$cluster", a="b"}))")
            .empty());
  CHECK(ClusterProblems(R"(histogram_quantile(0.9, sum by (le, cluster) (rate(lagwatch_y_bucket{)"
                        R"(cluster=~"$cluster"}[1m]))) + count_over_time(lagwatch:r{)"
                        R"(cluster=~"$cluster"}[5m]))")
            .empty());
  CHECK(ClusterProblems(R"(lagwatch_x)").size() == 1);
  CHECK(ClusterProblems(R"(lagwatch:r:count{tier=~"$tier"})").size() == 1);
  CHECK(ClusterProblems(R"(lagwatch_x{cluster="shop"})").size() == 1);
  CHECK(ClusterProblems(R"(max(lagwatch_x{cluster=~"$cluster"}))").size() == 1);
  CHECK(ClusterProblems(R"(sum by (replica) (lagwatch_x{cluster=~"$cluster"}))").size() == 1);
  CHECK(ClusterProblems(R"(sum by (clusters) (lagwatch_x{cluster=~"$cluster"}))").size() == 1);
}

TEST_CASE("the dashboard JSON is complete and consistent") {
  const json d = LoadDashboard();
  CHECK(d.value("uid", "") == "lagwatch");
  CHECK(d.value("schemaVersion", 0) >= 36);

  std::map<std::string, json> vars;
  for (const auto& v : d["templating"]["list"]) vars[v.value("name", "")] = v;
  REQUIRE(vars.count("datasource"));
  CHECK(vars["datasource"]["type"] == "datasource");
  CHECK(vars["datasource"]["query"] == "prometheus");
  const std::map<std::string, std::string> want = {
      {"cluster", "label_values(lagwatch_build_info, cluster)"},
      {"tier", "label_values(lagwatch_replica_healthy{cluster=~\"$cluster\"}, tier)"},
      {"replica",
       "label_values(lagwatch_replica_healthy{cluster=~\"$cluster\", tier=~\"$tier\"}, replica)"},
      {"app", "label_values(lagwatch_router_reads_total{cluster=~\"$cluster\"}, app)"}};
  const auto queries = VariableQueries(d);
  for (const auto& [name, query] : want) {
    INFO("variable " << name);
    REQUIRE(vars.count(name));
    CHECK(vars[name]["type"] == "query");
    CHECK(vars[name]["datasource"]["uid"] == "${datasource}");
    CHECK(vars[name]["multi"] == true);
    CHECK(vars[name]["includeAll"] == true);
    CHECK(queries.at(name) == query);
  }

  std::vector<json> panels;
  CollectPanels(d["panels"], panels);
  CHECK(panels.size() >= 20);
  std::set<int> ids;
  for (const auto& p : d["panels"]) {
    CHECK_MESSAGE(ids.insert(p.value("id", -1)).second, "duplicate panel id " << p["id"]);
    for (const auto& q : p.value("panels", json::array())) {
      CHECK_MESSAGE(ids.insert(q.value("id", -1)).second, "duplicate panel id " << q["id"]);
    }
  }
  for (const auto& p : panels) {
    const std::string title = p.value("title", "");
    INFO("panel " << title);
    CHECK(!title.empty());
    CHECK(p.value("description", "").size() >= 40);
    CHECK(p["datasource"]["uid"] == "${datasource}");
    REQUIRE(p["targets"].is_array());
    CHECK(!p["targets"].empty());
    std::set<std::string> refs;
    std::set<std::string> variables;
    for (const auto& v : d["templating"]["list"]) variables.insert(v.value("name", ""));
    for (const auto& t : p["targets"]) {
      CHECK(!t.value("expr", "").empty());
      CHECK_MESSAGE(Substitute(t.value("expr", ""), variables).find('$') == std::string::npos,
                    "unknown template variable in " << t.value("expr", ""));
      CHECK(t["datasource"]["uid"] == "${datasource}");
      CHECK(refs.insert(t.value("refId", "")).second);
      for (const std::string& problem : ClusterProblems(t.value("expr", ""))) {
        FAIL_CHECK(t.value("refId", "") << ": " << problem);
      }
    }
  }

  // Provisioning points Grafana at the datasource uid the dashboard's default resolves to.
  const std::string ds =
      ReadFile(std::string(LAGWATCH_SOURCE_DIR) + "/grafana/provisioning/datasources/lagwatch.yml");
  CHECK(ds.find("uid: prometheus") != std::string::npos);
  CHECK(ds.find("url: http://127.0.0.1:9090") != std::string::npos);
  const std::string provider =
      ReadFile(std::string(LAGWATCH_SOURCE_DIR) + "/grafana/provisioning/dashboards/lagwatch.yml");
  CHECK(provider.find("type: file") != std::string::npos);
}

TEST_CASE("every dashboard query returns data on a real Prometheus") {
  const auto t0 = Clock::now();
  const json dashboard = LoadDashboard();
  const std::vector<Target> targets = CollectTargets(dashboard);
  REQUIRE(!targets.empty());
  std::set<std::string> variables;
  for (const auto& v : dashboard["templating"]["list"]) variables.insert(v.value("name", ""));

  const std::vector<std::string> rule_files = RuleFiles();
  REQUIRE_MESSAGE(!rule_files.empty(),
                  "no alerts/*.rules.yml: the dashboard's recording rules must be loaded");
  Sandbox sandbox{kDir, kBasePort};
  Agent agent{sandbox.config_path(), kDir + "/agent.log"};

  const std::string prom_dir = kDir + "/prometheus";
  fs::create_directories(prom_dir);
  const std::string config =
      WriteTempFile(prom_dir, "prometheus.yml", PrometheusConfig(sandbox.http_port(), rule_files));
  {
    RunResult check = RunCommand({"/usr/bin/promtool", "check", "config", config});
    INFO(check.output);
    REQUIRE(check.exit_code == 0);
  }
  PrometheusServer prometheus{config, prom_dir, kPrometheusPort};
  const int port = prometheus.port();
  {
    bool ready = WaitFor([&] { return HttpGet(port, "/-/ready").first == 200; }, 30s);
    INFO(Tail(prometheus.Log()));
    REQUIRE(ready);
  }
  {
    bool ready = WaitFor([&] { return HttpGet(sandbox.http_port(), "/readyz").first == 200; }, 20s);
    INFO(Tail(agent.Log()));
    REQUIRE(ready);
  }

  // Router feedback, twice, so every rate and rolling window has traffic inside it: the first
  // batch creates the series, the second (after Prometheus has scraped the first at least twice)
  // makes their rates and the agent's RWSR/DSR windows non-zero.
  const std::string r1 = "reads_replica:" + sandbox.replica_id(1);
  const std::string r2 = "reads_replica:" + sandbox.replica_id(2);
  Hincrby(sandbox, "reads_replica", 95);
  Hincrby(sandbox, r1, 50);
  Hincrby(sandbox, r2, 45);
  Hincrby(sandbox, "reads_master", 5);
  Hincrby(sandbox, "degrade_attempts", 10);
  Hincrby(sandbox, "degrade_successes", 10);
  REQUIRE_MESSAGE(WaitFor(
                      [&] {
                        return Query(port,
                                     "count_over_time(lagwatch_router_degrade_successes_total{app="
                                     "\"shop\"}[1m]) >= 2")
                            .ok;
                      },
                      20s),
                  "Prometheus never saw the first router feedback");
  Hincrby(sandbox, "reads_replica", 80);
  Hincrby(sandbox, r1, 40);
  Hincrby(sandbox, r2, 40);
  Hincrby(sandbox, "reads_master", 20);
  Hincrby(sandbox, "degrade_attempts", 10);
  Hincrby(sandbox, "degrade_successes", 9);
  REQUIRE_MESSAGE(
      WaitFor(
          [&] {
            return Query(port,
                         "lagwatch_router_dsr_ratio{app=\"shop\",window=\"1m\"} < 1 "
                         "and on (app) increase(lagwatch_router_degrade_attempts_total{app="
                         "\"shop\"}[1m]) > 0")
                .ok;
          },
          20s),
      "Prometheus never saw the second router feedback in the agent's DSR window");
  MESSAGE("data flowing after " << std::chrono::duration<double>(Clock::now() - t0).count()
                                << " s");

  // The recording rules Prometheus actually loaded.
  std::vector<std::string> recorded;
  {
    auto [code, body] = HttpGet(port, "/api/v1/rules?type=record");
    REQUIRE(code == 200);
    json r = json::parse(body, nullptr, false);
    REQUIRE(!r.is_discarded());
    for (const auto& g : r["data"]["groups"]) {
      for (const auto& rule : g["rules"]) {
        if (rule.value("type", "") == "recording") recorded.push_back(rule.value("name", ""));
      }
    }
  }
  REQUIRE_MESSAGE(!recorded.empty(), "no recording rules loaded from the rule files");
  const std::set<std::string> recorded_set(recorded.begin(), recorded.end());
  static const std::regex kRuleName(R"(lagwatch:[A-Za-z0-9_:]+)");
  for (const auto& t : targets) {
    for (std::sregex_iterator it(t.expr.begin(), t.expr.end(), kRuleName), end; it != end; ++it) {
      CHECK_MESSAGE(recorded_set.count(it->str()), t.panel
                                                       << " uses recording rule " << it->str()
                                                       << ", which no alerts/*.rules.yml defines");
    }
  }

  // Every query must answer: panels, template variables, recording rules. Windows fill as
  // scrapes and evaluations arrive, so each is retried until it answers or 40 s pass.
  struct Pending {
    std::string what;
    std::function<Answer()> ask;
    Answer last;
  };
  std::vector<Pending> pending;
  for (const auto& t : targets) {
    const std::string promql = Substitute(t.expr, variables);
    pending.push_back(
        {"panel " + t.panel + ": " + promql, [=] { return Query(port, promql); }, {}});
  }
  for (const auto& [name, q] : VariableQueries(dashboard)) {
    pending.push_back({"variable $" + name + ": " + q,
                       [=, &variables] { return LabelValues(port, q, variables); },
                       {}});
  }
  for (const auto& name : recorded) {
    pending.push_back({"recording rule " + name, [=] { return Query(port, name); }, {}});
  }
  const size_t total = pending.size();
  const auto deadline = Clock::now() + 40s;
  while (!pending.empty()) {
    for (auto& p : pending) p.last = p.ask();
    std::erase_if(pending, [](const Pending& p) { return p.last.ok; });
    if (pending.empty() || Clock::now() > deadline || !prometheus.Running()) break;
    std::this_thread::sleep_for(1s);
  }
  if (!pending.empty()) {
    INFO("prometheus log: " << Tail(prometheus.Log()));
    for (const auto& p : pending) CHECK_MESSAGE(p.last.ok, p.what << "\n  → " << p.last.detail);
  }

  // No recording rule may be failing to evaluate.
  {
    auto [code, body] = HttpGet(port, "/api/v1/rules");
    REQUIRE(code == 200);
    json r = json::parse(body, nullptr, false);
    REQUIRE(!r.is_discarded());
    for (const auto& g : r["data"]["groups"]) {
      for (const auto& rule : g["rules"]) {
        CHECK_MESSAGE(rule.value("health", "") != "err",
                      "rule " << rule.value("name", "") << ": " << rule.value("lastError", ""));
      }
    }
  }
  MESSAGE((total - pending.size())
          << "/" << total << " queries answered (" << targets.size() << " panel targets, "
          << recorded.size() << " recording rules) after "
          << std::chrono::duration<double>(Clock::now() - t0).count() << " s");
}

}  // namespace lagwatch::test
