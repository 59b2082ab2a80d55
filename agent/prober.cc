#include "agent/prober.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "agent/schedule.h"
#include "base/log.h"
#include "base/mysql_conn.h"
#include "base/mysql_errors.h"
#include "base/strings.h"
#include "exporters/metrics.h"
#include "exporters/redis_publisher.h"

namespace lagwatch {
namespace {

constexpr Millis kMaxReconnectBackoff(500);
// After a replica answers again (it was unreachable or hung), it is probed at the sampler's
// cadence for this long while it is unhealthy: it is usually behind at first and catching up
// fast, and the tick would see it caught up up to an interval late.
constexpr Millis kCatchUpWindow(1000);
// How long a statement past its deadline is still waited for before the connection is given up:
// a hung replica is measured again the moment it answers, and costs one connection attempt per
// this long, not a few a second (each a handshake the server counts as interrupted).
constexpr Millis kLinger(10'000);

double Seconds(Micros d) { return std::chrono::duration<double>(d).count(); }

// One ring per replica serves every window (5m and 1m): it spans the longest.
constexpr int64_t kLongestWindowMs =
    *std::max_element(std::begin(kWindowSpansMs), std::end(kWindowSpansMs));
// Room for every tick over the longest window plus half again for deadline probes, and some
// slack; a burst beyond that truncates the window (QuantileWindow::truncated).
size_t LagWindowCapacity(int interval_ms) {
  return static_cast<size_t>(kLongestWindowMs / interval_ms) * 3 / 2 + 64;
}

}  // namespace

std::shared_ptr<const Config> ProberSettings(const Config& config) {
  auto settings = std::make_shared<Config>(config);
  settings->replicas = {};  // not clear(): that would keep the capacity
  return settings;
}

ReplicaProber::ReplicaProber(std::shared_ptr<const Config> settings, const ReplicaConfig& replica,
                             EventLoop* loop, const HeartbeatLog* log,
                             const PositionHistory* history, TopologyMonitor* topology,
                             RedisPublisher* publisher, Metrics* metrics, const Clock& clock)
    : settings_(std::move(settings)),
      config_(*settings_),
      replica_(replica),
      id_(replica.endpoint.Id()),
      tier_(config_.Tier(replica.tier)),
      sql_(config_.heartbeat, config_.agent_id),
      log_(log),
      history_(history),
      topology_(topology),
      publisher_(publisher),
      metrics_(metrics),
      clock_(clock),
      loop_(loop),
      conn_(loop, MysqlTarget{replica.endpoint, config_.replica_defaults_file,
                              "replica " + replica.endpoint.Id(), replica.tls}),
      health_(HealthPolicy{config_.health.recover_ratio, config_.health.recover_probes,
                           config_.health.keep_caught_up_when_primary_unknown}),
      lag_window_(Millis(kLongestWindowMs), LagWindowCapacity(config_.probe.interval_ms)),
      slar_window_(Millis(kLongestWindowMs)) {
  for (const auto& t : config_.tiers) {
    if (t.enabled && t.max_delay_ms) limits_ms_.push_back(*t.max_delay_ms);
  }
  std::sort(limits_ms_.begin(), limits_ms_.end());
  limits_ms_.erase(std::unique(limits_ms_.begin(), limits_ms_.end()), limits_ms_.end());
  last_probe_done_ = clock_.Now();
  const TopologyMonitor::View view = topology_->ViewOf(id_);
  last_view_ = view;
  epoch_ = view.epoch;
  acting_primary_ = view.is_primary;
  if (!acting_primary_) Metric();
}

ReplicaMetrics& ReplicaProber::Metric() {
  if (!m_) {
    m_ = &metrics_->Replica(id_, replica_.tier);
    m_->lag_upper_seconds.Set(std::nan(""));
    m_->lag_lower_seconds.Set(std::nan(""));
    m_->SetState("unreachable");
  }
  return *m_;
}

void ReplicaProber::Start(Millis phase) {
  loop_->RunSync([this, phase] {
    UpdatePositions();
    next_tick_ = clock_.Now() + phase;
    next_status_ = next_tick_;
    planned_ = next_tick_;
    timer_ = loop_->At(planned_, [this] { OnTick(); });
  });
}

void ReplicaProber::Stop() {
  loop_->RunSync([this] {
    if (timer_) loop_->Cancel(timer_);
    timer_ = 0;
    CancelCrossing();
    in_flight_ = false;
    conn_.Cancel();
  });
}

ReplicaView ReplicaProber::view() const {
  std::lock_guard lock(mu_);
  return view_;
}

std::vector<WindowStats> ReplicaProber::windows() const {
  std::lock_guard lock(mu_);
  return WindowsLocked(clock_.Now());
}

std::vector<WindowStats> ReplicaProber::WindowsLocked(MonoTime now) const {
  std::vector<WindowStats> out;
  for (size_t w = 0; w < std::size(kWindowSpansMs); ++w) {
    const Millis span(kWindowSpansMs[w]);
    QuantileWindow::Summary s = lag_window_.Summarize(now, span);
    out.push_back({kWindowNames[w], slar_window_.Count(now, span), s.p50, s.p95, s.p99, s.max,
                   slar_window_.Ratio(now, span)});
  }
  return out;
}

void ReplicaProber::UpdateWindowGauges(MonoTime now) {
  if (now < next_window_update_) return;
  next_window_update_ = now + Millis(1000);
  std::vector<WindowStats> windows;
  {
    std::lock_guard lock(mu_);
    windows = WindowsLocked(now);
  }
  for (size_t w = 0; w < windows.size() && m_; ++w) {
    const double q[] = {windows[w].p50_ms, windows[w].p95_ms, windows[w].p99_ms};
    for (size_t i = 0; i < std::size(q); ++i) m_->lag_window_seconds[w][i].Set(q[i] / 1000.0);
    m_->slar_ratio[w].Set(windows[w].slar.value_or(std::nan("")));
  }
}

MonoTime ReplicaProber::last_probe_done() const {
  std::lock_guard lock(mu_);
  return last_probe_done_;
}

bool ReplicaProber::probed_once() const {
  std::lock_guard lock(mu_);
  return probed_once_;
}

Millis ReplicaProber::ReconnectBackoff(int failures) const {
  // interval, 2x, 4x ... capped: a dead server is retried a few times a second, not hammered,
  // and a revived one is found again within kMaxReconnectBackoff.
  Millis b(config_.probe.interval_ms);
  for (int i = 1; i < failures && b < kMaxReconnectBackoff; ++i) b *= 2;
  return std::min(b, kMaxReconnectBackoff);
}

void ReplicaProber::OnTick() {
  timer_ = 0;
  probe_ = InFlight{};
  probe_.started = clock_.Now();
  if (m_) {
    m_->probe_start_delay_seconds.Observe(Seconds(std::chrono::duration_cast<Micros>(
        std::max(probe_.started - planned_, MonoTime::duration::zero()))));
  }
  // A new connection may be to another server (restarted, upgraded, failed over): its flavor is
  // asked again before the probe, and what the old one had applied says nothing about it.
  if (!conn_.connected()) {
    flavor_checked_ = false;
    refused_.reset();
    applied_.reset();
  }
  UpdatePositions();
  // While replication is reported stopped, poll every probe so a restart is seen at once; with
  // binary log coordinates every probe reads them from the status.
  probe_.poll_status = probe_.started >= next_status_ || replication_stopped_ ||
                       positions_ == PositionsKind::kBinlog;
  if (probe_.started >= next_status_) {
    next_status_ = probe_.started + Millis(config_.probe.status_interval_ms);
  }
  probe_.backing_off = !conn_.connected() && probe_.started < reconnect_at_;
  if (probe_.backing_off || conn_.lingering()) {
    // No new statement: waiting to reconnect, or still for the answer to an earlier one (which
    // probes again the moment it comes: OnLateAnswer).
    probe_.obs.sent = probe_.obs.received = probe_.started;
    probe_.received_wall = clock_.WallNow();
    Evaluate(probe_.backing_off ? Status::Unavailable("waiting to reconnect to replica " + id_)
                                : Status::DeadlineExceeded("still no answer from replica " + id_),
             std::nullopt);
    return;
  }
  in_flight_ = true;
  ArmCrossing();
  if (!flavor_checked_) {
    SendFlavorQuery();
    return;
  }
  SendQueries();
}

void ReplicaProber::SendQueries() {
  if (probe_.poll_status) {
    SendStatus();
  } else {
    SendProbe();
  }
}

void ReplicaProber::Ask(const std::string& sql, AsyncMysqlConn::Callback then) {
  conn_.Query(sql, clock_.Now() + Millis(config_.probe.timeout_ms), std::move(then), kLinger,
              [this] { OnLateAnswer(); });
}

void ReplicaProber::OnLateAnswer() {
  if (!timer_) return;  // stopping
  // The replica answered after all (or was given up on): probe now, not at the next tick.
  loop_->Cancel(timer_);
  timer_ = 0;
  planned_ = clock_.Now();
  OnTick();
}

void ReplicaProber::SendFlavorQuery() {
  Ask(kServerFlavorQuery, [this](Result<QueryResult> r) { OnFlavorReply(std::move(r)); });
}

void ReplicaProber::OnFlavorReply(Result<QueryResult> r) {
  if (!r.ok() && (!conn_.connected() || conn_.lingering())) {
    // No connection, or no answer in time: the probe failed as a probe would have (and is
    // retried as one).
    probe_.obs.sent = clock_.Now();
    OnProbeReply(std::move(r));
    return;
  }
  // A server that answers but not this (or not usefully) is probed all the same, as an unknown
  // flavor: its status is polled with the statement every server but MySQL 8.4+ has.
  flavor_checked_ = true;
  ServerFlavor flavor;
  if (r.ok()) {
    if (auto parsed = ParseServerFlavor(*r); parsed.ok()) flavor = parsed.value();
  }
  if (flavor_ != flavor) {
    flavor_ = flavor;
    status_statement_ = ReplicaStatusStatement(flavor);
    Log(LogLevel::kInfo, "replica " + id_ + " is " + flavor.Describe() +
                             "; replication status by " + status_statement_);
    ShowServer();
  }
  SendQueries();
}

void ReplicaProber::ShowServer() {
  const char* kind = PositionsKindName(positions_);
  // The primary's own series is the sampler's (role "primary").
  if (flavor_ && !acting_primary_) metrics_->SetServerInfo(id_, "replica", *flavor_, kind);
  std::lock_guard lock(mu_);
  view_.server = flavor_;
  view_.status_statement = status_statement_;
  view_.positions = kind;
}

void ReplicaProber::UpdatePositions() {
  std::optional<PositionsKind> kind =
      config_.positions == PositionsKind::kNone ? PositionsKind::kNone : history_->kind();
  const bool decided = kind.has_value();
  positions_decided_ = decided;
  if (kind && kind == refused_) kind = PositionsKind::kNone;
  const PositionsKind next = kind.value_or(PositionsKind::kNone);
  if (next == positions_ && positions_shown_) return;
  if (next != positions_) applied_.reset();  // positions of another kind are not comparable
  positions_ = next;
  positions_shown_ = true;
  ShowServer();
  if (!decided || positions_ != PositionsKind::kNone || warned_band_ || !tier_.max_delay_ms ||
      config_.heartbeat.interval_ms <= *tier_.max_delay_ms) {
    return;
  }
  warned_band_ = true;
  // Heartbeat bounds are a band one heartbeat interval wide: wider than the tier's limit, a
  // replica with no lag can read as over it.
  Log(LogLevel::kWarn,
      "replica " + id_ + ": no positions, so its bounds are a band up to " +
          "heartbeat.interval_ms = " + std::to_string(config_.heartbeat.interval_ms) +
          " ms wide, above " + tier_.name + "'s limit of " + std::to_string(*tier_.max_delay_ms) +
          " ms: it can read as over the limit at no lag; lower "
          "heartbeat.interval_ms");
}

void ReplicaProber::SendProbe() {
  const MonoTime now = clock_.Now();
  // With binary log coordinates the observation began with the status poll that read them.
  if (!(positions_ == PositionsKind::kBinlog && probe_.status_reply)) probe_.obs.sent = now;
  const std::string& sql = positions_ == PositionsKind::kMariaDbGtid ? sql_.probe
                           : positions_ == PositionsKind::kMysqlGtid ? sql_.probe_mysql_gtid
                                                                     : sql_.probe_heartbeat_only;
  Ask(sql, [this](Result<QueryResult> r) { OnProbeReply(std::move(r)); });
}

void ReplicaProber::OnProbeReply(Result<QueryResult> r) {
  if (!r.ok() && conn_.last_errno() == kErUnknownSystemVariable &&
      (positions_ == PositionsKind::kMariaDbGtid || positions_ == PositionsKind::kMysqlGtid)) {
    const bool set = config_.positions == positions_;
    Log(set ? LogLevel::kError : LogLevel::kWarn,
        "replica " + id_ + " has no " + ReplicaPositionVariable(positions_) +
            (positions_ == PositionsKind::kMariaDbGtid ? " (not MariaDB?)" : " (not MySQL?)") +
            ": using heartbeat bounds only" +
            (set ? std::string(" although positions is \"") + PositionsKindName(positions_) + "\""
                 : ""));
    refused_ = positions_;
    UpdatePositions();
    SendProbe();
    return;
  }
  probe_.obs.received = clock_.Now();
  probe_.received_wall = clock_.WallNow();
  if (!conn_.connected()) {
    reconnect_at_ = probe_.obs.received + ReconnectBackoff(++connect_failures_);
  } else {
    connect_failures_ = 0;
  }
  Evaluate(std::move(r), std::move(probe_.status_reply));
}

void ReplicaProber::SendStatus() {
  probe_.obs.sent = clock_.Now();
  Ask(status_statement_, [this](Result<QueryResult> s) { OnStatusReply(std::move(s)); });
}

void ReplicaProber::OnStatusReply(Result<QueryResult> s) {
  if (!s.ok() && (!conn_.connected() || conn_.lingering())) {
    // No connection, or no answer in time: the probe failed as a probe would have.
    OnProbeReply(std::move(s));
    return;
  }
  // MySQL 8.4 removed SHOW SLAVE STATUS; a server whose version said nothing useful gets it first.
  const char* retry = s.ok() ? nullptr : ReplicaStatusRetry(status_statement_, conn_.last_errno());
  if (retry) {
    status_statement_ = retry;
    Log(LogLevel::kInfo, "replica " + id_ + " does not know SHOW SLAVE STATUS: using " +
                             status_statement_ + " from now on");
    ShowServer();
    // Back through here; it is not retried again (ReplicaStatusRetry has nothing after SHOW
    // REPLICA STATUS).
    Ask(status_statement_, [this](Result<QueryResult> again) { OnStatusReply(std::move(again)); });
    return;
  }
  // The heartbeat query goes last, so the record is published the moment its answer is in.
  probe_.status_reply = std::move(s);
  SendProbe();
}

void ReplicaProber::ScheduleNext() {
  const MonoTime now = clock_.Now();
  const Millis interval(config_.probe.interval_ms), sample_interval(config_.sampler_interval_ms);
  const MonoTime tick =
      NextTick(next_tick_, probe_.started, now, interval, std::min(sample_interval, interval / 2));
  if (tick != next_tick_) {
    next_tick_ = tick;
    if (auto sample = history_->LastSample()) {
      next_tick_ = AlignToSamples(next_tick_, *sample, sample_interval);
    }
  }
  // A probe due while this one still ran is due now: its start delay measures the loop, not the
  // server that made this probe slow. A replica coming back from lag is probed again at once, so
  // the recovery streak takes round trips, not ticks.
  planned_ = health_.recovering() || std::exchange(probe_soon_, false)
                 ? probe_.started + kMinProbeGap
                 : NextProbeAt(now, probe_.started, next_tick_,
                               bounds_ ? bounds_->fresh_at : std::nullopt, limits_ms_);
  if (now < catching_up_until_ && !health_.last().healthy) {
    planned_ = std::min(planned_, std::max(now + sample_interval, probe_.started + kMinProbeGap));
  }
  // While no one server is writable (the primary read-only or gone, or two writable), a promotion
  // elsewhere is seen at the next probe of that server, and until then replicas are judged
  // against the old primary: every server is probed twice as often.
  if (last_view_.state != TopologyState::kOk) {
    planned_ = std::min(planned_, std::max(probe_.started + interval / 2, now));
  }
  planned_ = std::max(now, planned_);
  timer_ = loop_->At(planned_, [this] { OnTick(); });
}

void ReplicaProber::ArmCrossing() {
  CancelCrossing();
  if (acting_primary_ || !bounds_ || !bounds_->fresh_at) return;
  const auto at =
      CrossingVerdictAt(*bounds_->fresh_at, limits_ms_, published_delay_ms_,
                        CrossingGrace(SlowestRecentRtt(), Millis(config_.probe.timeout_ms)));
  if (!at) return;
  crossing_timer_ = loop_->At(std::max(*at, clock_.Now()), [this] { OnCrossing(); });
}

void ReplicaProber::CancelCrossing() {
  if (crossing_timer_) loop_->Cancel(crossing_timer_);
  crossing_timer_ = 0;
}

Micros ReplicaProber::SlowestRecentRtt() const {
  return *std::max_element(rtts_.begin(), rtts_.end());
}

void ReplicaProber::OnCrossing() {
  crossing_timer_ = 0;
  if (!in_flight_ || !bounds_ || !bounds_->fresh_at) return;
  const MonoTime now = clock_.Now();
  if (conn_.AnswerWaiting()) {
    // The answer is here and the loop, not the replica, is late: it is read next, and decides.
    crossing_timer_ = loop_->At(now + Millis(1), [this] { OnCrossing(); });
    return;
  }
  // The last probe's view of the replica, aged to now: the same replica, the same status, a
  // bound that has only grown, and no new proof of how far behind it is.
  HealthInput h = last_health_;
  h.delay_ms = ToMillis(bounds_->UpperAt(now));
  h.delay_lower_ms.reset();
  h.primary_known = PrimaryKnown(now, *log_, *history_, Millis(config_.heartbeat.interval_ms),
                                 Millis(config_.sampler_interval_ms));
  h.caught_up_with_primary = CaughtUpWithPrimary(bounds_, *log_, *history_);
  const HealthTracker::Verdict prev = health_.last();
  const HealthTracker::Verdict v = health_.Update(h);
  const ReplicaSnapshot snap = Snapshot(h, 0, now, clock_.WallNow(), v);
  metrics_->crossing_verdicts.Increment();
  Metric().lag_upper_seconds.Set(static_cast<double>(snap.delay_ms) / 1000.0);
  Metric().lag_lower_seconds.Set(0);
  Metric().healthy.Set(snap.healthy ? 1 : 0);
  Metric().SetState(snap.state);
  PublishVerdict(snap, prev, v, " (no answer yet at the crossing)");
  {
    std::lock_guard lock(mu_);
    view_.state = snap.state;
    view_.healthy = snap.healthy;
    view_.last = snap;
  }
  ArmCrossing();  // the next limit, if the answer is still not in when the bound reaches it
}

void ReplicaProber::ReportRole(const Assessment& a) {
  ServerRole role;
  role.endpoint = replica_.endpoint;
  role.answered = a.health.reachable;
  role.server_id = a.server_id;
  role.read_only = a.read_only;
  if (a.status.known) {
    role.replicates = a.status.configured;
    role.source_host = a.status.source_host;
    role.source_port = a.status.source_port;
    role.source_server_id = a.status.source_server_id;
    role.source_connected = a.status.io_running;
  }
  // In a switchover read_only and replication change together, but the status is polled once a
  // second, and before the probe's query reads read_only: a change of read_only waits for the
  // status of a later probe, polled at once, to say the rest.
  // Only a change to writable waits: a server going read-only is no candidate for the primary, and
  // holding it would show two writable servers (ambiguous) in an orderly switchover.
  if (last_role_ && last_role_->answered && role.answered && role.read_only == false &&
      last_role_->read_only == true) {
    if (!read_only_flip_seen_) read_only_flip_seen_ = probe_.started;
    if (!a.status_polled || probe_.started == *read_only_flip_seen_) {
      role.read_only = last_role_->read_only;
      next_status_ = probe_.started;
      probe_soon_ = true;
    }
  } else {
    read_only_flip_seen_.reset();
  }
  // Unchanged roles are not reported again, but when asked to confirm an ambiguity.
  if (last_role_ == role && !last_view_.confirm) return;
  last_role_ = role;
  topology_->Report(role);
}

void ReplicaProber::StartOver(uint64_t epoch) {
  // Bounds and verdicts were against the previous primary; they prove nothing about this one.
  epoch_ = epoch;
  bounds_.reset();
  applied_.reset();
  chained_ = false;
  health_.Reset();
  last_health_ = HealthInput{};
  published_delay_ms_ = 0;
  // Probed at the sampler's cadence until it is proven fresh against the new primary.
  catching_up_until_ = clock_.Now() + kCatchUpWindow;
}

void ReplicaProber::ActAsPrimary() {
  if (!acting_primary_) {
    acting_primary_ = true;
    StartOver(epoch_);
    // Not a replica: its key goes (the agent takes it out of the replica set) and its series too.
    if (m_) metrics_->RemoveReplica(id_);
    m_ = nullptr;
    Log(LogLevel::kInfo, "server " + id_ +
                             " is the primary: probed for its role only, not published as a "
                             "replica");
  }
  replication_stopped_ = false;
  bounds_.reset();  // its own freshness as the primary is no bound as a replica
  std::lock_guard lock(mu_);
  view_.state = "primary";
  view_.healthy = false;
  ++view_.probes;
}

void ReplicaProber::LeavePrimary() {
  acting_primary_ = false;
  StartOver(epoch_);
  probe_soon_ = true;
  ShowServer();
  Log(LogLevel::kInfo, "server " + id_ + " is no longer the primary: probed as a replica");
}

void ReplicaProber::MarkProbeDone() {
  std::lock_guard lock(mu_);
  probed_once_ = true;
  last_probe_done_ = clock_.Now();
}

void ReplicaProber::Evaluate(Result<QueryResult> r,
                             std::optional<Result<QueryResult>> status_reply) {
  in_flight_ = false;
  CancelCrossing();
  if (const auto view = topology_->ViewOf(id_); view.epoch != epoch_) StartOver(view.epoch);
  ProbeInput in;
  // The replies and the last position move in and back out: a probe copies no result set.
  in.status_access_denied =
      status_reply && !status_reply->ok() && conn_.last_errno() == kErSpecificAccessDenied;
  in.reply = std::move(r);
  in.status_reply = std::move(status_reply);
  in.positions = positions_;
  in.primary_server_id = history_->primary_server_id();
  in.obs = probe_.obs;
  in.bounds = bounds_;
  in.previous_applied = std::move(applied_);
  {
    std::lock_guard lock(mu_);
    in.status = view_.status;
  }
  in.primary_known =
      PrimaryKnown(clock_.Now(), *log_, *history_, Millis(config_.heartbeat.interval_ms),
                   Millis(config_.sampler_interval_ms));
  in.tier_enabled = tier_.enabled;
  in.max_delay_ms = tier_.max_delay_ms;
  Assessment a = Assess(in, *log_, *history_);

  bounds_ = a.bounds;
  if (a.measured && a.obs.seq) last_seq_ = *a.obs.seq;
  applied_ = a.applied ? std::move(a.applied) : std::move(in.previous_applied);
  {
    std::lock_guard lock(mu_);
    view_.status = a.status;  // the latest known, for the next probe whatever this one decides
  }
  ReportRole(a);
  const TopologyMonitor::View view = topology_->ViewOf(id_);
  last_view_ = view;
  if (view.confirm) probe_soon_ = true;  // the next probe confirms or ends an ambiguity
  if (view.epoch != epoch_) {
    // The primary moved with this very report: this probe was judged against the old one.
    StartOver(view.epoch);
    MarkProbeDone();
    ScheduleNext();
    return;
  }
  if (view.is_primary) {
    ActAsPrimary();
    MarkProbeDone();
    ScheduleNext();
    return;
  }
  if (acting_primary_) {
    // What it measured as the primary says nothing of it as a replica: the next probe judges.
    LeavePrimary();
    MarkProbeDone();
    ScheduleNext();
    return;
  }
  // Judged against the current primary only: not while its source is in doubt.
  a.health.source_verified =
      view.state != TopologyState::kAmbiguous && view.relation != SourceRelation::kUnknown;
  Metric().probes.Increment();
  if (a.inconsistent) {
    LogLimited(LogLevel::kWarn, "inconsistent:" + id_,
               "replica " + id_ + ": position and heartbeat bounds disagree; using heartbeat only");
  }
  if (a.position_error) {
    m_->ProbeError("bad_position").Increment();
    LogLimited(LogLevel::kWarn, "position:" + id_,
               "replica " + id_ + ": " + a.position_error->ToString() +
                   "; heartbeat bounds for this probe");
  }
  if (a.status_polled && a.chained != chained_) {
    chained_ = a.chained;
    const auto& st = a.status;
    const auto primary_id = history_->primary_server_id();
    if (chained_) {
      Log(LogLevel::kWarn,
          "replica " + id_ + " replicates from " + st.source_host + ":" +
              (st.source_port ? std::to_string(*st.source_port) : "?") + " (server_id " +
              (st.source_server_id ? std::to_string(*st.source_server_id) : "?") +
              "), not from the primary (server_id " +
              (primary_id ? std::to_string(*primary_id) : "unknown") +
              "): its binary log coordinates are not the primary's; heartbeat bounds only");
    } else {
      Log(LogLevel::kInfo, "replica " + id_ +
                               " replicates from the primary again: coordinates "
                               "compared");
    }
  }
  if (in.reply.ok()) {
    const auto rtt = std::chrono::duration_cast<Micros>(a.obs.received - a.obs.sent);
    m_->probe_duration_seconds.Observe(Seconds(rtt));
    rtts_[next_rtt_++ % rtts_.size()] = rtt;
  }
  if (a.status_polled) m_->status_polls.Increment();

  const HealthTracker::Verdict prev = health_.last();
  const HealthTracker::Verdict v = health_.Update(a.health);
  last_health_ = a.health;
  if (a.health.reachable && prev.state == ReplicaState::kUnreachable) {
    catching_up_until_ = a.obs.received + kCatchUpWindow;
  }
  const ReplicaSnapshot snap =
      Snapshot(a.health, a.probe_status.ok() && a.bounds ? ToMillis(a.bounds->lower) : 0,
               a.obs.received, probe_.received_wall, v);
  RecordMetrics(a, snap);
  Publish(a, snap, prev, v);
  RecordWindows(a, snap);
  ScheduleNext();
}

ReplicaSnapshot ReplicaProber::Snapshot(const HealthInput& h, int64_t delay_lower_ms,
                                        MonoTime measured, WallTime measured_wall,
                                        const HealthTracker::Verdict& v) {
  ReplicaSnapshot snap;
  snap.id = id_;
  // The bound judged (the crossings are scheduled from it, whatever is published).
  if (bounds_ && h.delay_ms) published_delay_ms_ = *h.delay_ms;
  snap.delay_ms = h.delay_ms.value_or(0);
  // Kept healthy while the primary is unknown (health.primary_unknown's default): it had all
  // the primary had when last heard from, and the bound grows only with the silence. Published
  // as 0, so that a router comparing delay_ms with the limit decides as one reading healthy.
  if (v.state == ReplicaState::kPrimaryUnknown && v.healthy) snap.delay_ms = 0;
  snap.delay_lower_ms = delay_lower_ms;
  snap.state = StateName(v.state);
  snap.healthy = v.healthy;
  snap.tier = tier_.name;
  snap.weight = replica_.weight;
  snap.max_delay_ms = tier_.max_delay_ms;
  snap.seq = last_seq_;
  snap.measured_at_ms = UnixMillis(measured_wall);  // the moment delay_ms refers to
  snap.agent_id = config_.agent_id;
  // The position the last probe read (positions only move forward, so an earlier read is still a
  // proof). Binary log coordinates of a chained replica are its source's, not the primary's.
  if (applied_ && !(chained_ && applied_->kind() == PositionsKind::kBinlog)) {
    snap.position = applied_->ToString();
    snap.position_kind = PositionsKindName(applied_->kind());
  }
  snap.measured_mono = measured;
  return snap;
}

void ReplicaProber::RecordMetrics(const Assessment& a, const ReplicaSnapshot& snap) {
  if (!a.probe_status.ok() && !probe_.backing_off) {
    m_->ProbeError(a.probe_status.reason()).Increment();
    metrics_->CountTlsError("mysql", a.probe_status);
  }
  if (a.status_error) m_->ProbeError(a.status_error->reason()).Increment();
  if (a.health.delay_ms) {
    const double upper = static_cast<double>(*a.health.delay_ms) / 1000.0;
    m_->lag_upper_seconds.Set(upper);
    m_->lag_lower_seconds.Set(static_cast<double>(snap.delay_lower_ms) / 1000.0);
    m_->lag_seconds.Observe(upper);
    if (a.health.reachable && *a.health.delay_ms <= config_.slo_delay_ms) {
      m_->probes_within_slo.Increment();
    }
  }
  m_->healthy.Set(snap.healthy ? 1 : 0);
  m_->SetState(snap.state);
  // Unknown (no status poll has answered, e.g. a missing grant) is NaN, not a stopped thread.
  const ReplicationStatus& status = a.status;
  m_->io_thread_running.Set(!status.known ? std::nan("") : status.io_running ? 1 : 0);
  m_->sql_thread_running.Set(!status.known ? std::nan("") : status.sql_running ? 1 : 0);
  m_->seconds_behind_master.Set(status.seconds_behind_master
                                    ? static_cast<double>(*status.seconds_behind_master)
                                    : std::nan(""));
  if (status.relay_log_space) {
    m_->relay_log_space_bytes.Set(static_cast<double>(*status.relay_log_space));
  }
}

void ReplicaProber::Publish(const Assessment& a, const ReplicaSnapshot& snap,
                            const HealthTracker::Verdict& prev, const HealthTracker::Verdict& v) {
  const std::string why = !a.probe_status.ok()           ? " (" + a.probe_status.ToString() + ")"
                          : !a.status.last_error.empty() ? " (" + a.status.last_error + ")"
                                                         : "";
  PublishVerdict(snap, prev, v, why);
  if (!a.probe_status.ok() && !probe_.backing_off) {
    LogLimited(LogLevel::kWarn, "probe:" + id_,
               "probe of " + id_ + " failed: " + a.probe_status.ToString());
  }
  if (a.status_error) {
    LogLimited(LogLevel::kWarn, "status:" + id_,
               status_statement_ + " on " + id_ + " failed: " + a.status_error->ToString());
  }
}

void ReplicaProber::PublishVerdict(const ReplicaSnapshot& snap, const HealthTracker::Verdict& prev,
                                   const HealthTracker::Verdict& v, const std::string& why) {
  // A replica is published once it has been measured with what the agent will keep comparing;
  // before that its key stays absent, which routers read as "unusable" (docs/redis.md). A bound
  // comes with the first measurement (bounds_), and the positions kind decides how tight it is.
  if (bounds_ && positions_decided_) publisher_->Publish(snap);
  if (v.changed) {
    nlohmann::json e = {{"replica", id_},
                        {"state", snap.state},
                        {"previous_state", nullptr},
                        {"healthy", v.healthy ? 1 : 0},
                        {"previous_healthy", nullptr},
                        {"delay_ms", snap.delay_ms},
                        {"measured_at_ms", snap.measured_at_ms},
                        {"agent", config_.agent_id}};
    if (had_verdict_) {
      e["previous_state"] = StateName(prev.state);
      e["previous_healthy"] = prev.healthy ? 1 : 0;
    }
    had_verdict_ = true;
    publisher_->PublishEvent(e.dump());
    Log(LogLevel::kInfo,
        "replica " + id_ + " is now " + snap.state + (v.healthy ? " healthy" : " unhealthy") +
            ", delay_ms<=" + (bounds_ ? std::to_string(snap.delay_ms) : "unknown") + why);
  }
}

void ReplicaProber::RecordWindows(const Assessment& a, const ReplicaSnapshot& snap) {
  replication_stopped_ = a.status.known && !a.health.threads_running;
  {
    std::lock_guard lock(mu_);
    // SLAR counts every probe: one that could not measure is not within the SLO.
    const bool within_slo =
        a.health.reachable && a.health.delay_ms && *a.health.delay_ms <= config_.slo_delay_ms;
    slar_window_.Add(a.obs.received, within_slo);
    if (a.health.delay_ms) {
      lag_window_.Add(a.obs.received, static_cast<double>(*a.health.delay_ms));
    }
  }
  UpdateWindowGauges(a.obs.received);

  std::lock_guard lock(mu_);
  view_.state = snap.state;
  view_.healthy = snap.healthy;
  if (a.bounds) view_.last = snap;
  ++view_.probes;
  if (!a.probe_status.ok() || a.status_error) {
    ++view_.failures;
    view_.last_error = (!a.probe_status.ok() ? a.probe_status : *a.status_error).ToString();
    view_.last_error_at_ms = snap.measured_at_ms;
  }
  probed_once_ = true;
  last_probe_done_ = clock_.Now();
}

}  // namespace lagwatch
