// The agent: owns and wires every part (docs/architecture.md). Start() brings them up in dependency
// order; Stop() (or the destructor) stops and joins them in reverse. Reload() applies a new
// configuration without touching replicas whose settings did not change.
// Thread-safe: Reload, Summary and the views may be called from any thread after Start().
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/config.h"
#include "agent/discovery.h"
#include "agent/heartbeat_reporter.h"
#include "agent/prober.h"
#include "agent/read_only_sightings.h"
#include "agent/reload.h"
#include "agent/tls_watch.h"
#include "agent/topology_monitor.h"
#include "agent/windows.h"
#include "base/clock.h"
#include "base/status.h"
#include "exporters/haproxy_agent_check.h"
#include "exporters/haproxy_runtime.h"
#include "exporters/http_server.h"
#include "exporters/metrics.h"
#include "exporters/redis_publisher.h"
#include "exporters/router_feedback.h"
#include "exporters/verdict_board.h"
#include "heartbeat/applied_witness.h"
#include "heartbeat/binlog_listener.h"
#include "heartbeat/history.h"
#include "heartbeat/sampler.h"
#include "heartbeat/stream_history.h"
#include "heartbeat/writer.h"

namespace lagwatch {

class Agent {
 public:
  explicit Agent(Config config, const Clock& clock = SystemClock::Get());
  ~Agent() { Stop(); }

  // Starts the HTTP listener (failing fast if it cannot bind), the writer, sampler and
  // publisher, waits up to one second for the first heartbeat acknowledgement so no replica is
  // judged before the primary was heard from, then starts the probers.
  Status Start();
  void Stop();

  // Applies `next`: replicas added are started, removed ones stopped (and dropped from
  // `<prefix>:replicas` and /metrics), changed ones (tier, weight, tier limits, health, slo)
  // restarted; unchanged replicas keep running untouched. Only `replicas`, `tiers`, `health` and
  // `slo` can change at run time: InvalidArgument naming the first other key that differs, and
  // nothing is changed.
  Status Reload(const Config& next);
  // Reads and validates `path`, then Reload()s it; a failure is logged and counted, and the
  // running configuration stays.
  Status ReloadFile(const std::string& path);

  // Periodic upkeep (about once a second): router RWSR/DSR windows.
  void Tick();

  // One line for systemd's STATUS= and the log: replicas healthy, primary, Redis.
  std::string Summary() const;
  // True once every replica has completed at least one probe.
  bool FirstRoundDone() const;
  // True if every prober finished a probe within `within` (for the systemd watchdog).
  bool ProbersAlive(Millis within) const;

 private:
  // A prober with prober_settings_. REQUIRES: mu_ held (or in the constructor).
  std::unique_ptr<ReplicaProber> MakeProber(const ReplicaConfig& r);
  void StartProber(ReplicaProber& p);  // REQUIRES: mu_ held
  // Switches the probed servers from `running` to `next` (a reload, or discovery): tells the
  // topology monitor first, stops removed probers, restarts changed ones (all of them when
  // `shared_changed`), starts new ones, and publishes the replica set. REQUIRES: mu_ held.
  struct ReloadCounts {
    int added = 0, removed = 0, restarted = 0, kept = 0;
  };
  ReloadCounts ApplyServers(const std::vector<ReplicaConfig>& next,
                            const std::vector<ReplicaConfig>& running, bool shared_changed);
  // `c`'s servers and the discovered replicas it does not name (with discovery's tier and
  // weight). REQUIRES: mu_ held.
  std::vector<ReplicaConfig> EffectiveServers(const Config& c) const;
  // The TLS watch follows `servers` (those with TLS enabled).
  void WatchTls(const std::vector<ReplicaConfig>& servers);
  // A listing of the primary's replicas (on the discovery thread): probers for replicas found,
  // none for those gone for the grace period.
  void OnListed(const std::vector<ListedReplica>& listed, int skipped);
  // The HTTP API's routes (docs/api.md), and those that serve a path and what is under it (the
  // HAProxy check, /check/<name>).
  std::map<std::string, HttpServer::Handler> Routes();
  std::map<std::string, HttpServer::RequestHandler> PrefixRoutes();
  // A HAProxy check's answer from the verdict board (exporters/haproxy_verdict.h); nullopt for a
  // server lagwatch does not know.
  std::optional<HaproxyAnswer> HaproxyAnswerFor(const CheckTarget& target) const;
  // Following the primary (agent/topology_monitor.h). MovePrimary runs under the monitor's lock:
  // it forgets the old primary's histories and moves the writer and the sampler. TopologyChanged
  // runs on a probe loop: the log, the metrics, an event and the replica set. Neither takes mu_
  // (a reload holding it waits for the loops).
  void MovePrimary(const Endpoint& primary);
  void TopologyChanged(const TopologyMonitor::Change& change);
  // A writable replica, or a replica whose source went into doubt: logged (and the latter counted).
  void TopologyNotice(const TopologyMonitor::Notice& n);
  // The members of `<prefix>:replicas`: every server but the primary.
  void PublishReplicaSet();
  // binlog_stream.watch_writes: a listener on every configured server but the primary, for the
  // writes made there (a new primary's first). One such write makes every server be probed at
  // once (UrgeProbes), so the move is seen a round trip after it; then at most one more per
  // cooldown (100 ms, doubling to 5 s while no move follows), so a replica written by mistake
  // costs little. What a replica's binary log proves it applied goes to witnesses_, for the
  // probes it does not answer.
  struct WriteWatch : ListenerSink {
    explicit WriteWatch(Metrics* metrics) : metrics(metrics) {}
    void StreamStarted(const Position&) override {}
    void StreamFailed(std::string_view reason, const Status&) override {
      metrics->write_watch_errors.Add({{"reason", std::string(reason)}}).Increment();
    }
    void StreamRead(uint64_t, uint64_t) override {}
    Metrics* const metrics;
    StreamHistory stream{StreamHistoryOptions{16}};  // its own: it bounds nothing
    std::mutex mu;
    std::string server;                 // GUARDED_BY(mu): the server followed
    std::optional<MonoTime> next_urge;  // GUARDED_BY(mu): none before this
    // How long a watch waits before a write there urges the probes again: from the first,
    // doubling to the last while no move follows.
    static constexpr Millis kFirstCooldown{100};
    static constexpr Millis kLastCooldown{5000};
    Millis cooldown = kFirstCooldown;  // GUARDED_BY(mu)
    // Last: stopped (its thread joined) before the members its callbacks use go away.
    std::unique_ptr<BinlogListener> listener;
  };
  // Watches every server of `servers` but the primary: follows it with a watch no longer wanted
  // (no thread started or stopped then), else starts one; stops the rest. REQUIRES: watch_mu_.
  void SyncWatchesLocked(const std::vector<Endpoint>& servers);
  // Every configured server, from the probers. REQUIRES: mu_ held.
  std::vector<Endpoint> ProbedServers() const;
  void OnOwnWrite(WriteWatch* w, MonoTime arrival);
  void UrgeProbes();
  void RefreshUrgers();  // REQUIRES: mu_ held
  // Every kSilenceWatch on the first probe loop: once the primary stops answering (PrimaryKnown),
  // every prober probes at once (ReadOnlySightings::PrimarySilent, which a prober that finds it
  // first calls too); from then on they probe every sampling interval.
  static constexpr Millis kSilenceWatch{10};
  void WatchSilence();
  MysqlTarget PrimaryTarget(const Endpoint& primary) const;

  const Clock& clock_;
  Metrics metrics_;
  // Every server's latest verdict for HAProxy; declared before the probers, which write it.
  VerdictBoard board_;
  // What the watched replicas' binary logs prove they applied (binlog_stream.watch_writes);
  // declared before the probers, which read it, and the watches, which write it.
  AppliedWitnesses witnesses_;
  ReadOnlySightings read_only_sightings_;  // written and read by the probers
  HeartbeatLog heartbeat_log_;
  PositionHistory positions_;
  StreamHistory stream_;
  // Constant after construction: the parts that cannot be reloaded read these.
  const Config initial_;
  RedisPublisher publisher_;
  HeartbeatReporter reporter_;
  HeartbeatWriter writer_;
  PositionSampler sampler_;
  std::unique_ptr<BinlogListener> listener_;  // when binlog_stream.enabled
  // Every configured server, as Reload last set them (for the replica set; not mu_: see above).
  std::mutex servers_mu_;
  std::vector<std::string> servers_;          // GUARDED_BY(servers_mu_)
  std::optional<std::string> shown_primary_;  // GUARDED_BY(servers_mu_): lagwatch_primary_info's
  bool was_ambiguous_ = false;  // GUARDED_BY(servers_mu_): the last change was to ambiguous
  TopologyMonitor topology_;
  std::unique_ptr<ReplicaDiscovery> discovery_;  // when discovery.enabled
  // binlog_stream.watch_writes. Not mu_: MovePrimary follows the primary with them, under the
  // monitor's lock, so that lock is never taken while watch_mu_ is held.
  std::mutex watch_mu_;
  Endpoint watch_primary_;                                      // GUARDED_BY(watch_mu_)
  std::vector<Endpoint> watch_servers_;                         // GUARDED_BY(watch_mu_)
  std::map<std::string, std::unique_ptr<WriteWatch>> watches_;  // GUARDED_BY(watch_mu_)
  bool watching_ = false;                                       // GUARDED_BY(watch_mu_)
  // What makes each prober probe at once (ReplicaProber::Urger); not mu_: a watch's thread calls
  // them while a reload may hold mu_ and stop that watch.
  std::mutex urge_mu_;
  std::vector<std::function<void()>> urgers_;  // GUARDED_BY(urge_mu_)

  RouterFeedback router_feedback_;
  TlsWatch tls_watch_;
  // Per router app: RWSR and DSR windows (1m, 5m) and their gauges.
  struct AppWindows {
    std::vector<CounterRatioWindow> rwsr, dsr;
    std::vector<prometheus::Gauge*> rwsr_gauges, dsr_gauges;
  };
  nlohmann::json RouterJson();
  std::mutex router_mu_;
  std::map<std::string, AppWindows> app_windows_;  // GUARDED_BY(router_mu_)

  // The threads the probers run on (probe.threads); declared before probers_ so they outlive
  // them.
  std::vector<std::unique_ptr<EventLoop>> loops_;
  size_t next_loop_ = 0;  // GUARDED_BY(mu_)

  mutable std::mutex mu_;                          // serialises Reload against readers of probers_
  Config config_;                                  // GUARDED_BY(mu_): the running configuration
  std::shared_ptr<const Config> prober_settings_;  // GUARDED_BY(mu_): ProberSettings(config_)
  std::map<std::string, std::unique_ptr<ReplicaProber>> probers_;  // GUARDED_BY(mu_), by id
  bool started_ = false;                                           // GUARDED_BY(mu_)
  DiscoveredSet discovered_;                                       // GUARDED_BY(mu_)
  std::unique_ptr<HttpServer> http_;
  // HAProxy: the runtime API pusher (haproxy.instances) and the agent-check port, when configured.
  std::unique_ptr<HaproxyPusher> haproxy_pusher_;
  std::unique_ptr<AgentCheckServer> agent_check_;
};

}  // namespace lagwatch
