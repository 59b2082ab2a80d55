#include "agent/agent.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/contract.h"
#include "base/log.h"
#include "exporters/api.h"
#include "version.h"

namespace lagwatch {
namespace {

// binlog_stream.watch_writes: the heartbeat period asked of a watched server (its stream needs
// only transactions; one sign of life a second keeps the 5 s read deadline far).
constexpr int kWatchHeartbeatMs = 1000;

}  // namespace

Agent::Agent(Config config, const Clock& clock)
    : clock_(clock),
      metrics_(LAGWATCH_VERSION, config.cluster, clock_),
      board_(clock_),
      positions_(4096, SampleGapAfter(Millis(config.sampler_interval_ms))),
      stream_(StreamHistoryOptions{
          .capacity = 4096,
          // Heartbeats every heartbeat_ms prove it alive; a few missed, or a stall of the
          // listener's thread, is silence.
          .alive_within = Millis(std::max(100, 5 * config.binlog_stream.heartbeat_ms)),
          .max_lag = Millis(config.binlog_stream.max_lag_ms),
          // A delay longer than this shows as a lag of about this much (stream_history.h): it
          // must exceed max_lag by a sampling interval and more. Lags are kept for the default
          // lag_window (10 s), and never less than two spans.
          .lag_span = Millis(
              std::max(1000, 2 * (config.binlog_stream.max_lag_ms + config.sampler_interval_ms))),
          .min_delivery = Micros(1000 * config.binlog_stream.min_delivery_ms)}),
      initial_(config),
      publisher_(initial_.redis, initial_.agent_id, &metrics_, clock_),
      reporter_(&metrics_, &publisher_, initial_.primary.Id()),
      writer_(WriterOptions{PrimaryTarget(initial_.primary), initial_.heartbeat, initial_.agent_id},
              &heartbeat_log_, &reporter_, clock_),
      sampler_(SamplerOptions{PrimaryTarget(initial_.primary), initial_.sampler_interval_ms,
                              initial_.positions},
               &positions_, &reporter_, clock_),
      topology_(
          [&] {
            std::vector<Endpoint> servers;
            for (const auto& s : initial_.Servers()) servers.push_back(s.endpoint);
            return servers;
          }(),
          initial_.primary, [this](const Endpoint& p) { MovePrimary(p); },
          [this](const TopologyMonitor::Change& c) { TopologyChanged(c); },
          [this](const TopologyMonitor::Notice& n) { TopologyNotice(n); }),
      router_feedback_(initial_.redis, &metrics_.router_feedback, clock_),
      tls_watch_(initial_.redis, &metrics_, clock_),
      config_(std::move(config)),
      discovered_(Millis(initial_.discovery.grace_ms),
                  static_cast<size_t>(initial_.discovery.max_replicas)) {
  reporter_.SetTopology(&topology_);
  // While the primary is read-only every server is probed at each sample, so that where else
  // writes can go is known to within a sampling interval (ReadOnlySightings).
  sampler_.OnReadOnly([this] { UrgeProbes(); });
  if (initial_.binlog_stream.enabled) {
    sampler_.CheckStream(&stream_);
    listener_ = std::make_unique<BinlogListener>(
        ListenerOptions{.primary = PrimaryTarget(initial_.primary),
                        .server_id = initial_.binlog_stream.ServerId(initial_.agent_id),
                        .heartbeat_ms = initial_.binlog_stream.heartbeat_ms,
                        .began = [this] { sampler_.Urge(); }},
        &positions_, &stream_, &reporter_, clock_);
  }
  metrics_.primary_info.Add({{"primary", initial_.primary.Id()}}).Set(1);
  shown_primary_ = initial_.primary.Id();
  for (int i = 0; i < initial_.probe.threads; ++i) {
    loops_.push_back(std::make_unique<EventLoop>("lw-probe-" + std::to_string(i),
                                                 initial_.probe.realtime, clock_));
  }
  prober_settings_ = ProberSettings(config_);
  for (const auto& r : config_.Servers()) {
    probers_[r.endpoint.Id()] = MakeProber(r);
    servers_.push_back(r.endpoint.Id());
  }
  board_.SetServers(servers_);
  board_.SetPrimary(initial_.primary.Id());
  if (!initial_.haproxy.push.instances.empty()) {
    haproxy_pusher_ =
        std::make_unique<HaproxyPusher>(initial_.haproxy.push, &board_, &metrics_.haproxy, clock_);
  }
  WatchTls(config_.Servers());
  if (initial_.discovery.enabled) {
    discovery_ = std::make_unique<ReplicaDiscovery>(
        PrimaryTarget(initial_.primary), Millis(initial_.discovery.interval_ms),
        static_cast<size_t>(initial_.discovery.max_replicas),
        [this](const std::vector<ListedReplica>& listed, int skipped) {
          OnListed(listed, skipped);
        },
        [this](const std::string& reason) {
          metrics_.discovery_errors.Add({{"reason", reason}}).Increment();
        },
        clock_);
  }
}

MysqlTarget Agent::PrimaryTarget(const Endpoint& primary) const {
  return {primary, initial_.primary_defaults_file, "primary " + primary.Id(),
          initial_.MysqlTlsFor(primary)};
}

void Agent::MovePrimary(const Endpoint& primary) {
  // Positions and heartbeats of the old primary prove nothing about the new one: forgotten before
  // any prober sees the new epoch. Then the writer and the sampler go there.
  positions_.Reset();
  stream_.Reset();
  heartbeat_log_.Clear();
  // HAProxy's pools follow at once: the new primary's backup entry, and no replica on a verdict
  // against the old one.
  board_.ClearRecords();
  board_.SetPrimary(primary.Id());
  writer_.SetPrimary(PrimaryTarget(primary));
  sampler_.SetPrimary(PrimaryTarget(primary));
  if (listener_) listener_->SetPrimary(PrimaryTarget(primary));
  if (discovery_) discovery_->SetPrimary(PrimaryTarget(primary));
  reporter_.SetPrimary(primary.Id());
  // The watch on the new primary follows the old one instead: no thread starts or stops here.
  std::lock_guard lock(watch_mu_);
  watch_primary_ = primary;
  SyncWatchesLocked(watch_servers_);
}

std::vector<Endpoint> Agent::ProbedServers() const {
  std::vector<Endpoint> out;
  for (const auto& [id, p] : probers_) out.push_back(p->replica().endpoint);
  return out;
}

void Agent::SyncWatchesLocked(const std::vector<Endpoint>& servers) {
  if (!watching_) return;
  std::map<std::string, Endpoint> wanted;
  for (const auto& e : servers) {
    if (e.Id() != watch_primary_.Id()) wanted.emplace(e.Id(), e);
  }
  std::vector<std::unique_ptr<WriteWatch>> spare;
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (wanted.count(it->first)) {
      ++it;
      continue;
    }
    spare.push_back(std::move(it->second));
    it = watches_.erase(it);
  }
  for (const auto& [id, endpoint] : wanted) {
    if (watches_.count(id)) continue;
    // Logged in as the writer is (it will need REPLICATION SLAVE there if the server is promoted).
    MysqlTarget target = PrimaryTarget(endpoint);
    target.label = "server " + id;
    std::unique_ptr<WriteWatch> w;
    if (!spare.empty()) {
      w = std::move(spare.back());
      spare.pop_back();
      {
        std::lock_guard wl(w->mu);
        w->server = id;
        w->next_urge.reset();
        w->cooldown = WriteWatch::kFirstCooldown;
      }
      w->listener->SetPrimary(std::move(target));
    } else {
      w = std::make_unique<WriteWatch>(&metrics_);
      w->server = id;
      WriteWatch* raw = w.get();
      w->listener = std::make_unique<BinlogListener>(
          ListenerOptions{.primary = std::move(target),
                          .server_id = initial_.binlog_stream.ServerId(initial_.agent_id),
                          .heartbeat_ms = kWatchHeartbeatMs,
                          .own_write = [this, raw](MonoTime at) { OnOwnWrite(raw, at); },
                          .applied =
                              [this](const std::string& server, std::optional<AppliedProof> proof) {
                                witnesses_.Set(server, std::move(proof));
                              }},
          &positions_, &w->stream, w.get(), clock_);
      w->listener->Start();
    }
    watches_[id] = std::move(w);
  }
  // What is left of `spare` stops here (each listener's thread joined).
}

void Agent::OnOwnWrite(WriteWatch* w, MonoTime arrival) {
  std::string server;
  {
    std::lock_guard lock(w->mu);
    if (w->next_urge && arrival < *w->next_urge) return;
    w->next_urge = arrival + w->cooldown;
    w->cooldown = std::min(w->cooldown * 2, WriteWatch::kLastCooldown);
    server = w->server;
  }
  metrics_.write_watch_urges.Increment();
  LogLimited(LogLevel::kInfo, "write-watch:" + server,
             "a write on " + server + ", which is not the primary: probing every server now");
  UrgeProbes();
}

void Agent::UrgeProbes() {
  std::lock_guard lock(urge_mu_);
  for (const auto& urge : urgers_) urge();
}

void Agent::WatchSilence() {
  const MonoTime now = clock_.Now();
  const bool known =
      PrimaryKnown(now, heartbeat_log_, positions_, Millis(initial_.heartbeat.interval_ms),
                   Millis(initial_.sampler_interval_ms));
  if (known) {
    read_only_sightings_.PrimaryHeard();
  } else {
    read_only_sightings_.PrimarySilent();
  }
  loops_.front()->At(now + kSilenceWatch, [this] { WatchSilence(); });
}

void Agent::RefreshUrgers() {
  std::lock_guard lock(urge_mu_);
  urgers_.clear();
  for (const auto& [id, p] : probers_) urgers_.push_back(p->Urger());
}

void Agent::TopologyChanged(const TopologyMonitor::Change& change) {
  const std::string primary = change.primary.Id();
  const char* state = TopologyStateName(change.state);
  for (const char* s : kTopologyStates) {
    metrics_.topology_state.Add({{"state", s}}).Set(std::string(s) == state ? 1 : 0);
  }
  {
    std::lock_guard lock(servers_mu_);
    if (shown_primary_ != primary) {
      if (shown_primary_)
        metrics_.primary_info.Remove(&metrics_.primary_info.Add({{"primary", *shown_primary_}}));
      metrics_.primary_info.Add({{"primary", primary}}).Set(1);
      shown_primary_ = primary;
    }
  }
  // Routers hear of a move and of ambiguity (and its end); the primary going silent or read-only
  // shows in its own key and in the replicas' states.
  bool event = true;
  std::optional<std::string> previous, writable_list;
  if (change.previous) {
    metrics_.primary_changes.Increment();
    previous = change.previous->Id();
    // Every replica's record was judged against the old primary: gone at once (no key: no fresh
    // measurement), each written again once proven against the new one.
    publisher_.RetireAll();
    PublishReplicaSet();
    Log(LogLevel::kWarn, "the primary is now " + primary + " (was " + change.previous->Id() +
                             "): heartbeats and position samples move there; every replica is "
                             "judged against it from now on");
  } else if (change.state == TopologyState::kAmbiguous) {
    std::string writable;
    for (const auto& w : change.writable) writable += (writable.empty() ? "" : ", ") + w.Id();
    writable_list = writable;
    Log(LogLevel::kError, "the topology is ambiguous: " + writable +
                              " are all writable and replicate from nobody; no replica is "
                              "healthy until only one is (the primary stays " +
                              primary + ")");
  } else if (change.state == TopologyState::kUnknown) {
    event = false;
    LogLimited(LogLevel::kWarn, "topology-unknown",
               "no writable server: the primary " + primary +
                   " is down, hung or read-only, and no other server is writable");
  } else {
    event = false;
    LogLimited(LogLevel::kInfo, "topology-ok",
               "the primary is " + primary + " (writable, replicates from nobody)");
  }
  {
    std::lock_guard lock(servers_mu_);
    // The end of an ambiguity is news too.
    event = event || (was_ambiguous_ && change.state == TopologyState::kOk);
    was_ambiguous_ = change.state == TopologyState::kAmbiguous;
  }
  if (event) {
    publisher_.PublishEvent(contract::PrimaryEventJson(primary, previous, state, initial_.agent_id,
                                                       initial_.cluster, writable_list));
  }
}

void Agent::TopologyNotice(const TopologyMonitor::Notice& n) {
  const std::string server = n.role.endpoint.Id();
  if (n.kind == TopologyMonitor::Notice::Kind::kWritableReplica) {
    Log(LogLevel::kWarn, "server " + server +
                             " is writable (read_only=0) but replicates from another: a replica "
                             "with read_only forgotten? It is not taken for the primary");
    return;
  }
  metrics_.source_doubts.Add({{"replica", server}}).Increment();
  // The source as the replica names it, quoted: it comes from the server, not from the config.
  std::string source = "nobody";
  if (n.role.replicates && *n.role.replicates) {
    source = "'" + n.role.source_host + "' port " +
             (n.role.source_port ? std::to_string(*n.role.source_port) : "?");
    if (n.role.source_server_id && *n.role.source_server_id != 0) {
      source += " (server id " + std::to_string(*n.role.source_server_id) + ")";
    }
  }
  LogLimited(LogLevel::kWarn, "source-doubt:" + server,
             "replica " + server + " replicates from " + source + ", which is not the primary " +
                 n.primary.Id() +
                 " nor a configured replica leading to it: unverified (not healthy) "
                 "until it replicates from the primary");
}

void Agent::OnListed(const std::vector<ListedReplica>& listed, int skipped) {
  if (skipped > 0) {
    metrics_.discovery_errors.Add({{"reason", "row"}}).Increment(skipped);
    LogLimited(LogLevel::kWarn, "discovery-rows",
               "replica discovery: " + std::to_string(skipped) +
                   " listed replicas skipped (no report_host, an unusable host or port, or over "
                   "discovery.max_replicas)",
               60);
  }
  std::lock_guard lock(mu_);
  if (!started_) return;
  std::set<std::string> configured;
  for (const auto& r : config_.Servers()) configured.insert(r.endpoint.Id());
  // The primary lists its replicas, not itself: a discovered replica promoted stays probed.
  std::vector<ListedReplica> seen = listed;
  seen.push_back({topology_.primary(), 0});
  const std::vector<ReplicaConfig> running = EffectiveServers(config_);
  if (!discovered_.Update(seen, clock_.Now(), configured, topology_.ServerIds(configured))) {
    return;
  }
  for (const auto& e : discovered_.added()) {
    Log(LogLevel::kInfo, "discovered replica " + e.Id() + " in the primary's listing: probed in " +
                             config_.discovery.tier + " with weight " +
                             std::to_string(config_.discovery.weight));
  }
  for (const auto& e : discovered_.dropped()) {
    Log(LogLevel::kInfo, "replica " + e.Id() + " is no longer listed by the primary (for " +
                             std::to_string(config_.discovery.grace_ms) +
                             " ms): no longer probed or published");
  }
  ApplyServers(EffectiveServers(config_), running, false);
  metrics_.discovered_replicas.Set(static_cast<double>(discovered_.replicas().size()));
}

void Agent::PublishReplicaSet() {
  const std::string primary = topology_.primary().Id();
  std::vector<std::string> ids;
  {
    std::lock_guard lock(servers_mu_);
    for (const auto& id : servers_) {
      if (id != primary) ids.push_back(id);
    }
  }
  publisher_.SetReplicas(ids);
}

std::unique_ptr<ReplicaProber> Agent::MakeProber(const ReplicaConfig& r) {
  // Round robin: the loops' shares differ by at most one replica (until reloads remove some).
  EventLoop* loop = loops_[next_loop_++ % loops_.size()].get();
  return std::make_unique<ReplicaProber>(
      prober_settings_, r, loop, &heartbeat_log_, &positions_, listener_ ? &stream_ : nullptr,
      &witnesses_, &read_only_sightings_, &topology_, &publisher_, &board_, &metrics_, clock_,
      [this](const std::string& server, int64_t not_after) {
        tls_watch_.Learned(server, not_after);
      });
}

void Agent::StartProber(ReplicaProber& p) {
  // A fixed phase per replica within the interval, so a loop's probes do not all fall due at
  // once (each still snaps to the sampler's cadence: agent/schedule.h).
  const auto phase =
      std::hash<std::string>{}(p.id()) % static_cast<size_t>(config_.probe.interval_ms);
  p.Start(Millis(static_cast<int64_t>(phase)));
}

Status Agent::Start() {
  auto http =
      HttpServer::Start(initial_.http_listen, initial_.http, &metrics_, Routes(), PrefixRoutes());
  if (!http.ok()) return http.status();
  http_ = std::move(http).value();
  if (!initial_.haproxy.agent_check.listen.empty()) {
    auto agent_check = AgentCheckServer::Start(
        initial_.haproxy.agent_check, [this](const CheckTarget& t) { return HaproxyAnswerFor(t); },
        &metrics_.haproxy);
    if (!agent_check.ok()) return agent_check.status();
    agent_check_ = std::move(agent_check).value();
  }

  std::lock_guard lock(mu_);
  PublishReplicaSet();
  publisher_.Start(initial_.probe.realtime);
  router_feedback_.Start();
  sampler_.Start(initial_.probe.realtime);
  if (listener_) listener_->Start(initial_.probe.realtime);
  {
    // The monitor's lock is never taken under watch_mu_: MovePrimary takes them the other way.
    const Endpoint primary = topology_.primary();
    std::lock_guard watch_lock(watch_mu_);
    watching_ = listener_ && initial_.binlog_stream.watch_writes;
    watch_primary_ = primary;
    watch_servers_ = ProbedServers();
    SyncWatchesLocked(watch_servers_);
  }
  writer_.Start();
  auto until = clock_.Now() + std::chrono::seconds(1);
  while (!heartbeat_log_.LastAck() && clock_.Now() < until) {
    std::this_thread::sleep_for(Millis(10));
  }
  if (!heartbeat_log_.LastAck()) {
    Log(LogLevel::kWarn,
        "no heartbeat acknowledged by the primary yet; replicas will show "
        "primary_unknown until the primary answers");
  }
  read_only_sightings_.OnSilence([this] { UrgeProbes(); });  // before any prober runs
  for (auto& loop : loops_) loop->Start();
  for (auto& [id, p] : probers_) StartProber(*p);
  RefreshUrgers();
  loops_.front()->Post([this] { WatchSilence(); });
  if (initial_.probe.realtime) {
    // Started probers have run a loop turn, so each loop has tried by now.
    bool all = true;
    for (auto& loop : loops_) loop->RunSync([&] { all = all && loop->realtime_active(); });
    Log(LogLevel::kInfo, all ? "probe threads run at real-time priority (SCHED_FIFO 1)"
                             : "probe threads run at normal priority: SCHED_FIFO was refused "
                               "(needs root, CAP_SYS_NICE or LimitRTPRIO=1)");
  }
  started_ = true;
  if (haproxy_pusher_) haproxy_pusher_->Start();
  if (discovery_) discovery_->Start();
  tls_watch_.Start();
  Log(LogLevel::kInfo, "lagwatch " LAGWATCH_VERSION " watching " +
                           std::to_string(probers_.size() - 1) + " replicas of primary " +
                           initial_.primary.Id() + " (and the primary, for its role); metrics on " +
                           (initial_.http.web.tls() ? "https://" : "http://") +
                           initial_.http_listen + "/metrics" +
                           (initial_.http.web.auth() ? " (basic auth)" : ""));
  return Status::Ok();
}

void Agent::Stop() {
  // The watches first: none urges a prober after this.
  std::map<std::string, std::unique_ptr<WriteWatch>> watches;
  {
    std::lock_guard lock(watch_mu_);
    watching_ = false;
    watches.swap(watches_);
  }
  watches.clear();
  // HAProxy keeps the state it was last given (docs/operations.md, "HAProxy").
  if (haproxy_pusher_) haproxy_pusher_->Stop();
  agent_check_.reset();
  if (discovery_) discovery_->Stop();  // before mu_: its listings take it
  {
    std::lock_guard lock(mu_);
    // Loops first: then each prober's Stop runs inline instead of a round trip to its loop.
    for (auto& loop : loops_) loop->Stop();
    for (auto& [id, p] : probers_) p->Stop();
    started_ = false;
  }
  tls_watch_.Stop();
  writer_.Stop();
  if (listener_) listener_->Stop();
  sampler_.Stop();
  router_feedback_.Stop();
  publisher_.Stop();
  http_.reset();
}

Status Agent::Reload(const Config& next) {
  std::lock_guard lock(mu_);
  if (std::string key = FirstUnreloadableChange(config_, next); !key.empty()) {
    return Status::InvalidArgument(key + ": cannot change at run time; restart lagwatch to apply");
  }
  // Settings every prober uses: if they change, every prober restarts.
  const bool shared_changed = ProberSettingsChanged(config_, next);
  // The server acting as the primary is never dropped (after a switchover it may be a replica in
  // the configuration).
  const Endpoint primary = topology_.primary();
  const std::vector<ReplicaConfig> running_servers = EffectiveServers(config_);
  const std::vector<ReplicaConfig> next_servers = EffectiveServers(next);
  if (std::none_of(next_servers.begin(), next_servers.end(),
                   [&](const ReplicaConfig& r) { return r.endpoint == primary; })) {
    return Status::InvalidArgument("replicas: " + primary.Id() +
                                   " is the primary now and cannot be removed");
  }
  // New and restarted probers share the new settings; unchanged ones keep theirs.
  prober_settings_ = ProberSettings(next);
  const ReloadCounts n = ApplyServers(next_servers, running_servers, shared_changed);
  config_ = next;
  Log(LogLevel::kInfo, "configuration reloaded: " + std::to_string(n.added) + " added, " +
                           std::to_string(n.removed) + " removed, " + std::to_string(n.restarted) +
                           " restarted, " + std::to_string(n.kept) + " unchanged");
  return Status::Ok();
}

void Agent::WatchTls(const std::vector<ReplicaConfig>& servers) {
  // As the probers log in: every server with the replicas' option file.
  std::vector<MysqlTarget> targets;
  for (const auto& r : servers) {
    targets.push_back(
        {r.endpoint, initial_.replica_defaults_file, "server " + r.endpoint.Id(), r.tls});
  }
  tls_watch_.SetTargets(std::move(targets));
}

std::vector<ReplicaConfig> Agent::EffectiveServers(const Config& c) const {
  // Every server is probed, the primary too (its tier and weight are for when it is a replica).
  std::vector<ReplicaConfig> out = c.Servers();
  std::set<std::string> named;
  for (const auto& r : out) named.insert(r.endpoint.Id());
  for (const auto& e : discovered_.replicas()) {
    if (!named.count(e.Id())) {
      out.push_back({e, c.discovery.tier, c.discovery.weight, c.mysql_tls});
    }
  }
  return out;
}

Agent::ReloadCounts Agent::ApplyServers(const std::vector<ReplicaConfig>& next_servers,
                                        const std::vector<ReplicaConfig>& running_servers,
                                        bool shared_changed) {
  // The monitor knows the new servers before their probers report.
  std::vector<Endpoint> servers;
  for (const auto& r : next_servers) servers.push_back(r.endpoint);
  topology_.SetServers(servers);
  std::set<std::string> ids;
  for (const auto& e : servers) ids.insert(e.Id());
  read_only_sightings_.Keep(ids);
  WatchTls(next_servers);
  std::map<std::string, const ReplicaConfig*> wanted;
  for (const auto& r : next_servers) wanted[r.endpoint.Id()] = &r;
  ReloadCounts n;
  for (auto it = probers_.begin(); it != probers_.end();) {
    auto w = wanted.find(it->first);
    if (w == wanted.end()) {
      it->second->Stop();
      metrics_.RemoveReplica(it->first);
      it = probers_.erase(it);
      ++n.removed;
      continue;
    }
    const ReplicaConfig* old_rc = nullptr;
    for (const auto& r : running_servers) {
      if (r.endpoint.Id() == it->first) old_rc = &r;
    }
    const bool changed = shared_changed || !old_rc || old_rc->tier != w->second->tier ||
                         old_rc->weight != w->second->weight || old_rc->tls != w->second->tls;
    if (changed) {
      it->second->Stop();
      if (old_rc && old_rc->tier != w->second->tier) metrics_.RemoveReplica(it->first);
      it->second = MakeProber(*w->second);
      if (started_) StartProber(*it->second);
      ++n.restarted;
    } else {
      ++n.kept;
    }
    ++it;
  }
  for (const auto& [id, rc] : wanted) {
    if (probers_.count(id)) continue;
    probers_[id] = MakeProber(*rc);
    if (started_) StartProber(*probers_[id]);
    ++n.added;
  }
  {
    std::lock_guard servers_lock(servers_mu_);
    servers_.clear();
    for (const auto& [id, p] : probers_) servers_.push_back(id);
    board_.SetServers(servers_);
  }
  PublishReplicaSet();
  RefreshUrgers();
  {
    std::lock_guard watch_lock(watch_mu_);
    watch_servers_ = servers;  // what the probers now are
    SyncWatchesLocked(watch_servers_);
  }
  return n;
}

Status Agent::ReloadFile(const std::string& path) {
  auto next = LoadConfig(path);
  Status st = next.ok() ? Reload(next.value()) : next.status();
  metrics_.config_reloads.Add({{"result", st.ok() ? "success" : "failure"}}).Increment();
  if (!st.ok()) {
    Log(LogLevel::kError, "reload rejected, keeping the running configuration: " + st.message());
  }
  return st;
}

void Agent::Tick() {
  const MonoTime now = clock_.Now();
  if (listener_) {
    const StreamHistory::State s = stream_.StateAt(now);
    metrics_.stream_up.Set(s.usable ? 1 : 0);
    metrics_.stream_delivery_bound_seconds.Set(
        std::chrono::duration<double>(s.delivery_bound).count());
    for (const auto& [reason, n] : stream_.TakeFallbacks()) {
      metrics_.stream_fallbacks.Add({{"reason", reason}}).Increment(static_cast<double>(n));
    }
  }
  std::lock_guard lock(router_mu_);
  for (const auto& [app, t] : router_feedback_.AppTotals()) {
    auto [it, fresh] = app_windows_.try_emplace(app);
    AppWindows& w = it->second;
    if (fresh) {
      for (size_t i = 0; i < std::size(kWindowNames); ++i) {
        // One observation a second, with headroom.
        const size_t capacity = static_cast<size_t>(kWindowSpansMs[i] / 1000) + 16;
        w.rwsr.emplace_back(Millis(kWindowSpansMs[i]), capacity);
        w.dsr.emplace_back(Millis(kWindowSpansMs[i]), capacity);
        const prometheus::Labels l = {{"app", app}, {"window", kWindowNames[i]}};
        w.rwsr_gauges.push_back(&metrics_.router_rwsr.Add(l));
        w.dsr_gauges.push_back(&metrics_.router_dsr.Add(l));
      }
    }
    for (size_t i = 0; i < w.rwsr.size(); ++i) {
      w.rwsr[i].Observe(now, t.reads_replica, t.reads_all);
      w.dsr[i].Observe(now, t.degrade_successes, t.degrade_attempts);
      w.rwsr_gauges[i]->Set(w.rwsr[i].Ratio(now).value_or(std::nan("")));
      w.dsr_gauges[i]->Set(w.dsr[i].Ratio(now).value_or(std::nan("")));
    }
  }
}

}  // namespace lagwatch
