// The judge of one replica: what its probes answered, turned into the verdict routers read. It
// keeps what a verdict depends on between probes — the bounds, the applied position, the latest
// replication status, the hysteresis — and nothing else: no I/O, no clock (every time comes in
// the replies), no metrics. The prober (agent/prober.h) feeds it the probe session's replies
// (agent/probe_session.h) and publishes what it decides, so its tests state exact cases.
//
// A probe is judged in two steps, because between them the prober reports the server's role to
// the topology, which may decide that this server is the primary or that the primary moved:
//   Observe: the replies → an Assessment (bounds, status, the server's role), state updated;
//   Decide:  the assessment, judged against the current primary → a Judgement (verdict, record).
// Thread-compatible: owned by its prober, used on the prober's loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/assessment.h"
#include "agent/config.h"
#include "agent/health.h"
#include "base/clock.h"
#include "base/position.h"
#include "base/query_result.h"
#include "base/slave_status.h"
#include "base/snapshot.h"
#include "heartbeat/applied_witness.h"
#include "heartbeat/estimator.h"
#include "heartbeat/history.h"

namespace lagwatch {

// What one probe brought back (agent/probe_session.h makes it).
struct ProbeReplies {
  // The heartbeat query's reply, or why there is none (no connection, no answer in time).
  Result<QueryResult> reply = Status::Unavailable("no reply");
  // The replication status poll's reply, when this probe polled it.
  std::optional<Result<QueryResult>> status_reply;
  // The status poll was refused for a missing privilege.
  bool status_access_denied = false;
  // MySQL 8.0+'s applier signals (base/applier_status.h), when this probe asked for them: the
  // reply, or the server's refusal, whose error number is `applier_errno`. Diagnostics only: the
  // judge never reads them; the prober shows them.
  std::optional<Result<QueryResult>> applier_reply;
  unsigned applier_errno = 0;
  ProbeObservation obs;      // sent, received
  WallTime received_wall{};  // obs.received on the wall clock: what measured_at_ms states
  // No statement was sent: the session was waiting to reconnect (a failure not counted again).
  bool backing_off = false;
  // The positions kind changed during the probe (the server refused one): the position read
  // before is of another kind.
  bool forget_applied = false;
};

// What the rest of the agent knew as the probe's answer came in.
struct ProbeContext {
  PositionsKind positions = PositionsKind::kNone;  // the kind compared
  std::optional<uint32_t> primary_server_id;
  bool primary_known = true;
  // The primary whose channel is judged when the replica has several (ProbeInput).
  ChannelSource primary_source;
  // What the replica's own binary log proves it applied (binlog_stream.watch_writes:
  // heartbeat/applied_witness.h); used only while its server id is the one the probes read.
  std::optional<AppliedProof> witnessed;
  // While the primary is read-only: no bound proves the replica fresh past this (ProbeInput).
  std::optional<MonoTime> fresh_not_after;
  // The earliest moment another server can have been made writable (ReadOnlySightings), when
  // known: a replica kept healthy while the primary is unknown is published that far behind.
  std::optional<MonoTime> others_writable_after;
};

// The verdict of one probe (or of a crossing), and the record that states it.
struct Judgement {
  HealthTracker::Verdict previous;
  HealthTracker::Verdict verdict;
  HealthInput health;
  ReplicaSnapshot record;
  // Binary log coordinates: whether the replica's source turned to or from the primary with this
  // probe (its coordinates are compared, or not, from now on).
  bool chained_changed = false;
  // It answered again after being unreachable.
  bool back_from_unreachable = false;
  // What this probe changed that the operator should read in the log, in order: the replica's
  // source turned to or from the primary (chained_changed), the channel judged among several
  // changed (another one, none from the primary, or one again). `warn`: at warning level.
  struct Notice {
    bool warn = false;
    std::string text;
  };
  std::vector<Notice> notices;
};

class ReplicaJudge {
 public:
  // `replica` and `tier` as configured; `config` for the agent id and the health policy.
  ReplicaJudge(const ReplicaConfig& replica, const TierConfig& tier, const Config& config);

  // Step 1: the replies of one probe. Keeps the bounds it proves, the position it read and the
  // latest status (a failed poll keeps the one before). The first of a run of probes whose
  // heartbeat and position bounds disagree is marked `recheck` and keeps the bounds before it:
  // the caller probes again rather than decide on it.
  Assessment Observe(ProbeReplies replies, const ProbeContext& context, const HeartbeatLog& log,
                     const PositionHistory& history, const StreamHistory* stream = nullptr);

  // Step 2: the verdict on `a` (Observe's), judged against the current primary: `source_verified`
  // is false while the replica's source is in doubt or the topology is ambiguous. A replica with
  // several channels none of which replicates from the primary (a.status.channel_match kNone) is
  // unverified too, whatever its other channels do.
  // `received_wall` is the wall time of the answer.
  Judgement Decide(Assessment a, bool source_verified, WallTime received_wall);

  // The verdict the bound alone gives at `now` while a probe is still unanswered: the last
  // probe's view aged to now (the bound has only grown; no new proof of how far behind).
  // REQUIRES: has_fresh_bound().
  Judgement AtCrossing(MonoTime now, WallTime now_wall, bool primary_known, bool caught_up,
                       std::optional<MonoTime> others_writable_after = std::nullopt);

  // While a probe is unanswered: moves the kept bound's fresh_at later by what the primary did
  // since the last answer (Relocate, from the position that answer read, and from `witnessed`
  // as ProbeContext has it), and back to `fresh_not_after` (ProbeContext). The bound stays one.
  void Advance(MonoTime now, const PositionHistory& history, const StreamHistory* stream,
               const std::optional<AppliedProof>& witnessed = std::nullopt,
               std::optional<MonoTime> fresh_not_after = std::nullopt);

  // The primary moved (or this server stopped being it): what was judged against the old one is
  // forgotten; the last verdict is kept so that the next one still reports a change.
  void StartOver();
  // Its server is the primary: its own freshness is no bound as a replica.
  void ForgetBounds() {
    bounds_.reset();
    last_lower_.reset();
    lag_growing_ = false;
  }
  // A new connection (maybe to another server) or another positions kind: the position read
  // before proves nothing now.
  void ForgetApplied() {
    applied_.reset();
    server_id_.reset();
  }

  const std::optional<LagBounds>& bounds() const { return bounds_; }
  bool has_fresh_bound() const { return bounds_ && bounds_->fresh_at; }
  // The last two answers' lower bounds grew by at least half the time between them: the replica
  // is falling behind (a stalled applier), not catching up or holding a steady lag.
  bool lag_growing() const { return lag_growing_; }
  // The upper bound the last verdict judged (the crossings are scheduled from it).
  int64_t judged_delay_ms() const { return judged_delay_ms_; }
  const ReplicationStatus& status() const { return status_; }
  const HealthTracker& health() const { return health_; }
  bool chained() const { return chained_; }

 private:
  // `proof`'s position, if it is of the server the probes reach.
  std::optional<Position> Witnessed(const std::optional<AppliedProof>& proof) const;
  // The log lines for a change of chained_ (ChainedNotice) and of the judged channel (when a
  // status poll changed it: ChannelNotice).
  Judgement::Notice ChainedNotice(const Assessment& a) const;
  std::optional<Judgement::Notice> ChannelNotice(const Assessment& a);
  // The record of an answer (or a crossing) at `answered`: delay_ms, from `bounds` as h.delay_ms
  // has it, holds `to_stated` later (the next whole ms, measured_at_ms); delay_us is the same
  // bound at `answered` itself. `others_writable_after`: ProbeContext's, for a replica kept
  // healthy while the primary is unknown.
  ReplicaSnapshot Record(const HealthInput& h, int64_t delay_lower_ms, MonoTime answered,
                         WallTime answered_wall, std::chrono::nanoseconds to_stated,
                         const HealthTracker::Verdict& v,
                         std::optional<MonoTime> others_writable_after,
                         const std::optional<LagBounds>& bounds);

  // Constant after construction.
  const ReplicaConfig replica_;
  const TierConfig tier_;
  const int64_t agent_id_;
  const std::string cluster_;

  std::optional<LagBounds> bounds_;  // the last proven
  std::optional<Position> applied_;  // the replica's position as the last probe read it
  // The server's @@server_id as the probes on this connection read it.
  std::optional<int64_t> server_id_;
  ReplicationStatus status_;  // the latest known
  bool chained_ = false;      // binlog: the replica's source is not the primary
  // The channel the last status poll judged (channel_match kOnly: one channel, nothing to say).
  std::pair<std::string, ChannelMatch> channel_{"", ChannelMatch::kOnly};
  uint64_t last_seq_ = 0;
  std::optional<Micros> last_lower_;  // the last answer's lower bound (lag_growing)
  MonoTime last_lower_at_{};          // ... and when it came
  bool lag_growing_ = false;
  bool inconsistent_before_ = false;  // the last answered probe's bounds disagreed
  HealthTracker health_;
  HealthInput last_health_;  // the last probe's, which a crossing verdict starts from
  int64_t judged_delay_ms_ = 0;
};

}  // namespace lagwatch
