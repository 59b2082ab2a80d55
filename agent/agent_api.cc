// The agent's HTTP answers (/api/v1/*, /readyz; docs/api.md) and its state as a whole for the
// log and the health checks: read-only views of what Agent holds, apart from agent.cc's life
// cycle and reaction to the topology.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "base/contract.h"
#include "exporters/api.h"
#include "exporters/haproxy_http_check.h"

namespace lagwatch {

std::map<std::string, HttpServer::Handler> Agent::Routes() {
  auto json = [](const nlohmann::json& j, int code = 200) {
    // Server text (errors, versions) may not be UTF-8: replaced, never a throw.
    return HttpResponse{code, "application/json",
                        j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"};
  };
  std::map<std::string, HttpServer::Handler> routes;
  routes["/api/v1/replicas"] = [this, json] {
    nlohmann::json list = nlohmann::json::array();
    std::lock_guard lock(mu_);
    for (const auto& [id, p] : probers_) {
      if (topology_.ViewOf(id).is_primary) continue;  // the primary is not a replica
      ReplicaView v = p->view();
      v.windows = p->windows();
      list.push_back(ReplicaJson(p->info(), v));
    }
    return json({{"cluster", initial_.cluster},
                 {"agent", initial_.agent_id},
                 {"generated_at_ms", UnixMillis(clock_.WallNow())},
                 {"replicas", list}});
  };
  routes["/api/v1/primary"] = [this, json] {
    std::optional<int64_t> sample_age;
    if (auto s = positions_.LastSample()) sample_age = ToMillis(clock_.Now() - *s);
    auto latest = heartbeat_log_.Latest();
    nlohmann::json j = PrimaryJson(
        topology_.primary(), writer_.view(), initial_.heartbeat.interval_ms,
        latest ? static_cast<int64_t>(latest->seq) : 0, sample_age, reporter_.primary_flavor());
    if (listener_) {
      const StreamHistory::State s = stream_.StateAt(clock_.Now());
      j["binlog_stream"] = {
          {"usable", s.usable},
          {"why_not", s.why_not ? nlohmann::json(s.why_not) : nlohmann::json(nullptr)},
          {"delivery_bound_ms",
           std::chrono::duration<double, std::milli>(s.delivery_bound).count()},
          {"last_alive_ms_ago", s.last_alive
                                    ? nlohmann::json(ToMillis(clock_.Now() - *s.last_alive))
                                    : nlohmann::json(nullptr)},
          {"position",
           s.position ? nlohmann::json(s.position->ToString()) : nlohmann::json(nullptr)},
          {"server_id", initial_.binlog_stream.ServerId(initial_.agent_id)},
          // MySQL's own commit timestamps of the last transaction (its servers' clocks: shown,
          // never compared with lagwatch's).
          {"last_commit_us", s.commit_us ? nlohmann::json{{"original", s.commit_us->first},
                                                          {"immediate", s.commit_us->second}}
                                         : nlohmann::json(nullptr)},
      };
      // binlog_stream.watch_writes: the servers whose writes are watched (null: off).
      nlohmann::json watched = nullptr;
      {
        std::lock_guard lock(watch_mu_);
        if (watching_) {
          watched = nlohmann::json::array();
          for (const auto& [id, w] : watches_) watched.push_back(id);
        }
      }
      j["binlog_stream"]["watch_writes"] = watched;
    } else {
      j["binlog_stream"] = nullptr;
    }
    j["cluster"] = initial_.cluster;
    j["topology"] = {{"state", TopologyStateName(topology_.state())},
                     {"configured_primary", initial_.primary.Id()},
                     {"changes", topology_.epoch()}};
    return json(j);
  };
  routes["/api/v1/router"] = [this, json] { return json(RouterJson()); };
  routes["/readyz"] = [this] {
    if (!FirstRoundDone())
      return HttpResponse{503, "text/plain", "not ready: first probe round not done\n"};
    if (!publisher_.connected())
      return HttpResponse{503, "text/plain", "not ready: Redis not connected\n"};
    return HttpResponse{200, "text/plain", "ready\n"};
  };
  return routes;
}

std::map<std::string, HttpServer::RequestHandler> Agent::PrefixRoutes() {
  return {{std::string(kHaproxyCheckPath), [this](const HttpRequest& request) {
             return HaproxyHttpCheck(
                 request, [this](const CheckTarget& t) { return HaproxyAnswerFor(t); },
                 &metrics_.haproxy);
           }}};
}

std::optional<HaproxyAnswer> Agent::HaproxyAnswerFor(const CheckTarget& target) const {
  auto facts = board_.Facts(target.server.id);
  if (!facts) return std::nullopt;
  return JudgeForHaproxy(*facts, target.server.entry, clock_.Now(), Millis(initial_.redis.ttl_ms),
                         target.max_delay_ms);
}

nlohmann::json Agent::RouterJson() {
  const MonoTime now = clock_.Now();
  auto ratio = [](std::optional<double> r) {
    return r ? nlohmann::json(*r) : nlohmann::json(nullptr);
  };
  nlohmann::json apps = nlohmann::json::array();
  auto totals = router_feedback_.AppTotals();
  std::lock_guard lock(router_mu_);
  for (const auto& [app, t] : totals) {
    nlohmann::json j = {{"app", app},
                        {"reads_replica", t.reads_replica},
                        {"reads_all", t.reads_all},
                        {"degrade_attempts", t.degrade_attempts},
                        {"degrade_successes", t.degrade_successes}};
    auto it = app_windows_.find(app);
    for (size_t i = 0; it != app_windows_.end() && i < it->second.rwsr.size(); ++i) {
      j["windows"][kWindowNames[i]] = {{"rwsr", ratio(it->second.rwsr[i].Ratio(now))},
                                       {"dsr", ratio(it->second.dsr[i].Ratio(now))}};
    }
    apps.push_back(j);
  }
  return {{"cluster", initial_.cluster},
          {"polls", router_feedback_.polls()},
          {"connected", router_feedback_.connected()},
          {"apps", apps}};
}

bool Agent::FirstRoundDone() const {
  std::lock_guard lock(mu_);
  for (const auto& [id, p] : probers_) {
    if (!p->probed_once()) return false;
  }
  return true;
}

bool Agent::ProbersAlive(Millis within) const {
  std::lock_guard lock(mu_);
  const MonoTime now = clock_.Now();
  for (const auto& [id, p] : probers_) {
    if (now - p->last_probe_done() > within) return false;
  }
  return true;
}

std::string Agent::Summary() const {
  std::lock_guard lock(mu_);
  int healthy = 0;
  std::map<std::string, int> states;
  size_t replicas = 0;
  for (const auto& [id, p] : probers_) {
    if (topology_.ViewOf(id).is_primary) continue;
    ++replicas;
    ReplicaView v = p->view();
    if (v.last && v.last->healthy) ++healthy;
    ++states[v.last ? v.last->state : "unmeasured"];
  }
  std::string out = std::to_string(healthy) + "/" + std::to_string(replicas) + " replicas healthy";
  for (const auto& [state, n] : states) {
    if (state != "ok") out += ", " + std::to_string(n) + " " + state;
  }
  out += "; primary " + writer_.view().state;
  if (const Endpoint primary = topology_.primary(); !(primary == initial_.primary)) {
    out += " (now " + primary.Id() + ")";
  }
  if (topology_.state() == TopologyState::kAmbiguous) out += " (AMBIGUOUS: several writable)";
  out += publisher_.connected() ? "; redis connected" : "; redis DISCONNECTED";
  return out;
}

}  // namespace lagwatch
