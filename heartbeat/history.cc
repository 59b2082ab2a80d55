#include "heartbeat/history.h"

namespace lagwatch {
namespace {

// One value read or written under its mutex: the histories' many one-field accessors.
template <typename T>
T Guarded(std::mutex& mu, const T& value) {
  std::lock_guard lock(mu);
  return value;
}
template <typename T, typename V>
void SetGuarded(std::mutex& mu, T& field, const V& value) {
  std::lock_guard lock(mu);
  field = value;
}

}  // namespace

void HeartbeatLog::RecordSent(uint64_t seq, MonoTime sent) {
  std::lock_guard lock(mu_);
  records_.push_back({seq, sent, std::nullopt});
  while (records_.size() > capacity_) records_.pop_front();
}

void HeartbeatLog::RecordAcked(uint64_t seq, MonoTime acked) {
  std::lock_guard lock(mu_);
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->seq == seq) {
      it->acked = acked;
      last_ack_ = acked;
      last_acked_sent_ = it->sent;
      return;
    }
    if (it->seq < seq) return;
  }
}

std::optional<HeartbeatRecord> HeartbeatLog::Find(uint64_t seq) const {
  std::lock_guard lock(mu_);
  if (records_.empty() || seq < records_.front().seq || seq > records_.back().seq) {
    return std::nullopt;
  }
  // Seqs are usually consecutive; fall back to a search when a restart left a gap.
  size_t guess = static_cast<size_t>(seq - records_.front().seq);
  if (guess < records_.size() && records_[guess].seq == seq) return records_[guess];
  for (const auto& r : records_) {
    if (r.seq == seq) return r;
  }
  return std::nullopt;
}

std::optional<MonoTime> HeartbeatLog::LastAckedSent() const {
  return Guarded(mu_, last_acked_sent_);
}

void HeartbeatLog::RecordFailure(MonoTime at) { SetGuarded(mu_, last_failure_, at); }

std::optional<MonoTime> HeartbeatLog::LastFailure() const { return Guarded(mu_, last_failure_); }

std::optional<HeartbeatRecord> HeartbeatLog::Latest() const {
  std::lock_guard lock(mu_);
  if (records_.empty()) return std::nullopt;
  return records_.back();
}

std::optional<MonoTime> HeartbeatLog::LastAck() const { return Guarded(mu_, last_ack_); }

void HeartbeatLog::Clear() {
  std::lock_guard lock(mu_);
  records_.clear();
  last_ack_.reset();
  last_acked_sent_.reset();
  last_failure_.reset();
}

void PositionHistory::Reset() {
  std::lock_guard lock(mu_);
  ++generation_;
  runs_.clear();
  last_gap_.reset();
  kind_.reset();
  server_id_.reset();
  last_failure_.reset();
  in_flight_.reset();
  last_writable_.reset();
  read_only_ = false;
}

uint64_t PositionHistory::generation() const { return Guarded(mu_, generation_); }

bool PositionHistory::Add(const Position& pos, MonoTime sent, MonoTime received,
                          std::optional<uint64_t> generation) {
  std::lock_guard lock(mu_);
  if (generation && *generation != generation_) return true;  // the previous primary's
  in_flight_.reset();
  if (!runs_.empty() && sent - runs_.back().last_sent > gap_after_) {
    last_gap_ = Gap{runs_.back().last_sent, sent};
  }
  if (!runs_.empty() && runs_.back().pos == pos) {
    runs_.back().last_sent = sent;
    return true;
  }
  const bool forward = runs_.empty() || pos.Includes(runs_.back().pos);
  if (!forward) runs_.clear();
  runs_.push_back({pos, sent, received, sent});
  while (runs_.size() > capacity_) runs_.pop_front();
  return forward;
}

void PositionHistory::SetSource(PositionsKind kind, std::optional<uint32_t> server_id,
                                std::optional<uint64_t> generation) {
  std::lock_guard lock(mu_);
  if (generation && *generation != generation_) return;
  if (kind != kind_ || server_id != server_id_) {
    runs_.clear();
    last_gap_.reset();
  }
  kind_ = kind;
  server_id_ = server_id;
}

std::optional<PositionsKind> PositionHistory::kind() const { return Guarded(mu_, kind_); }

std::optional<PositionHistory::Gap> PositionHistory::LastGap() const {
  return Guarded(mu_, last_gap_);
}

std::optional<uint32_t> PositionHistory::primary_server_id() const {
  return Guarded(mu_, server_id_);
}

PositionHistory::Bounds PositionHistory::Locate(const Position& replica_pos) const {
  std::lock_guard lock(mu_);
  Bounds b;
  // Positions only grow, so the runs the replica has reached form a prefix: walk back from the
  // newest to the first one reached.
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    switch (replica_pos.Compare(it->pos)) {
      case Inclusion::kIncludes:
        b.fresh_at = it->last_sent;
        return b;
      case Inclusion::kLacks:
        if (replica_pos.BehindProvesMissing(it->pos)) b.missing_since = it->first_received;
        break;
      case Inclusion::kIncomparable: {
        Bounds none;
        none.incomparable = true;
        return none;
      }
    }
  }
  return b;
}

std::optional<MonoTime> PositionHistory::LastSample() const {
  std::lock_guard lock(mu_);
  if (runs_.empty()) return std::nullopt;
  return runs_.back().last_sent;
}

}  // namespace lagwatch

namespace lagwatch {

void PositionHistory::RecordFailure(MonoTime at, std::optional<uint64_t> generation) {
  std::lock_guard lock(mu_);
  if (generation && *generation != generation_) return;
  last_failure_ = at;
  in_flight_.reset();
}

void PositionHistory::EndSample(std::optional<uint64_t> generation) {
  std::lock_guard lock(mu_);
  if (generation && *generation != generation_) return;
  in_flight_.reset();
}

void PositionHistory::BeginSample(MonoTime sent, std::shared_ptr<const ThreadCounters> sender) {
  InFlight f{sent, std::move(sender), std::nullopt, 0};
  if (f.sender) {
    f.busy = f.sender->Busy();
    f.resumes = f.sender->ResumeEpoch();
  }
  SetGuarded(mu_, in_flight_, std::optional<InFlight>(std::move(f)));
}

std::optional<Micros> PositionHistory::AnswerAwaited(MonoTime now) const {
  const std::optional<InFlight> f = Guarded(mu_, in_flight_);
  if (!f) return std::nullopt;
  const Micros waited = std::max(Micros(0), AwaitedNow(*f, now));
  std::lock_guard lock(mu_);
  // Ended (or another begun) while the counters were read: that sample's wait is all there is.
  if (!in_flight_ || in_flight_->sent != f->sent || in_flight_->sender != f->sender) return waited;
  in_flight_->longest = std::max(in_flight_->longest, waited);
  return in_flight_->longest;
}

Micros PositionHistory::AwaitedNow(const InFlight& f, MonoTime now) {
  auto waited = std::chrono::duration_cast<Micros>(now - f.sent);
  if (f.sender) {
    if (f.sender->ResumeEpoch() != f.resumes) return Micros(0);
    // Runnable first: a sender asleep now has no wait for a CPU under way that Busy would miss.
    if (f.sender->Runnable().value_or(false)) return Micros(0);
    const auto busy = f.sender->Busy();
    if (busy && f.busy) waited -= std::chrono::duration_cast<Micros>(*busy - *f.busy);
  }
  return waited;
}

void PositionHistory::NoteWritable(MonoTime sent, bool writable,
                                   std::optional<uint64_t> generation) {
  std::lock_guard lock(mu_);
  if (generation && *generation != generation_) return;
  read_only_ = !writable;
  if (writable && (!last_writable_ || sent > *last_writable_)) last_writable_ = sent;
}

std::optional<PositionHistory::ReadOnly> PositionHistory::ReadOnlyNow() const {
  std::lock_guard lock(mu_);
  if (!read_only_) return std::nullopt;
  return ReadOnly{last_writable_};
}

std::optional<MonoTime> PositionHistory::LastFailure() const { return Guarded(mu_, last_failure_); }

}  // namespace lagwatch
