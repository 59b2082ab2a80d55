// The prober of one replica: every probe.interval_ms it reads our heartbeat row and
// @@gtid_slave_pos in one autocommit round trip, every probe.status_interval_ms also SHOW SLAVE
// STATUS, turns that into lag bounds (heartbeat/estimator.h) and a verdict (agent/health.h), and
// hands the record to the publisher and the metrics. Three parts do the work: the probe session
// (the I/O, agent/probe_session.h), the judge (replies to verdict, pure: agent/judge.h) and the
// role reporter (what the server says about itself, for following the primary:
// agent/role_report.h); the prober schedules, connects them and publishes.
//
// Each replica has its own connection and schedule (agent/schedule.h: a fixed tick plus a probe at
// the moment the bound would cross a tier limit), and every query has a deadline of
// probe.timeout_ms. Probers do not own threads: many share an EventLoop, whose timers start their
// probes and whose fd callbacks carry their queries forward (base/async_mysql.h), so a slow or
// hung replica never delays another and a thousand replicas cost a few threads.
// Thread-safe: Start/Stop and the views from any thread; the probe itself runs on the loop.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/assessment.h"
#include "agent/config.h"
#include "agent/judge.h"
#include "agent/probe_session.h"
#include "agent/read_only_sightings.h"
#include "agent/role_report.h"
#include "agent/topology_monitor.h"
#include "agent/windows.h"
#include "base/clock.h"
#include "base/event_loop.h"
#include "base/snapshot.h"
#include "heartbeat/history.h"

namespace lagwatch {

class Metrics;
class RedisPublisher;
class VerdictBoard;
struct ReplicaMetrics;

// `config` without its replica list: what every prober of that configuration shares.
std::shared_ptr<const Config> ProberSettings(const Config& config);

class ReplicaProber {
 public:
  // `settings` is shared by every prober of one configuration (ProberSettings: the
  // configuration without its replica list, which a copy per prober would make memory grow with
  // the square of the fleet). `loop`, `log`, `history`, `stream` (null: no binary log stream),
  // `witnesses` (null: none; what the replicas' own binary logs prove they applied),
  // `topology`, `publisher`, `board` (null: none; it gets every record Redis gets, for HAProxy)
  // and `metrics` must outlive the prober. `certificate_seen` (may be
  // empty) is told the server certificate's expiry (unix seconds) at every new TLS connection,
  // on the prober's loop.
  //
  // Every configured server has a prober, the primary's too: each reports what its server says
  // about itself to `topology`, which decides which one is the primary. While its server is the
  // primary a prober only does that (no key, no replica series, state "primary"); while it is a
  // replica, it is judged against the current primary only (a new primary starts it over) and is
  // `unverified` while its source is in doubt.
  ReplicaProber(std::shared_ptr<const Config> settings, const ReplicaConfig& replica,
                EventLoop* loop, const HeartbeatLog* log, const PositionHistory* history,
                const StreamHistory* stream, const AppliedWitnesses* witnesses,
                ReadOnlySightings* sightings, TopologyMonitor* topology, RedisPublisher* publisher,
                VerdictBoard* board, Metrics* metrics, const Clock& clock,
                std::function<void(const std::string& server, int64_t not_after_unix)>
                    certificate_seen = nullptr);
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

  // A callable that makes the prober probe at once, unless a probe is in flight, from any thread
  // (binlog_stream.watch_writes: a write was seen on a server that is not the primary). It may
  // outlive the prober: once Stop has run it does nothing.
  std::function<void()> Urger();

  // True once the first probe (successful or not) has completed.
  bool probed_once() const;
  // When the last probe finished (construction time before the first).
  MonoTime last_probe_done() const;

 private:
  // One probe: OnTick starts it (the session's I/O, agent/probe_session.h), OnReplies judges it
  // (agent/judge.h) and hands the verdict to Apply: the metrics, the key, the event and the log,
  // the windows and the view; ScheduleNext sets the timer for the next one.
  void OnTick();
  void OnReplies(ProbeReplies replies);
  // A statement that had passed its deadline ended (or was given up): probe at once.
  void OnLateAnswer();
  // Probes at once instead of at the planned time; nothing while a probe is in flight.
  void ProbeNow();
  // The primary whose channel is judged: its server id as sampled, its configured address.
  ChannelSource PrimarySource() const;
  // The session's facts (flavor, status statement, positions kind, whether the applier signals
  // are asked) into the view and lagwatch_server_info.
  void ShowServer(const ServerFacts& facts);
  // MySQL 8.0+'s applier signals (base/applier_status.h): a probe's reply to them, or the
  // server's refusal (`server_errno`), read, counted and logged (NoteApplier); what is shown
  // into the view and the replica's applier series, those of the channel judged (ShowApplier).
  // Diagnostics only: nothing here reaches the judge.
  void NoteApplier(Result<QueryResult> reply, unsigned server_errno);
  void ShowApplier(ApplierView applier);
  // Following the primary, once the role is reported: StartOver forgets what was judged against
  // the previous primary; ActAsPrimary and LeavePrimary switch between the primary's prober and a
  // replica's. True when this probe is not judged as a replica's.
  bool FollowTopology(const TopologyMonitor::View& view);
  void StartOver(uint64_t epoch);
  void ActAsPrimary();
  void LeavePrimary();
  // The replica's series, created when it is first judged as a replica.
  ReplicaMetrics& Metric();
  // The probe is done: for readiness and the watchdog.
  void MarkProbeDone();
  // A probe's verdict, applied: what it counted and logged (NoteAssessment), the metrics, the
  // publication (key, event, log lines), and the windows and view.
  void NoteAssessment(const Assessment& a, bool backing_off);
  void RecordMetrics(const Assessment& a, const Judgement& j);
  void Publish(const Assessment& a, const Judgement& j, bool backing_off);
  // The key (once a verdict can be stood by: measured, positions decided), and on a change the
  // event and the log line, `why` ending it.
  void PublishVerdict(const Judgement& j, const std::string& why);
  void RecordWindows(const Assessment& a, const Judgement& j);
  void ScheduleNext();
  // Verdicts at the crossing (agent/schedule.h, CrossingVerdictAt): while a probe is in flight, or
  // while the last answer proved the replica lagging (ProvenLagging: then at the crossing itself),
  // a timer at the moment the bound passes the next limit (plus what is left of the grace for the
  // probe in flight); OnCrossing publishes
  // the verdict the bound alone gives, without waiting for the answer or its timeout. At the
  // crossing the bound is first advanced by what the primary did since the last answer
  // (ReplicaJudge::Advance); if that moves the crossing later, the timer waits for it.
  std::optional<MonoTime> NextCrossing() const;  // REQUIRES: judge_.has_fresh_bound()
  // The last answer proved the replica lagging toward its next limit (agent/schedule.h), and its
  // lag growing (a replica catching up is not: its bound at the crossing would be loose): its
  // crossing is published from the timer even with no probe in flight.
  bool ProvenLagging() const;
  // While the primary is read-only: the earliest moment a write can have gone to another server
  // (ReadOnlySightings, and the last sample that found the primary writable); nullopt while it
  // is writable, or when nothing is known of where else writes can go.
  std::optional<MonoTime> ReadOnlyHorizon(MonoTime now) const;
  // ReadOnlySightings::WritableNotBefore for this replica, against the current primary; and
  // that moment when it is one (neither "none answers" nor "one was never read-only").
  MonoTime WritableElsewhereNotBefore(MonoTime now) const;
  std::optional<MonoTime> OthersWritableAfter(MonoTime now) const;
  // Whether the primary answers at `now` (PrimaryKnown, with this agent's intervals).
  bool PrimaryKnownAt(MonoTime now) const;
  // What the replica's own binary log proves it applied (nothing without witnesses_).
  std::optional<AppliedProof> Witnessed() const;
  void ArmCrossing();
  void CancelCrossing();
  void OnCrossing();
  // Probes that follow commits (probe.after_commit_ms): when the newest transaction the stream
  // delivered calls for a probe (FollowCommitAt; nullopt: none, or off). The stream is looked at
  // every after_commit_ms (ArmFollow); OnFollow moves the next probe earlier when it is due.
  std::optional<MonoTime> FollowAt() const;
  // How far apart they are for this replica (FollowStep); nullopt: none.
  std::optional<Millis> FollowEvery() const;
  void ArmFollow();
  void OnFollow();
  Micros SlowestRecentRtt() const;
  // How long an answer merely on its way is waited for (CrossingGrace): at a crossing, and by
  // AwaitRound for the others' answers of a round.
  Millis AnswerGrace() const;
  // A probe's replies held before they are judged (AwaitRound).
  struct Held {
    ProbeReplies replies;
    bool primary_known = true;  // as they came (PrimaryKnownAt)
    Millis waited{0};           // how long AwaitRound has held them
    bool urged = false;         // they found the primary silent first: every server was urged
  };
  // While no one server is writable (the primary silent, or read-only), nothing proves a replica
  // fresher than the time since the other servers were last found read-only (ReadOnlySightings;
  // ReplicaJudge::Record, ReadOnlyHorizon), and they are probed together, every sampling interval
  // or at each sample that finds the primary read-only. So an answer waits before it is judged,
  // for at most the grace an answer on its way gets at a crossing, while the others' probes of the
  // same round can still raise that floor: a record then says about a round trip, not a round.
  // True when it holds `held` (Judge runs later).
  bool AwaitRound(Held& held);
  // Judges a probe's replies and publishes the verdict; `primary_known` as they came.
  void Judge(ProbeReplies replies, bool primary_known);

  // Constant after construction.
  const std::shared_ptr<const Config> settings_;
  const Config& config_;  // *settings_
  const ReplicaConfig replica_;
  const std::string id_;
  const TierConfig tier_;
  // Every enabled tier's limit: the prober probes the moment its bound would cross one, so
  // delay_ms in Redis crosses each limit on time, whatever tier a router cares about.
  std::vector<int64_t> limits_ms_;
  const HeartbeatLog* const log_;
  const PositionHistory* const history_;
  const StreamHistory* const stream_;
  const AppliedWitnesses* const witnesses_;
  // What each server's probes found, read-only or not (written here, read by every prober);
  // never null.
  ReadOnlySightings* const sightings_;
  TopologyMonitor* const topology_;
  RedisPublisher* const publisher_;
  VerdictBoard* const board_;
  Metrics* const metrics_;
  const Clock& clock_;

  EventLoop* const loop_;
  // Up from Start to Stop, set on loop_: what Urger's posted tasks check.
  std::shared_ptr<std::atomic<bool>> live_ = std::make_shared<std::atomic<bool>>(false);

  // Used only on the loop's thread.
  ProbeSession session_;
  ReplicaJudge judge_;
  RoleReporter roles_;
  EventLoop::TimerId timer_ = 0;  // the next probe's, 0 while a probe is in flight or stopped
  EventLoop::TimerId crossing_timer_ = 0;  // OnCrossing's, while a probe is in flight
  EventLoop::TimerId follow_timer_ = 0;    // OnFollow's, with probe.after_commit_ms
  EventLoop::TimerId await_timer_ = 0;     // AwaitRound's, while it holds held_
  std::optional<Held> held_;
  bool in_flight_ = false;       // a probe was sent and its verdict is not in yet
  MonoTime planned_{};           // when the current probe was meant to start
  MonoTime probe_started_{};     // when it started (the schedule's reference)
  MonoTime next_tick_{};         // the fixed-rate schedule's next slot
  MonoTime next_status_{};       // when the replication status is due next
  ReplicaMetrics* m_ = nullptr;  // this replica's series; null while it is the primary
  uint64_t epoch_ = 0;           // the topology's epoch this prober's judgement belongs to
  bool acting_primary_ = false;  // its server is the primary
  bool probe_soon_ = false;      // the next probe goes at once (kMinProbeGap after this one)
  bool primary_known_ = true;    // as the last answer found it (PrimaryKnownAt)
  // The topology as the last probe saw it after its report: whether to confirm an ambiguity at
  // the next report, and whether to probe faster (no one primary).
  TopologyMonitor::View last_view_;
  std::array<Micros, 8> rtts_{};  // the last answered probes' round trips (a ring)
  size_t next_rtt_ = 0;
  bool had_verdict_ = false;
  MonoTime catching_up_until_{};      // probed at the sampler's cadence until then, if unhealthy
  bool replication_stopped_ = false;  // the last status poll found a thread not running
  bool applier_shown_ = false;        // the view shows applier signals read (not a reason)
  std::string applier_why_not_;       // the session's facts as ShowServer last showed them

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
