// The pure half of a probe (the other half, ReplicaProber, does the I/O and publishes): what a
// replica answered, turned into lag bounds, its replication status and the input of the health
// verdict. No I/O, no clock: every time comes in the observation, so the tests state exact cases.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "agent/health.h"
#include "base/clock.h"
#include "base/query_result.h"
#include "base/slave_status.h"
#include "base/status.h"
#include "heartbeat/estimator.h"
#include "heartbeat/history.h"

namespace lagwatch {

// The primary counts as unknown when no heartbeat was acknowledged for this many intervals: the
// bounds can no longer advance, and growing lag would be the writer's, not the replica's.
inline constexpr int kPrimaryUnknownAfterIntervals = 3;
// However fast the sampler, a sample is only called overdue after this long.
inline constexpr Millis kMinSampleOverdue(20);

// How far apart position samples are sent before they leave a gap (PositionHistory::LastGap):
// one interval late by more than the overdue time that makes the primary unknown.
inline Millis SampleGapAfter(Millis sampler_interval) {
  return sampler_interval + std::max(sampler_interval, kMinSampleOverdue);
}

// Whether the source the bounds advance from answers at `now`. Positions are sampled every
// sampler interval, so once sampling works it decides: a failed or overdue sample counts at once,
// and a dead or hung primary is seen within one sampling deadline, before any replica's bound
// could cross a limit and make it look lagged. Overdue is by the time the sampler waited for the
// answer (PositionHistory::AnswerAwaited), so an agent kept from running does not take its own
// delay for the primary's, and publish a replica that lacks what the primary committed meanwhile
// as caught up with it (`primary_unknown` with delay_ms 0). Without positions (MySQL) heartbeat
// acknowledgements decide, over kPrimaryUnknownAfterIntervals heartbeat intervals.
bool PrimaryKnown(MonoTime now, const HeartbeatLog& log, const PositionHistory& history,
                  Millis heartbeat_interval, Millis sampler_interval);

// The server's @@read_only as a probe's reply gives it (its `ro` column), when it does.
std::optional<bool> ProbedReadOnly(const QueryResult& r);

// Whether bounds show the replica had applied everything the primary had when it was last heard
// from (its last acknowledged heartbeat's send time, or its last position sample).
bool CaughtUpWithPrimary(const std::optional<LagBounds>& bounds, const HeartbeatLog& log,
                         const PositionHistory& history);

// One probe's replies and what the prober knew before it.
struct ProbeInput {
  // The heartbeat query's reply (columns `seq`, and `pos` for the GTID kinds).
  Result<QueryResult> reply = Status::Unavailable("no reply");
  // SHOW SLAVE STATUS's reply, when this probe polled it.
  std::optional<Result<QueryResult>> status_reply;
  // The status poll was refused for a missing privilege (ER_SPECIFIC_ACCESS_DENIED_ERROR).
  bool status_access_denied = false;
  // The positions kind compared: `pos` of the reply (MariaDB, MySQL GTIDs) or the executed source
  // coordinates of the status reply (binlog; a probe of that kind always polls the status).
  PositionsKind positions = PositionsKind::kMariaDbGtid;
  // The primary's @@server_id: coordinates are compared only for a replica of that server.
  std::optional<uint32_t> primary_server_id;
  // The primary whose channel is judged when the status has several rows (base/slave_status.h,
  // ParseSlaveStatus): its server id (that one) and its configured host and port.
  ChannelSource primary_source;
  ProbeObservation obs;  // sent and received set; seq and position are filled in by Assess
  // From the answer to the moment the record states (the next whole ms of wall time,
  // ToNextWholeMs): delay_ms is the upper bound carried to that moment.
  std::chrono::nanoseconds to_stated{0};
  // What the prober knew before this probe.
  std::optional<LagBounds> bounds;
  std::optional<Position> previous_applied;  // the position the last probe read
  // What the replica's own binary log proves it applied since (ReplicaJudge: of this server).
  std::optional<Position> witnessed;
  // While the primary is read-only: no bound proves the replica fresh past this (FreshNotAfter).
  std::optional<MonoTime> fresh_not_after;
  ReplicationStatus status;
  // The primary's state and the replica's tier, as of the reply.
  bool primary_known = true;
  bool tier_enabled = true;
  std::optional<int64_t> max_delay_ms;
};

struct Assessment {
  // Ok, or why the probe failed; a DataError still had its parsable part used.
  Status probe_status;
  // Why the status poll failed, if it did (with a hint when a privilege is missing).
  std::optional<Status> status_error;
  bool status_polled = false;             // a status reply was parsed
  ProbeObservation obs;                   // with the seq and position read from the reply
  std::chrono::nanoseconds to_stated{0};  // ProbeInput's: the record states obs.received + this
  // ProbeContext's (agent/judge.h), set by ReplicaJudge::Observe: what the record states for a
  // replica kept healthy while the primary is unknown.
  std::optional<MonoTime> others_writable_after;
  // The bounds to keep: this probe's when it proved freshness, else the previous ones (a replica
  // never un-applies data).
  std::optional<LagBounds> bounds;
  // The reply was read (fully, or partly: a DataError), so its seq and bounds count.
  bool measured = false;
  bool inconsistent = false;  // position and heartbeat bounds disagreed; heartbeat bounds were used
  // Set by ReplicaJudge::Observe on the first of a run of inconsistent probes: not to be decided
  // or published; the replica is probed again at once (ReplicaJudge::Observe says why).
  bool recheck = false;
  // Why this probe's position was not used (malformed, went backwards, not comparable with the
  // primary's): heartbeat bounds only for this probe.
  std::optional<Status> position_error;
  // Binlog: the replica's source is not the primary (a chained replica, or not yet connected),
  // so its coordinates are not the primary's: heartbeat bounds.
  bool chained = false;
  std::optional<Position> applied;  // the position read, to compare the next probe's with
  // The server's @@server_id and @@read_only as this probe read them (nullopt: not read).
  std::optional<int64_t> server_id;
  std::optional<bool> read_only;
  // The latest known replication status: of the channel from the primary when the replica has
  // several (status.channel_match kNone: none is, and the replica is unverified).
  ReplicationStatus status;
  ChannelSource primary_source;  // what the channel was matched against (in.primary_source)
  HealthInput health;
};

// The replica's applied position of `kind`: parsed from the text of its position variable
// (ReplicaPositionVariable; the GTID kinds) or from the status's executed source coordinates
// (binlog). nullopt with no error: nothing to read (no text, no status, not a replica).
Result<std::optional<Position>> AppliedPosition(PositionsKind kind,
                                                const std::optional<std::string>& pos_text,
                                                const ReplicationStatus* status);

// Whether a replica's executed source coordinates are in the primary's binary log: its source's
// server id is the primary's (both known). Otherwise it is a chained replica, or not connected.
bool ReplicatesFromPrimary(const ReplicationStatus& status,
                           std::optional<int64_t> primary_server_id);

// Turns a probe's replies into the assessment. Reads `log`, `history` and `stream` (in-memory
// records of what the primary was sent and had; `stream` may be null), never the network or the
// clock.
Assessment Assess(const ProbeInput& in, const HeartbeatLog& log, const PositionHistory& history,
                  const StreamHistory* stream = nullptr);

}  // namespace lagwatch
