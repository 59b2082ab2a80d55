#include "agent/probe_session.h"

#include <algorithm>

#include "base/log.h"
#include "base/mysql_errors.h"

namespace lagwatch {
namespace {

constexpr Millis kMaxReconnectBackoff(500);
// How long a statement past its deadline is still waited for before the connection is given up:
// a hung replica is measured again the moment it answers, and costs one connection attempt per
// this long, not a few a second (each a handshake the server counts as interrupted).
constexpr Millis kLinger(10'000);

}  // namespace

ProbeSession::ProbeSession(EventLoop* loop, MysqlTarget target, const Config& config,
                           const TierConfig& tier, const PositionHistory* history, DoneFn done,
                           LateFn late, FactsFn facts, CertificateFn certificate)
    : loop_(loop),
      config_(config),
      tier_(tier),
      id_(target.endpoint.Id()),
      sql_(config.heartbeat, config.agent_id),
      history_(history),
      done_(std::move(done)),
      late_(std::move(late)),
      facts_fn_(std::move(facts)),
      certificate_fn_(std::move(certificate)),
      conn_(loop, std::move(target)) {}

Millis ProbeSession::ReconnectBackoff(int failures) const {
  // interval, 2x, 4x ... capped: a dead server is retried a few times a second, not hammered,
  // and a revived one is found again within kMaxReconnectBackoff.
  Millis b(config_.probe.interval_ms);
  for (int i = 1; i < failures && b < kMaxReconnectBackoff; ++i) b *= 2;
  return std::min(b, kMaxReconnectBackoff);
}

bool ProbeSession::UpdatePositions() {
  std::optional<PositionsKind> kind =
      config_.positions == PositionsKind::kNone ? PositionsKind::kNone : history_->kind();
  const bool decided = kind.has_value();
  positions_decided_ = decided;
  if (kind && kind == refused_) kind = PositionsKind::kNone;
  const PositionsKind next = kind.value_or(PositionsKind::kNone);
  if (next == facts_.positions && facts_told_) return false;
  const bool changed = next != facts_.positions;
  facts_.positions = next;
  facts_told_ = true;
  TellFacts();
  if (!decided || next != PositionsKind::kNone || warned_band_ || !tier_.max_delay_ms ||
      config_.heartbeat.interval_ms <= *tier_.max_delay_ms) {
    return changed;
  }
  warned_band_ = true;
  // Heartbeat bounds are a band one heartbeat interval wide: wider than the tier's limit, a
  // replica with no lag can read as over it.
  Log(LogLevel::kWarn,
      "replica " + id_ + ": no positions, so its bounds are a band up to " +
          "heartbeat.interval_ms = " + std::to_string(config_.heartbeat.interval_ms) +
          " ms wide, above " + tier_.name + "'s limit of " + std::to_string(*tier_.max_delay_ms) +
          " ms: it can read as over the limit at no lag; lower heartbeat.interval_ms");
  return changed;
}

ProbeSession::Start ProbeSession::Begin(MonoTime started, bool poll_status,
                                        std::optional<ChannelSource> judged_source,
                                        bool applier_due) {
  Start start;
  replies_ = ProbeReplies{};
  judged_source_ = std::move(judged_source);
  applier_due_ = applier_due;
  // A new connection may be to another server (restarted, upgraded, failed over): its flavor is
  // asked again before the probe, and what the old one had applied or refused says nothing
  // about it.
  if (!conn_.connected()) {
    flavor_checked_ = false;
    refused_.reset();
    applier_.Reset();
    start.forget_applied = true;
  }
  if (UpdatePositions()) start.forget_applied = true;  // positions of another kind
  // With binary log coordinates every probe reads them from the status.
  poll_status_ = poll_status || facts_.positions == PositionsKind::kBinlog;
  replies_.backing_off = !conn_.connected() && started < reconnect_at_;
  if (replies_.backing_off || conn_.lingering()) {
    // No new statement: waiting to reconnect, or still for the answer to an earlier one (which
    // probes again the moment it comes: `late`).
    replies_.obs.sent = replies_.obs.received = started;
    replies_.received_wall = loop_->clock().WallNow();
    replies_.reply = replies_.backing_off
                         ? Status::Unavailable("waiting to reconnect to replica " + id_)
                         : Status::DeadlineExceeded("still no answer from replica " + id_);
    Finish();
    return start;
  }
  if (!flavor_checked_) {
    step_ = Step::kFlavor;
    Ask(kServerFlavorQuery);
  } else {
    SendStatusOrHeartbeat();
  }
  return start;
}

void ProbeSession::Ask(const std::string& sql) {
  conn_.Query(
      sql, loop_->clock().Now() + Millis(config_.probe.timeout_ms),
      [this](Result<QueryResult> r) { OnReply(std::move(r)); }, kLinger, [this] { late_(); });
}

void ProbeSession::OnReply(Result<QueryResult> r) {
  switch (step_) {
    case Step::kFlavor:
      return OnFlavor(std::move(r));
    case Step::kStatus:
      return OnStatus(std::move(r));
    case Step::kAllStatus:
      return OnAllStatus(std::move(r));
    case Step::kApplier:
      return OnApplier(std::move(r));
    case Step::kHeartbeat:
      return OnHeartbeat(std::move(r));
    case Step::kIdle:
      return;
  }
}

void ProbeSession::OnFlavor(Result<QueryResult> r) {
  if (!r.ok() && (!conn_.connected() || conn_.lingering())) {
    // No connection, or no answer in time: the probe failed as a probe would have (and is
    // retried as one).
    replies_.obs.sent = loop_->clock().Now();
    OnHeartbeat(std::move(r));
    return;
  }
  // A server that answers but not this (or not usefully) is probed all the same, as an unknown
  // flavor: its status is polled with the statement every server but MySQL 8.4+ has.
  flavor_checked_ = true;
  if (certificate_fn_) {
    if (auto not_after = conn_.peer_not_after_unix()) certificate_fn_(*not_after);
  }
  ServerFlavor flavor;
  if (r.ok()) {
    if (auto parsed = ParseServerFlavor(*r); parsed.ok()) flavor = parsed.value();
  }
  applier_.SetFlavor(flavor);
  bool changed = UpdateApplierFacts();
  if (facts_.flavor != flavor) {
    facts_.flavor = flavor;
    facts_.status_statement = ReplicaStatusStatement(flavor);
    Log(LogLevel::kInfo, "replica " + id_ + " is " + flavor.Describe() +
                             "; replication status by " + facts_.status_statement);
    changed = true;
  }
  if (changed) TellFacts();
  SendStatusOrHeartbeat();
}

bool ProbeSession::UpdateApplierFacts() {
  if (facts_.applier_why_not == applier_.why_not()) return false;
  facts_.applier_why_not = applier_.why_not();
  return true;
}

void ProbeSession::SendStatusOrHeartbeat() {
  if (!poll_status_) {
    SendApplierOrHeartbeat();
    return;
  }
  replies_.obs.sent = loop_->clock().Now();
  step_ = Step::kStatus;
  Ask(facts_.status_statement);
}

void ProbeSession::OnStatus(Result<QueryResult> s) {
  if (!s.ok() && (!conn_.connected() || conn_.lingering())) {
    // No connection, or no answer in time: the probe failed as a probe would have.
    OnHeartbeat(std::move(s));
    return;
  }
  // MySQL 8.4 removed SHOW SLAVE STATUS; a server whose version said nothing useful gets it first.
  if (const char* retry =
          s.ok() ? nullptr : ReplicaStatusRetry(facts_.status_statement, conn_.last_errno())) {
    facts_.status_statement = retry;
    Log(LogLevel::kInfo, "replica " + id_ + " does not know SHOW SLAVE STATUS: using " +
                             facts_.status_statement + " from now on");
    TellFacts();
    // Back through here; it is not retried again (ReplicaStatusRetry has nothing after SHOW
    // REPLICA STATUS).
    Ask(facts_.status_statement);
    return;
  }
  replies_.status_access_denied = !s.ok() && conn_.last_errno() == kErSpecificAccessDenied;
  const bool all = s.ok() && judged_source_ && facts_.flavor &&
                   NeedsAllConnections(*s, *facts_.flavor, *judged_source_);
  // The heartbeat query goes last, so the record is published the moment its answer is in.
  replies_.status_reply = std::move(s);
  if (all != reading_all_) {
    reading_all_ = all;
    Log(LogLevel::kInfo,
        "replica " + id_ +
            (all ? ": its default replication connection is absent or not from the primary: "
                   "every connection read by " +
                       std::string(kAllConnectionsStatusStatement) + " as well"
                 : ": its default replication connection is from the primary again"));
  }
  if (all) {
    step_ = Step::kAllStatus;
    Ask(kAllConnectionsStatusStatement);
    return;
  }
  SendApplierOrHeartbeat();
}

void ProbeSession::OnAllStatus(Result<QueryResult> r) {
  if (!r.ok() && (!conn_.connected() || conn_.lingering())) {
    OnHeartbeat(std::move(r));
    return;
  }
  if (r.ok()) {
    replies_.status_reply = std::move(r);
  } else {
    // The default connection's status (already in the replies) is judged instead.
    LogLimited(LogLevel::kWarn, "all-status:" + id_,
               std::string(kAllConnectionsStatusStatement) + " on " + id_ +
                   " failed: " + r.status().ToString() + "; its default connection is judged");
  }
  SendApplierOrHeartbeat();
}

void ProbeSession::SendApplierOrHeartbeat() {
  // After the status poll and before the heartbeat read, which stays last: the record is
  // published the moment its answer is in.
  if (!applier_.Ask(applier_due_)) {
    SendHeartbeat();
    return;
  }
  step_ = Step::kApplier;
  Ask(ApplierStatusStatement());
}

void ProbeSession::OnApplier(Result<QueryResult> r) {
  if (!r.ok() && (!conn_.connected() || conn_.lingering())) {
    // No connection, or no answer in time: the probe failed as a probe would have.
    OnHeartbeat(std::move(r));
    return;
  }
  if (!r.ok()) {
    // Refused (no grant, no such table or column, performance_schema off): not asked again on
    // this connection. The prober counts and logs it.
    replies_.applier_errno = conn_.last_errno();
    applier_.Refuse(replies_.applier_errno, r.status().message());
    if (UpdateApplierFacts()) TellFacts();
  }
  replies_.applier_reply = std::move(r);
  SendHeartbeat();
}

void ProbeSession::SendHeartbeat() {
  const PositionsKind kind = facts_.positions;
  // With binary log coordinates the observation began with the status poll that read them.
  if (!(kind == PositionsKind::kBinlog && replies_.status_reply)) {
    replies_.obs.sent = loop_->clock().Now();
  }
  step_ = Step::kHeartbeat;
  Ask(kind == PositionsKind::kMariaDbGtid ? sql_.probe
      : kind == PositionsKind::kMysqlGtid ? sql_.probe_mysql_gtid
                                          : sql_.probe_heartbeat_only);
}

void ProbeSession::OnHeartbeat(Result<QueryResult> r) {
  const PositionsKind kind = facts_.positions;
  if (!r.ok() && conn_.last_errno() == kErUnknownSystemVariable && IsGtidKind(kind)) {
    const bool set = config_.positions == kind;
    Log(set ? LogLevel::kError : LogLevel::kWarn,
        "replica " + id_ + " has no " + ReplicaPositionVariable(kind) +
            (kind == PositionsKind::kMariaDbGtid ? " (not MariaDB?)" : " (not MySQL?)") +
            ": using heartbeat bounds only" +
            (set ? std::string(" although positions is \"") + PositionsKindName(kind) + "\"" : ""));
    refused_ = kind;
    UpdatePositions();
    replies_.forget_applied = true;
    SendHeartbeat();
    return;
  }
  replies_.obs.received = loop_->clock().Now();
  replies_.received_wall = loop_->clock().WallNow();
  if (!conn_.connected()) {
    reconnect_at_ = replies_.obs.received + ReconnectBackoff(++connect_failures_);
  } else {
    connect_failures_ = 0;
  }
  replies_.reply = std::move(r);
  Finish();
}

void ProbeSession::Finish() {
  step_ = Step::kIdle;
  done_(std::move(replies_));
}

}  // namespace lagwatch
