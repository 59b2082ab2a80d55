#include "agent/judge.h"

#include <utility>

namespace lagwatch {

ReplicaJudge::ReplicaJudge(const ReplicaConfig& replica, const TierConfig& tier,
                           const Config& config)
    : replica_(replica),
      tier_(tier),
      agent_id_(config.agent_id),
      cluster_(config.cluster),
      health_(HealthPolicy{config.health.recover_ratio, config.health.recover_probes,
                           config.health.keep_caught_up_when_primary_unknown}) {}

Assessment ReplicaJudge::Observe(ProbeReplies replies, const ProbeContext& context,
                                 const HeartbeatLog& log, const PositionHistory& history,
                                 const StreamHistory* stream) {
  if (replies.forget_applied) ForgetApplied();
  ProbeInput in;
  // The replies and the last position move in and back out: a probe copies no result set.
  in.status_access_denied = replies.status_access_denied;
  in.reply = std::move(replies.reply);
  in.status_reply = std::move(replies.status_reply);
  in.positions = context.positions;
  in.primary_server_id = context.primary_server_id;
  in.primary_source = context.primary_source;
  in.obs = replies.obs;
  in.to_stated = ToNextWholeMs(replies.received_wall);
  in.bounds = bounds_;
  in.previous_applied = std::move(applied_);
  in.witnessed = Witnessed(context.witnessed);
  in.fresh_not_after = context.fresh_not_after;
  in.status = status_;
  in.primary_known = context.primary_known;
  in.tier_enabled = tier_.enabled;
  in.max_delay_ms = tier_.max_delay_ms;
  Assessment a = Assess(in, log, history, stream);
  a.others_writable_after = context.others_writable_after;
  // The probe reads the heartbeat row (a subquery) before the position, in one statement: a
  // transaction the replica commits in between makes the row say it lacks a heartbeat that the
  // position says it has, both true at their own instants. Estimate takes that for broken
  // premises and falls back to the heartbeat alone, up to one heartbeat interval looser: a
  // replica excluded for nothing (`bench/accuracy`, sysbench: 503 ms against a truth of 0). The
  // first such probe is therefore not believed: it keeps nothing but the position and status it
  // read, and the caller probes again at once. A disagreement that holds on that probe too is a
  // premise broken for good (positions that cannot be trusted), and is decided as Estimate says.
  a.recheck = a.inconsistent && !inconsistent_before_;
  if (a.measured) inconsistent_before_ = a.inconsistent;
  if (!a.recheck) {
    bounds_ = a.bounds;
    if (a.measured && a.bounds) {
      // Falling behind at half real time or more since the answer before: lag that grows.
      const Micros lower = a.bounds->lower;
      const auto since = std::chrono::duration_cast<Micros>(a.obs.received - last_lower_at_);
      lag_growing_ = last_lower_ && lower > *last_lower_ && 2 * (lower - *last_lower_) >= since;
      last_lower_ = lower;
      last_lower_at_ = a.obs.received;
    }
    if (a.measured && a.obs.seq) last_seq_ = *a.obs.seq;
  }
  if (a.server_id) server_id_ = a.server_id;
  applied_ = a.applied ? std::move(a.applied) : std::move(in.previous_applied);
  status_ = a.status;  // the latest known, for the next probe whatever this one decides
  return a;
}

Judgement ReplicaJudge::Decide(Assessment a, bool source_verified, WallTime received_wall) {
  Judgement j;
  a.health.source_verified = source_verified && a.status.channel_match != ChannelMatch::kNone;
  if (a.status_polled && a.chained != chained_) {
    chained_ = a.chained;
    j.chained_changed = true;
    j.notices.push_back(ChainedNotice(a));
  }
  if (auto n = a.status_polled ? ChannelNotice(a) : std::nullopt) j.notices.push_back(*n);
  j.previous = health_.last();
  j.verdict = health_.Update(a.health);
  j.health = a.health;
  last_health_ = a.health;
  j.back_from_unreachable = a.health.reachable && j.previous.state == ReplicaState::kUnreachable;
  // Stated at the next whole ms after the answer, where delay_ms holds (ProbeInput::to_stated).
  j.record = Record(a.health, a.probe_status.ok() && a.bounds ? ToMillis(a.bounds->lower) : 0,
                    a.obs.received, received_wall, a.to_stated, j.verdict, a.others_writable_after,
                    a.bounds);
  return j;
}

void ReplicaJudge::Advance(MonoTime now, const PositionHistory& history,
                           const StreamHistory* stream,
                           const std::optional<AppliedProof>& witnessed,
                           std::optional<MonoTime> fresh_not_after) {
  if (has_fresh_bound()) {
    bounds_ = FreshNotAfter(
        RelocateFromKnown(*bounds_, applied_, Witnessed(witnessed), now, history, stream),
        fresh_not_after);
  }
}

std::optional<Position> ReplicaJudge::Witnessed(const std::optional<AppliedProof>& proof) const {
  if (!proof || !server_id_ || *server_id_ != int64_t{proof->server_id}) return std::nullopt;
  return proof->applied;
}

Judgement ReplicaJudge::AtCrossing(MonoTime now, WallTime now_wall, bool primary_known,
                                   bool caught_up, std::optional<MonoTime> others_writable_after) {
  Judgement j;
  HealthInput h = last_health_;
  // Stated at the next whole ms, as a probe's record is.
  const auto to_stated = ToNextWholeMs(now_wall);
  h.delay_ms = CeilMillis(bounds_->UpperAt(now + to_stated));
  h.delay_lower_ms.reset();
  h.primary_known = primary_known;
  h.caught_up_with_primary = caught_up;
  j.previous = health_.last();
  j.verdict = health_.Update(h);
  j.health = h;
  j.record = Record(h, 0, now, now_wall, to_stated, j.verdict, others_writable_after, bounds_);
  return j;
}

namespace {

std::string IdOrUnknown(std::optional<int64_t> id) {
  return id && *id ? std::to_string(*id) : std::string("unknown");
}

}  // namespace

Judgement::Notice ReplicaJudge::ChainedNotice(const Assessment& a) const {
  const std::string id = replica_.endpoint.Id();
  if (!chained_) {
    return {false, "replica " + id + " replicates from the primary again: coordinates compared"};
  }
  const ReplicationStatus& st = a.status;
  return {true, "replica " + id + " replicates from " + st.source_host + ":" +
                    (st.source_port ? std::to_string(*st.source_port) : "?") + " (server_id " +
                    (st.source_server_id ? std::to_string(*st.source_server_id) : "?") +
                    "), not from the primary (server_id " +
                    IdOrUnknown(a.primary_source.server_id) +
                    "): its binary log coordinates are not the primary's; heartbeat bounds only"};
}

std::optional<Judgement::Notice> ReplicaJudge::ChannelNotice(const Assessment& a) {
  const ReplicationStatus& st = a.status;
  std::pair<std::string, ChannelMatch> channel{st.channel_name, st.channel_match};
  if (st.channel_match == ChannelMatch::kOnly) channel = {"", ChannelMatch::kOnly};
  if (channel == channel_) return std::nullopt;
  channel_ = channel;
  const std::string id = replica_.endpoint.Id();
  if (st.channel_match == ChannelMatch::kOnly) {
    return Judgement::Notice{false, "replica " + id + " has one replication channel: judged by it"};
  }
  const ChannelSource& p = a.primary_source;
  const std::string primary = " (server_id " + IdOrUnknown(p.server_id) + ", configured as " +
                              p.host + ":" + std::to_string(p.port) + ")";
  if (st.channel_match == ChannelMatch::kNone) {
    return Judgement::Notice{true, "replica " + id + ": " + DescribeChannel(st) + primary +
                                       ": unverified until one does"};
  }
  return Judgement::Notice{false, "replica " + id + ": " + DescribeChannel(st) + primary +
                                      ": judged by it, the others ignored"};
}

void ReplicaJudge::StartOver() {
  ForgetBounds();
  inconsistent_before_ = false;
  applied_.reset();
  chained_ = false;
  health_.Reset();
  last_health_ = HealthInput{};
  judged_delay_ms_ = 0;
}

ReplicaSnapshot ReplicaJudge::Record(const HealthInput& h, int64_t delay_lower_ms,
                                     MonoTime answered, WallTime answered_wall,
                                     std::chrono::nanoseconds to_stated,
                                     const HealthTracker::Verdict& v,
                                     std::optional<MonoTime> others_writable_after,
                                     const std::optional<LagBounds>& bounds) {
  const MonoTime measured = answered + to_stated;  // where delay_ms holds
  const WallTime measured_wall = answered_wall + to_stated;
  ReplicaSnapshot snap;
  snap.id = replica_.endpoint.Id();
  if (bounds_ && h.delay_ms) judged_delay_ms_ = *h.delay_ms;
  snap.delay_ms = h.delay_ms.value_or(0);
  // Kept healthy while the primary is unknown (health.primary_unknown's default): it had all
  // the primary had when last heard from, and the bound grows only with the silence. So it lacks
  // only what another server took since it was made writable (a failover not yet seen), which
  // no probe found before the last one that found it read-only: published as the time since
  // then (0 when no other server answers), not the silence, so that a router comparing delay_ms
  // with the limit decides as one reading healthy while that stays under it (every server is
  // probed every sampling interval while no server is writable).
  const bool primary_unknown_kept = v.state == ReplicaState::kPrimaryUnknown && v.healthy;
  if (primary_unknown_kept) {
    snap.delay_ms = others_writable_after && measured > *others_writable_after
                        ? CeilMillis(measured - *others_writable_after)
                        : 0;
  }
  snap.delay_lower_ms = delay_lower_ms;
  snap.state = StateName(v.state);
  snap.healthy = v.healthy;
  snap.tier = tier_.name;
  snap.weight = replica_.weight;
  snap.max_delay_ms = tier_.max_delay_ms;
  snap.seq = last_seq_;
  snap.measured_at_ms = UnixMillis(measured_wall);  // the moment delay_ms refers to
  // The same bound at the answer's own microsecond, not carried to the next whole ms: the carry
  // (0.5 ms on average) is also what a replica catching up at ten times real time applies of
  // ten times as much history, which a reader comparing at the finer moment does not count.
  if (bounds && bounds->fresh_at && h.delay_ms && !primary_unknown_kept) {
    // To the nanosecond: LagBounds::UpperAt truncates to whole µs.
    snap.delay_us = std::max<int64_t>(0, CeilMicros(answered - *bounds->fresh_at));
    snap.measured_at_us = UnixMicros(answered_wall);
  } else {
    snap.delay_us = snap.delay_ms * 1000;
    snap.measured_at_us = snap.measured_at_ms * 1000;
  }
  snap.agent_id = agent_id_;
  snap.cluster = cluster_;
  // The position the last probe read (positions only move forward, so an earlier read is still a
  // proof). Binary log coordinates of a chained replica are its source's, not the primary's.
  if (applied_ && !(chained_ && applied_->kind() == PositionsKind::kBinlog)) {
    snap.position = applied_->ToString();
    snap.position_kind = PositionsKindName(applied_->kind());
  }
  snap.measured_mono = measured;
  return snap;
}

}  // namespace lagwatch
