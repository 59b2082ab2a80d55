// The prober of one replica: every probe.interval_ms it reads our heartbeat row and
// @@gtid_slave_pos in one autocommit round trip, every probe.status_interval_ms also SHOW SLAVE
// STATUS, turns that into lag bounds (heartbeat/estimator.h) and a verdict (agent/health.h), and
// hands the record to the publisher and the metrics.
//
// Each replica has its own connection and schedule (agent/schedule.h: a fixed tick plus a probe at
// the moment the bound would cross a tier limit), and every query has a deadline of
// probe.timeout_ms. Probers do not own threads: many share an EventLoop, whose timers start their
// probes and whose fd callbacks carry their queries forward (base/async_mysql.h), so a slow or
// hung replica never delays another and a thousand replicas cost a few threads.
// Thread-safe: Start/Stop and the views from any thread; the probe itself runs on the loop.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/assessment.h"
#include "agent/config.h"
#include "agent/health.h"
#include "agent/topology_monitor.h"
#include "agent/windows.h"
#include "base/async_mysql.h"
#include "base/clock.h"
#include "base/event_loop.h"
#include "base/server_flavor.h"
#include "base/slave_status.h"
#include "base/snapshot.h"
#include "heartbeat/estimator.h"
#include "heartbeat/heartbeat_sql.h"
#include "heartbeat/history.h"

namespace lagwatch {

class Metrics;
class RedisPublisher;
struct ReplicaMetrics;

// `config` without its replica list: what every prober of that configuration shares.
std::shared_ptr<const Config> ProberSettings(const Config& config);

class ReplicaProber {
 public:
  // `settings` is shared by every prober of one configuration (ProberSettings: the
  // configuration without its replica list, which a copy per prober would make memory grow with
  // the square of the fleet). `loop`, `log`, `history`, `topology`, `publisher` and `metrics`
  // must outlive the prober.
  //
  // Every configured server has a prober, the primary's too: each reports what its server says
  // about itself to `topology`, which decides which one is the primary. While its server is the
  // primary a prober only does that (no key, no replica series, state "primary"); while it is a
  // replica, it is judged against the current primary only (a new primary starts it over) and is
  // `unverified` while its source is in doubt.
  ReplicaProber(std::shared_ptr<const Config> settings, const ReplicaConfig& replica,
                EventLoop* loop, const HeartbeatLog* log, const PositionHistory* history,
                TopologyMonitor* topology, RedisPublisher* publisher, Metrics* metrics,
                const Clock& clock);
  ~ReplicaProber() { Stop(); }

  // Schedules the first probe `phase` from now (spreading replicas over the interval keeps a
  // loop's work even), then probes until Stop.
  void Start(Millis phase = Millis(0));
  // Cancels the schedule and any probe in flight; no callback refers to the prober afterwards.
  void Stop();

  const std::string& id() const { return id_; }
  const ReplicaConfig& replica() const { return replica_; }
  const TierConfig& tier() const { return tier_; }
  // What the replica is configured as, for the API.
  ReplicaInfo info() const {
    return {replica_.endpoint, tier_.name, replica_.weight, tier_.max_delay_ms, tier_.enabled};
  }
  // The latest verdict, record, status and error (cheap; `windows` is left empty).
  ReplicaView view() const;
  // The rolling-window statistics (O(samples in the windows): for the API, not hot paths).
  std::vector<WindowStats> windows() const;

  // True once the first probe (successful or not) has completed.
  bool probed_once() const;
  // When the last probe finished (construction time before the first).
  MonoTime last_probe_done() const;

 private:
  // One probe, in steps on the loop: OnTick starts it; the status poll, when due, goes first
  // (OnStatusReply), then the heartbeat query (OnProbeReply), so the record is published as soon
  // as the observation it states ends; Evaluate turns them into the verdict and publishes,
  // ScheduleNext sets the timer.
  void OnTick();
  // On a new connection, first asks which server it is (ServerFlavor), which decides the status
  // statement; logged, shown in the view and exported as lagwatch_server_info.
  void SendFlavorQuery();
  void OnFlavorReply(Result<QueryResult> r);
  // Puts flavor_, status_statement_ and the positions kind into the view and lagwatch_server_info.
  void ShowServer();
  // The positions kind to compare for the next probe: the sampler's (none until it decided, and
  // with positions "none"), unless this replica refused it. On a change: the view, the info
  // metric, and a warning when heartbeat bounds are wider than the tier's limit.
  void UpdatePositions();
  // Sends `sql` with the probe's deadline; a statement past it lingers (base/async_mysql.h).
  void Ask(const std::string& sql, AsyncMysqlConn::Callback then);
  // A statement that had passed its deadline ended (or was given up): probe at once.
  void OnLateAnswer();
  void SendQueries();  // the status poll if due, else the heartbeat query
  void SendStatus();
  void OnStatusReply(Result<QueryResult> s);
  void SendProbe();
  void OnProbeReply(Result<QueryResult> r);
  void Evaluate(Result<QueryResult> r, std::optional<Result<QueryResult>> status);
  // Following the primary: what the server said about itself goes to the topology (when it
  // changed); StartOver forgets what was judged against the previous primary; ActAsPrimary and
  // LeavePrimary switch between the primary's prober and a replica's.
  void ReportRole(const Assessment& a);
  void StartOver(uint64_t epoch);
  void ActAsPrimary();
  void LeavePrimary();
  // The replica's series, created when it is first judged as a replica.
  ReplicaMetrics& Metric();
  // The probe is done: for readiness and the watchdog.
  void MarkProbeDone();
  // Evaluate's steps after the assessment: the record, the metrics, the publication (key, event,
  // log lines), and the windows and view.
  // Also notes the bound judged (published_delay_ms_).
  ReplicaSnapshot Snapshot(const HealthInput& h, int64_t delay_lower_ms, MonoTime measured,
                           WallTime measured_wall, const HealthTracker::Verdict& v);
  void RecordMetrics(const Assessment& a, const ReplicaSnapshot& snap);
  void Publish(const Assessment& a, const ReplicaSnapshot& snap, const HealthTracker::Verdict& prev,
               const HealthTracker::Verdict& v);
  // The key (once a verdict can be stood by: measured, positions decided), and on a change the
  // event and the log line, `why` ending it.
  void PublishVerdict(const ReplicaSnapshot& snap, const HealthTracker::Verdict& prev,
                      const HealthTracker::Verdict& v, const std::string& why);
  void RecordWindows(const Assessment& a, const ReplicaSnapshot& snap);
  void ScheduleNext();
  // Verdicts at the crossing (agent/schedule.h, CrossingVerdictAt): while a probe is in flight,
  // a timer at the moment the bound passes the next limit (plus the grace); OnCrossing publishes
  // the verdict the bound alone gives, without waiting for the answer or its timeout.
  void ArmCrossing();
  void CancelCrossing();
  void OnCrossing();
  Micros SlowestRecentRtt() const;
  Millis ReconnectBackoff(int failures) const;

  // Constant after construction.
  const std::shared_ptr<const Config> settings_;
  const Config& config_;  // *settings_
  const ReplicaConfig replica_;
  const std::string id_;
  const TierConfig tier_;
  const HeartbeatSql sql_;
  // Every enabled tier's limit: the prober probes the moment its bound would cross one, so
  // delay_ms in Redis crosses each limit on time, whatever tier a router cares about.
  std::vector<int64_t> limits_ms_;
  const HeartbeatLog* const log_;
  const PositionHistory* const history_;
  TopologyMonitor* const topology_;
  RedisPublisher* const publisher_;
  Metrics* const metrics_;
  const Clock& clock_;

  EventLoop* const loop_;

  // Used only on the loop's thread.
  AsyncMysqlConn conn_;
  EventLoop::TimerId timer_ = 0;  // the next probe's, 0 while a probe is in flight or stopped
  EventLoop::TimerId crossing_timer_ = 0;  // OnCrossing's, while a probe is in flight
  bool in_flight_ = false;                 // a probe was sent and its verdict is not in yet
  MonoTime planned_{};                     // when the current probe was meant to start
  MonoTime next_tick_{};                   // the fixed-rate schedule's next slot
  MonoTime next_status_{};                 // when SHOW SLAVE STATUS is due next
  // The probe in flight.
  struct InFlight {
    MonoTime started{};  // when it started (the schedule's reference)
    bool poll_status = false;
    bool backing_off = false;  // no connection attempt: still waiting to reconnect
    ProbeObservation obs;
    WallTime received_wall{};  // obs.received on the wall clock: what measured_at_ms states
    // This probe's status poll's reply, kept while the heartbeat query runs.
    std::optional<Result<QueryResult>> status_reply;
  };
  InFlight probe_;
  ReplicaMetrics* m_ = nullptr;  // this replica's series; null while it is the primary
  uint64_t epoch_ = 0;           // the topology's epoch this prober's judgement belongs to
  bool acting_primary_ = false;  // its server is the primary
  bool probe_soon_ = false;      // the next probe goes at once (kMinProbeGap after this one)
  std::optional<ServerRole> last_role_;  // what was last reported to the topology
  // The topology as the last probe saw it after its report: whether to confirm an ambiguity at
  // the next report, and whether to probe faster (no one primary), without asking the monitor
  // again (each evaluation asks it twice: the epoch before, the view after the report).
  TopologyMonitor::View last_view_;
  // When a change of read_only not yet reported was first seen (the probe's start).
  std::optional<MonoTime> read_only_flip_seen_;
  HealthTracker health_;
  HealthInput last_health_;         // the last probe's, which a crossing verdict starts from
  int64_t published_delay_ms_ = 0;  // the upper bound the last verdict judged
  std::array<Micros, 8> rtts_{};    // the last answered probes' round trips (a ring)
  size_t next_rtt_ = 0;
  std::optional<LagBounds> bounds_;  // the last successful estimate
  uint64_t last_seq_ = 0;
  bool had_verdict_ = false;
  PositionsKind positions_ = PositionsKind::kNone;  // what this prober compares
  bool positions_shown_ = false;                    // positions_ is in the view and the metric
  // The sampler has decided the kind (or positions is "none"): until then a bound may be a
  // heartbeat band the positions will soon tighten, and no verdict is published on it.
  bool positions_decided_ = false;
  // The GTID kind this server turned out not to have (no such variable), on this connection.
  std::optional<PositionsKind> refused_;
  std::optional<Position> applied_;   // the replica's position as the last probe read it
  bool chained_ = false;              // binlog: the replica's source is not the primary
  bool warned_band_ = false;          // the heartbeat-only cost was logged
  int connect_failures_ = 0;          // consecutive probes that ended without a connection
  MonoTime catching_up_until_{};      // probed at the sampler's cadence until then, if unhealthy
  MonoTime reconnect_at_{};           // no new connection attempt before this
  bool replication_stopped_ = false;  // the last status poll found a thread not running
  bool flavor_checked_ = false;       // the flavor was asked on the current connection
  std::optional<ServerFlavor> flavor_;
  std::string status_statement_ = "SHOW SLAVE STATUS";

  // Refreshes the window gauges (at most once a second: summarising is O(samples)).
  void UpdateWindowGauges(MonoTime now);
  std::vector<WindowStats> WindowsLocked(MonoTime now) const;  // REQUIRES: mu_ held

  mutable std::mutex mu_;
  // Lag (ms) of every measured probe, and the SLAR verdict of every probe, over the longest
  // window; the shorter ones are read from the same rings.
  QuantileWindow lag_window_;      // GUARDED_BY(mu_)
  RatioWindow slar_window_;        // GUARDED_BY(mu_)
  MonoTime next_window_update_{};  // used only on the loop's thread
  ReplicaView view_;               // GUARDED_BY(mu_)
  bool probed_once_ = false;       // GUARDED_BY(mu_)
  MonoTime last_probe_done_;       // GUARDED_BY(mu_)
};

}  // namespace lagwatch
