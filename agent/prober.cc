#include "agent/prober.h"

#include <algorithm>
#include <cmath>

#include "agent/schedule.h"
#include "base/applier_status.h"
#include "base/contract.h"
#include "base/log.h"
#include "base/strings.h"
#include "exporters/metrics.h"
#include "exporters/redis_publisher.h"
#include "exporters/verdict_board.h"

namespace lagwatch {
namespace {

// After a replica answers again (it was unreachable or hung), it is probed at the sampler's
// cadence for this long while it is unhealthy: it is usually behind at first and catching up
// fast, and the tick would see it caught up up to an interval late.
constexpr Millis kCatchUpWindow(1000);

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

ReplicaProber::ReplicaProber(
    std::shared_ptr<const Config> settings, const ReplicaConfig& replica, EventLoop* loop,
    const HeartbeatLog* log, const PositionHistory* history, const StreamHistory* stream,
    const AppliedWitnesses* witnesses, ReadOnlySightings* sightings, TopologyMonitor* topology,
    RedisPublisher* publisher, VerdictBoard* board, Metrics* metrics, const Clock& clock,
    std::function<void(const std::string& server, int64_t not_after_unix)> certificate_seen)
    : settings_(std::move(settings)),
      config_(*settings_),
      replica_(replica),
      id_(replica.endpoint.Id()),
      tier_(config_.Tier(replica.tier)),
      log_(log),
      history_(history),
      stream_(stream),
      witnesses_(witnesses),
      sightings_(sightings),
      topology_(topology),
      publisher_(publisher),
      board_(board),
      metrics_(metrics),
      clock_(clock),
      loop_(loop),
      session_(
          loop,
          MysqlTarget{replica.endpoint, config_.replica_defaults_file,
                      "replica " + replica.endpoint.Id(), replica.tls},
          config_, tier_, history, [this](ProbeReplies r) { OnReplies(std::move(r)); },
          [this] { OnLateAnswer(); }, [this](const ServerFacts& f) { ShowServer(f); },
          certificate_seen ? ProbeSession::CertificateFn(
                                 [seen = std::move(certificate_seen), id = replica.endpoint.Id()](
                                     int64_t not_after) { seen(id, not_after); })
                           : nullptr),
      judge_(replica, tier_, config_),
      roles_(replica.endpoint),
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
  *live_ = true;
  loop_->RunSync([this, phase] {
    session_.UpdatePositions();
    next_tick_ = clock_.Now() + phase;
    next_status_ = next_tick_;
    planned_ = next_tick_;
    timer_ = loop_->At(planned_, [this] { OnTick(); });
  });
}

void ReplicaProber::Stop() {
  loop_->RunSync([this] {
    *live_ = false;
    if (timer_) loop_->Cancel(timer_);
    timer_ = 0;
    if (follow_timer_) loop_->Cancel(follow_timer_);
    follow_timer_ = 0;
    CancelCrossing();
    if (await_timer_) loop_->Cancel(await_timer_);
    await_timer_ = 0;
    held_.reset();
    in_flight_ = false;
    session_.Cancel();
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

void ReplicaProber::OnTick() {
  timer_ = 0;
  probe_started_ = clock_.Now();
  if (m_) {
    m_->probe_start_delay_seconds.Observe(Seconds(std::chrono::duration_cast<Micros>(
        std::max(probe_started_ - planned_, MonoTime::duration::zero()))));
  }
  // While replication is reported stopped, poll every probe so a restart is seen at once (the
  // applier signals stay at the status interval).
  const bool status_due = probe_started_ >= next_status_;
  const bool poll_status = status_due || replication_stopped_;
  if (status_due) next_status_ = probe_started_ + Millis(config_.probe.status_interval_ms);
  in_flight_ = true;
  sightings_->Sent(id_, probe_started_);
  ArmCrossing();
  std::optional<ChannelSource> source;
  if (!acting_primary_) source = PrimarySource();
  if (session_.Begin(probe_started_, poll_status, source, status_due && !acting_primary_)
          .forget_applied) {
    judge_.ForgetApplied();
  }
}

ChannelSource ReplicaProber::PrimarySource() const {
  const Endpoint primary = topology_->primary();
  return {history_->primary_server_id(), primary.host, primary.port};
}

void ReplicaProber::OnLateAnswer() {
  // The replica answered after all (or was given up on): probe now, not at the next tick.
  ProbeNow();
}

void ReplicaProber::ProbeNow() {
  if (!timer_) return;  // in flight, or stopping
  loop_->Cancel(timer_);
  timer_ = 0;
  planned_ = clock_.Now();
  OnTick();
}

std::function<void()> ReplicaProber::Urger() {
  // Holds the loop (the agent's, alive as long as it) and the flag Stop clears on that loop: a
  // task posted before Stop runs before it, one after finds the flag down.
  return [this, loop = loop_, live = live_] {
    loop->Post([this, live] {
      if (*live) ProbeNow();
    });
  };
}

void ReplicaProber::ShowServer(const ServerFacts& facts) {
  const char* kind = PositionsKindName(facts.positions);
  // The primary's own series is the sampler's (role "primary").
  if (facts.flavor && !acting_primary_) {
    metrics_->SetServerInfo(id_, "replica", *facts.flavor, kind);
  }
  {
    std::lock_guard lock(mu_);
    view_.server = facts.flavor;
    view_.status_statement = facts.status_statement;
    view_.positions = kind;
  }
  if (facts.applier_why_not == applier_why_not_) return;
  applier_why_not_ = facts.applier_why_not;
  if (!applier_why_not_.empty()) {
    ShowApplier({std::nullopt, applier_why_not_});
  } else if (!applier_shown_) {
    ShowApplier(ApplierView{});  // asked again (a new connection): not read yet
  }
}

void ReplicaProber::NoteApplier(Result<QueryResult> reply, unsigned server_errno) {
  if (reply.ok()) {
    Result<ApplierStatus> st = ParseApplierReply(*reply);
    if (st.ok()) {
      ShowApplier({std::move(st).value(), ""});
      return;
    }
    metrics_->CountApplierError("bad_data");
    LogLimited(LogLevel::kWarn, "applier:" + id_,
               "applier signals of " + id_ + " unreadable: " + st.status().ToString());
    ShowApplier({std::nullopt, "unreadable: " + st.status().ToString()});
    return;
  }
  // The session stopped asking on this connection (ApplierGate::Refuse); its facts say why.
  const char* reason = ApplierErrorReason(server_errno);
  metrics_->CountApplierError(reason);
  LogLimited(LogLevel::kWarn, "applier:" + id_,
             "applier signals of " + id_ + " refused (" + reason +
                 "): " + reply.status().ToString() + "; not asked again on this connection; " +
                 kApplierGrantHint);
  ShowApplier({std::nullopt, session_.facts().applier_why_not});
}

void ReplicaProber::ShowApplier(ApplierView applier) {
  applier_shown_ = applier.status.has_value();
  // The series are the channel judged's, and exist once a replica's signals were read.
  const ApplierChannel* ch =
      applier.status ? applier.status->Channel(judge_.status().channel_name) : nullptr;
  if (m_ && ch) {
    // Nothing applying: nothing waits. Applying with no readable start (the Performance
    // Schema's timing off): unknown.
    const double age = ch->applying == 0 ? 0.0
                       : ch->oldest_applying_age_us
                           ? static_cast<double>(*ch->oldest_applying_age_us) / 1e6
                           : std::nan("");
    m_->ShowApplier(static_cast<double>(ch->workers), static_cast<double>(ch->applying), age);
  } else if (m_ && m_->applier_shown()) {
    m_->ShowApplier(std::nan(""), std::nan(""), std::nan(""));
  }
  std::lock_guard lock(mu_);
  view_.applier = std::move(applier);
}

void ReplicaProber::OnReplies(ProbeReplies replies) {
  in_flight_ = false;
  CancelCrossing();
  // What it found of its server, for every prober's bounds while no one server is writable.
  if (auto ro = replies.reply.ok() ? ProbedReadOnly(*replies.reply) : std::nullopt) {
    sightings_->Answered(id_, replies.obs.sent, *ro);
  } else {
    sightings_->Unanswered(id_);
  }
  // Whether the primary answers is decided as the answer comes, not after a wait: a sample
  // answered meanwhile (a frozen primary resumed) proves the replica only as of its send time.
  Held held{std::move(replies), PrimaryKnownAt(clock_.Now())};
  if (!acting_primary_) {
    // The first to find it silent has every server probed now (the agent looks too).
    if (held.primary_known) {
      sightings_->PrimaryHeard();
    } else {
      held.urged = sightings_->PrimarySilent();
    }
    if ((!held.primary_known || history_->ReadOnlyNow()) && AwaitRound(held)) return;
  }
  Judge(std::move(held.replies), held.primary_known);
}

bool ReplicaProber::AwaitRound(Held& held) {
  const MonoTime now = clock_.Now();
  const MonoTime received = held.replies.obs.received;
  const Millis grace = AnswerGrace();
  if (now >= received + grace) return false;
  // Probes sent since the answer count too: a sighting after the moment a record is stated at
  // only proves more.
  const bool just_urged = held.urged && held.waited < Millis(2);
  if (!just_urged &&
      !sightings_->FloorRises(topology_->primary().Id(), id_, now, now - grace, now)) {
    return false;
  }
  // Looked at again 1, 2, 4... ms on: the others' answers are a round trip away.
  const Millis wait = std::max(Millis(1), held.waited);
  held.waited += wait;
  held_ = std::move(held);
  await_timer_ = loop_->At(std::min(now + wait, received + grace), [this] {
    await_timer_ = 0;
    Held pending = std::move(*held_);
    held_.reset();
    if (!AwaitRound(pending)) Judge(std::move(pending.replies), pending.primary_known);
  });
  return true;
}

void ReplicaProber::Judge(ProbeReplies replies, bool primary_known) {
  if (const uint64_t epoch = topology_->epoch(); epoch != epoch_) StartOver(epoch);
  const bool backing_off = replies.backing_off;
  const WallTime received_wall = replies.received_wall;
  // Diagnostics beside the bound: the judge never sees them.
  std::optional<Result<QueryResult>> applier = std::move(replies.applier_reply);
  const unsigned applier_errno = replies.applier_errno;
  const MonoTime now = clock_.Now();
  primary_known_ = primary_known;
  const ProbeContext context{
      session_.positions(), history_->primary_server_id(), primary_known, PrimarySource(),
      // An answer bounds the replica itself: the proof is only for a probe with none (Assess).
      replies.reply.ok() ? std::nullopt : Witnessed(), ReadOnlyHorizon(now),
      // Read by the record only while the primary is unknown (ReplicaJudge::Record).
      primary_known ? std::nullopt : OthersWritableAfter(now)};
  Assessment a = judge_.Observe(std::move(replies), context, *log_, *history_, stream_);
  {
    std::lock_guard lock(mu_);
    view_.status = judge_.status();
    if (a.bounds) view_.bound = BoundSourceName(a.bounds->upper_source);
  }
  const RoleReporter::Report report = roles_.Next(a, probe_started_, last_view_.confirm);
  if (report.poll_status_soon) {
    next_status_ = probe_started_;
    probe_soon_ = true;
  }
  const TopologyMonitor::View view =
      report.send ? topology_->Report(report.role) : topology_->ViewOf(id_);
  last_view_ = view;
  if (view.confirm) probe_soon_ = true;  // the next probe confirms or ends an ambiguity
  if (FollowTopology(view)) {
    MarkProbeDone();
    ScheduleNext();
    return;
  }
  if (applier) NoteApplier(std::move(*applier), applier_errno);
  if (a.recheck) {
    // Its heartbeat row and position disagreed (ReplicaJudge::Observe): probed again at once,
    // and this one is neither decided nor published.
    NoteAssessment(a, backing_off);
    probe_soon_ = true;
    MarkProbeDone();
    ScheduleNext();
    return;
  }
  // Judged against the current primary only: not while its source is in doubt.
  const bool source_verified =
      view.state != TopologyState::kAmbiguous && view.relation != SourceRelation::kUnknown;
  NoteAssessment(a, backing_off);
  Judgement j = judge_.Decide(a, source_verified, received_wall);
  if (j.back_from_unreachable) catching_up_until_ = a.obs.received + kCatchUpWindow;
  RecordMetrics(a, j);
  Publish(a, j, backing_off);
  RecordWindows(a, j);
  ScheduleNext();
}

bool ReplicaProber::FollowTopology(const TopologyMonitor::View& view) {
  if (view.epoch != epoch_) {
    // The primary moved with this very report: this probe was judged against the old one.
    StartOver(view.epoch);
    return true;
  }
  if (view.is_primary) {
    ActAsPrimary();
    return true;
  }
  if (acting_primary_) {
    // What it measured as the primary says nothing of it as a replica: the next probe judges.
    LeavePrimary();
    return true;
  }
  return false;
}

void ReplicaProber::NoteAssessment(const Assessment& a, bool backing_off) {
  Metric().probes.Increment();
  if (a.inconsistent) {
    LogLimited(
        LogLevel::kWarn, "inconsistent:" + id_,
        "replica " + id_ + ": position and heartbeat bounds disagree; " +
            (a.recheck ? "probing again at once" : "on two probes in a row: using heartbeat only"));
  }
  if (a.position_error) {
    m_->ProbeError("bad_position").Increment();
    LogLimited(LogLevel::kWarn, "position:" + id_,
               "replica " + id_ + ": " + a.position_error->ToString() +
                   "; heartbeat bounds for this probe");
  }
  if (a.probe_status.ok()) {
    const auto rtt = std::chrono::duration_cast<Micros>(a.obs.received - a.obs.sent);
    m_->probe_duration_seconds.Observe(Seconds(rtt));
    rtts_[next_rtt_++ % rtts_.size()] = rtt;
  }
  if (a.status_polled) m_->status_polls.Increment();
  if (!a.probe_status.ok() && !backing_off) {
    m_->ProbeError(a.probe_status.reason()).Increment();
    metrics_->CountTlsError("mysql", a.probe_status);
  }
  if (a.status_error) m_->ProbeError(a.status_error->reason()).Increment();
}

void ReplicaProber::ScheduleNext() {
  const MonoTime now = clock_.Now();
  const Millis interval(config_.probe.interval_ms), sample_interval(config_.sampler_interval_ms);
  const MonoTime tick =
      NextTick(next_tick_, probe_started_, now, interval, StandInWindow(interval, sample_interval));
  if (tick != next_tick_) {
    next_tick_ = tick;
    if (auto sample = history_->LastSample()) {
      next_tick_ = AlignToSamples(next_tick_, *sample, sample_interval);
    }
  }
  // A probe due while this one still ran is due now: its start delay measures the loop, not the
  // server that made this probe slow. A replica coming back from lag is probed again at once, so
  // the recovery streak takes round trips, not ticks.
  planned_ =
      judge_.health().recovering() || std::exchange(probe_soon_, false)
          ? probe_started_ + kMinProbeGap
          : NextProbeAt(now, probe_started_, next_tick_,
                        judge_.bounds() ? judge_.bounds()->fresh_at : std::nullopt, limits_ms_,
                        judge_.bounds() && judge_.bounds()->upper_source == BoundSource::kStream
                            ? PreCrossingLead(rtts_, interval)
                            : Millis(0));
  if (now < catching_up_until_ && !judge_.health().last().healthy) {
    planned_ = std::min(planned_, std::max(now + sample_interval, probe_started_ + kMinProbeGap));
  }
  // While no one server is writable (the primary read-only or gone, or two writable), a promotion
  // elsewhere is seen at the next probe of that server, and until then replicas are judged
  // against the old primary, no fresher than the last probe that found each other server
  // read-only (ReadOnlySightings): every server is probed at the fast cadence (FastStep), on a
  // grid all probers share, so that the others' answers of the same round are in before an
  // answer is judged (AwaitRound). So too while the primary is unknown (a failover not yet
  // seen).
  if (last_view_.state != TopologyState::kOk || !primary_known_) {
    const Millis step = FastStep(interval, sample_interval, sightings_->Servers());
    planned_ = std::min(planned_, OnGridAfter(probe_started_ + step / 2, step));
    // A probe between the grid's points (a crossing's: the bound of a replica kept healthy grows
    // with the silence) would find the others' sightings a round old: on the grid instead,
    // unless it is one that goes at once.
    if (!primary_known_ && planned_ > probe_started_ + kMinProbeGap) {
      planned_ = OnGridAfter(planned_, step);
    }
  }
  if (const auto follow = FollowAt()) planned_ = std::min(planned_, *follow);
  planned_ = std::max(now, planned_);
  timer_ = loop_->At(planned_, [this] { OnTick(); });
  ArmFollow();
  ArmCrossing();  // a replica proven lagging: its verdict at the crossing, before the next probe
}

std::optional<Millis> ReplicaProber::FollowEvery() const {
  if (!stream_ || acting_primary_) return std::nullopt;
  return FollowStep(Millis(config_.probe.after_commit_ms), Millis(config_.probe.interval_ms),
                    sightings_->Servers());
}

std::optional<MonoTime> ReplicaProber::FollowAt() const {
  const auto step = FollowEvery();
  if (!step) return std::nullopt;
  const auto arrival = stream_->LastTransactionArrival();
  if (!arrival) return std::nullopt;
  return FollowCommitAt(*arrival, probe_started_, *step);
}

void ReplicaProber::ArmFollow() {
  if (follow_timer_) return;
  const auto step = FollowEvery();
  if (!step) return;
  follow_timer_ = loop_->At(clock_.Now() + *step, [this] { OnFollow(); });
}

void ReplicaProber::OnFollow() {
  follow_timer_ = 0;
  // In flight (ScheduleNext looks when it ends, and arms the next look) or stopped.
  if (!timer_) return;
  if (const auto follow = FollowAt(); follow && *follow < planned_) {
    loop_->Cancel(timer_);
    planned_ = std::max(clock_.Now(), *follow);
    timer_ = loop_->At(planned_, [this] { OnTick(); });
  }
  ArmFollow();
}

std::optional<MonoTime> ReplicaProber::NextCrossing() const {
  // With no probe in flight (a replica proven lagging) there is no answer to wait for.
  const Millis grace = in_flight_ ? AnswerGrace() : Millis(0);
  return CrossingVerdictAt(*judge_.bounds()->fresh_at, limits_ms_, judge_.judged_delay_ms(), grace,
                           probe_started_);
}

bool ReplicaProber::ProvenLagging() const {
  return judge_.bounds() && judge_.lag_growing() &&
         lagwatch::ProvenLagging(judge_.bounds()->lower, limits_ms_, judge_.judged_delay_ms());
}

void ReplicaProber::ArmCrossing() {
  CancelCrossing();
  if (acting_primary_ || !judge_.has_fresh_bound()) return;
  if (!in_flight_ && !ProvenLagging()) return;
  const auto at = NextCrossing();
  if (!at) return;
  crossing_timer_ = loop_->At(std::max(*at, clock_.Now()), [this] { OnCrossing(); });
}

std::optional<AppliedProof> ReplicaProber::Witnessed() const {
  return witnesses_ ? witnesses_->Of(id_) : std::nullopt;
}

void ReplicaProber::CancelCrossing() {
  if (crossing_timer_) loop_->Cancel(crossing_timer_);
  crossing_timer_ = 0;
}

Micros ReplicaProber::SlowestRecentRtt() const {
  return *std::max_element(rtts_.begin(), rtts_.end());
}

Millis ReplicaProber::AnswerGrace() const {
  return CrossingGrace(SlowestRecentRtt(), Millis(config_.probe.timeout_ms));
}

bool ReplicaProber::PrimaryKnownAt(MonoTime now) const {
  return PrimaryKnown(now, *log_, *history_, Millis(config_.heartbeat.interval_ms),
                      Millis(config_.sampler_interval_ms));
}

MonoTime ReplicaProber::WritableElsewhereNotBefore(MonoTime now) const {
  return sightings_->WritableNotBefore(topology_->primary().Id(), id_, now);
}

std::optional<MonoTime> ReplicaProber::OthersWritableAfter(MonoTime now) const {
  const MonoTime after = WritableElsewhereNotBefore(now);
  if (after == MonoTime::max() || after == MonoTime::min()) return std::nullopt;
  return after;
}

std::optional<MonoTime> ReplicaProber::ReadOnlyHorizon(MonoTime now) const {
  const auto read_only = history_->ReadOnlyNow();
  if (!read_only) return std::nullopt;
  const MonoTime elsewhere = WritableElsewhereNotBefore(now);
  if (elsewhere == MonoTime::max()) return std::nullopt;  // no other server answers
  // No server other than the primary took a write before `elsewhere`; the primary was writable
  // until after its last writable sample was sent, so none was made writable before that either
  // (a switchover makes the old primary read-only first).
  const MonoTime horizon = std::max(read_only->last_writable.value_or(MonoTime::min()), elsewhere);
  if (horizon == MonoTime::min()) return std::nullopt;  // nothing known: as without the check
  return horizon;
}

void ReplicaProber::OnCrossing() {
  crossing_timer_ = 0;
  if (!judge_.has_fresh_bound() || (!in_flight_ && !ProvenLagging())) return;
  const MonoTime now = clock_.Now();
  if (session_.AnswerWaiting()) {
    // The answer is here and the loop, not the replica, is late: it is read next, and decides.
    crossing_timer_ = loop_->At(now + Millis(1), [this] { OnCrossing(); });
    return;
  }
  // What the primary did since the last answer may move the bound (a hung replica lacks only
  // what came after its position): the crossing is then later, or gone.
  judge_.Advance(now, *history_, stream_, Witnessed(), ReadOnlyHorizon(now));
  if (const auto at = NextCrossing(); !at || *at > now) {
    if (at) crossing_timer_ = loop_->At(*at, [this] { OnCrossing(); });
    return;
  }
  const bool primary_known = PrimaryKnownAt(now);
  const Judgement j = judge_.AtCrossing(now, clock_.WallNow(), primary_known,
                                        CaughtUpWithPrimary(judge_.bounds(), *log_, *history_),
                                        primary_known ? std::nullopt : OthersWritableAfter(now));
  metrics_->crossing_verdicts.Increment();
  Metric().lag_upper_seconds.Set(static_cast<double>(j.record.delay_ms) / 1000.0);
  Metric().lag_lower_seconds.Set(0);
  Metric().healthy.Set(j.record.healthy ? 1 : 0);
  Metric().SetState(j.record.state);
  PublishVerdict(j, in_flight_ ? " (no answer yet at the crossing)" : " (at the crossing)");
  {
    std::lock_guard lock(mu_);
    view_.state = j.record.state;
    view_.healthy = j.record.healthy;
    view_.last = j.record;
  }
  ArmCrossing();  // the next limit, if the answer is still not in when the bound reaches it
}

void ReplicaProber::StartOver(uint64_t epoch) {
  // Bounds and verdicts were against the previous primary; they prove nothing about this one.
  epoch_ = epoch;
  judge_.StartOver();
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
  judge_.ForgetBounds();  // its own freshness as the primary is no bound as a replica
  std::lock_guard lock(mu_);
  view_.state = "primary";
  view_.healthy = false;
  ++view_.probes;
}

void ReplicaProber::LeavePrimary() {
  acting_primary_ = false;
  StartOver(epoch_);
  probe_soon_ = true;
  ShowServer(session_.facts());
  Log(LogLevel::kInfo, "server " + id_ + " is no longer the primary: probed as a replica");
}

void ReplicaProber::MarkProbeDone() {
  std::lock_guard lock(mu_);
  probed_once_ = true;
  last_probe_done_ = clock_.Now();
}

void ReplicaProber::RecordMetrics(const Assessment& a, const Judgement& j) {
  const ReplicaSnapshot& snap = j.record;
  if (j.health.delay_ms) {
    const double upper = static_cast<double>(*j.health.delay_ms) / 1000.0;
    m_->lag_upper_seconds.Set(upper);
    m_->lag_lower_seconds.Set(static_cast<double>(snap.delay_lower_ms) / 1000.0);
    m_->lag_seconds.Observe(upper);
    if (j.health.reachable && *j.health.delay_ms <= config_.slo_delay_ms) {
      m_->probes_within_slo.Increment();
    }
  }
  m_->healthy.Set(snap.healthy ? 1 : 0);
  m_->SetState(snap.state);
  // Unknown (no status poll has answered, e.g. a missing grant; or no channel from the primary)
  // is NaN, not a stopped thread.
  const ReplicationStatus& status = a.status;
  const bool known = status.known && status.channel_match != ChannelMatch::kNone;
  m_->io_thread_running.Set(!known ? std::nan("") : status.io_running ? 1 : 0);
  m_->sql_thread_running.Set(!known ? std::nan("") : status.sql_running ? 1 : 0);
  m_->seconds_behind_master.Set(known && status.seconds_behind_master
                                    ? static_cast<double>(*status.seconds_behind_master)
                                    : std::nan(""));
  if (status.relay_log_space) {
    m_->relay_log_space_bytes.Set(static_cast<double>(*status.relay_log_space));
  }
}

void ReplicaProber::Publish(const Assessment& a, const Judgement& j, bool backing_off) {
  for (const Judgement::Notice& n : j.notices)
    Log(n.warn ? LogLevel::kWarn : LogLevel::kInfo, n.text);
  const std::string why =
      !a.probe_status.ok() ? " (" + a.probe_status.ToString() + ")"
      : !a.status.last_error.empty() && a.status.channel_match != ChannelMatch::kNone
          ? " (" + a.status.last_error + ")"
          : "";
  PublishVerdict(j, why);
  if (!a.probe_status.ok() && !backing_off) {
    LogLimited(LogLevel::kWarn, "probe:" + id_,
               "probe of " + id_ + " failed: " + a.probe_status.ToString());
  }
  if (a.status_error) {
    LogLimited(LogLevel::kWarn, "status:" + id_,
               session_.facts().status_statement + " on " + id_ +
                   " failed: " + a.status_error->ToString());
  }
}

void ReplicaProber::PublishVerdict(const Judgement& j, const std::string& why) {
  const ReplicaSnapshot& snap = j.record;
  // A replica is published once it has been measured with what the agent will keep comparing;
  // before that its key stays absent, which routers read as "unusable" (docs/redis.md). A bound
  // comes with the first measurement, and the positions kind decides how tight it is.
  if (judge_.bounds() && session_.positions_decided()) {
    publisher_->Publish(snap);
    if (board_) board_->Put(snap);
  }
  if (!j.verdict.changed) return;
  std::optional<contract::PreviousVerdict> previous;
  if (had_verdict_)
    previous = contract::PreviousVerdict{StateName(j.previous.state), j.previous.healthy};
  had_verdict_ = true;
  publisher_->PublishEvent(contract::ReplicaEventJson(snap, previous));
  Log(LogLevel::kInfo,
      "replica " + id_ + " is now " + snap.state + (j.verdict.healthy ? " healthy" : " unhealthy") +
          ", delay_ms<=" + (judge_.bounds() ? std::to_string(snap.delay_ms) : "unknown") + why);
}

void ReplicaProber::RecordWindows(const Assessment& a, const Judgement& j) {
  const ReplicaSnapshot& snap = j.record;
  replication_stopped_ = a.status.known && !j.health.threads_running;
  {
    std::lock_guard lock(mu_);
    // SLAR counts every probe: one that could not measure is not within the SLO.
    const bool within_slo =
        j.health.reachable && j.health.delay_ms && *j.health.delay_ms <= config_.slo_delay_ms;
    slar_window_.Add(a.obs.received, within_slo);
    if (j.health.delay_ms) {
      lag_window_.Add(a.obs.received, static_cast<double>(*j.health.delay_ms));
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
