#include "heartbeat/stream_history.h"

#include <algorithm>

#include "base/log.h"

namespace lagwatch {

namespace {

// Lags are kept for at least two spans: D at a transaction reaches lag_span before it.
StreamHistoryOptions Kept(StreamHistoryOptions o) {
  o.lag_window = std::max(o.lag_window, 2 * o.lag_span);
  return o;
}

}  // namespace

StreamHistory::StreamHistory(StreamHistoryOptions options) : options_(Kept(options)) {}

uint64_t StreamHistory::Begin(const Position& start, MonoTime at) {
  std::lock_guard lock(mu_);
  ++token_;
  running_ = true;
  incomparable_ = false;
  began_ = at;
  caught_up_ = false;
  last_alive_ = at;
  last_transaction_.reset();
  runs_.clear();
  pending_.clear();
  lags_.clear();
  long_lags_.clear();
  commit_us_.reset();
  runs_.push_back({start, at});
  return token_;
}

void StreamHistory::AddLag(MonoTime sent, MonoTime delivered) {
  const Micros lag = std::max(Micros(0), std::chrono::duration_cast<Micros>(delivered - sent));
  // In order of `sent`, for the pruning below. Samples come in that order; one that waited is
  // resolved before any sent after it that holds it, so this is the end but for a position that
  // went backwards.
  auto at = std::upper_bound(lags_.begin(), lags_.end(), sent,
                             [](MonoTime t, const Lag& l) { return t < l.sent; });
  lags_.insert(at, {sent, lag});
  if (lag > options_.lag_span) long_lags_.push_back({sent, lag});
  const MonoTime kept_from = lags_.back().sent - options_.lag_window;
  while (!lags_.empty() && lags_.front().sent < kept_from) lags_.pop_front();
  std::erase_if(long_lags_, [&](const Lag& l) { return l.sent < kept_from; });
  // A sample sent since the stream began, delivered by a transaction after its start: the dump
  // thread had passed the start and sent what was written before the sample.
  if (!caught_up_ && sent >= began_ && delivered > began_) CatchUp(delivered);
}

std::optional<Micros> StreamHistory::DeliveryBoundAt(MonoTime a, MonoTime now) const {
  const MonoTime since = a - options_.lag_span;
  // Lags sent before now − lag_window may be gone (AddLag keeps those sent since the newest
  // one's time less lag_window), unless the stream is younger than that.
  if (since < now - options_.lag_window && began_ < now - options_.lag_window) return std::nullopt;
  Micros d = options_.min_delivery;
  // Every lag sent since `since` counts: a suffix (lags_ is by `sent`), about lag_span's worth of
  // samples, not every lag kept (lag_window's: 500 at a 20 ms sampling interval), at each probe.
  auto from = std::lower_bound(lags_.begin(), lags_.end(), since,
                               [](const Lag& l, MonoTime t) { return l.sent < t; });
  for (auto it = from; it != lags_.end(); ++it) d = std::max(d, it->lag);
  // One sent before `since` counts if it was delivered at or after `a`: then its lag exceeds
  // a − since = lag_span, so it is one of long_lags_.
  for (const Lag& l : long_lags_) {
    if (l.sent <= a && l.sent + l.lag >= a) d = std::max(d, l.lag);
  }
  return d;
}

void StreamHistory::CatchUp(MonoTime upto) {
  // What arrived by `upto` may have come late (a dump thread reads the binary log up to the
  // position asked for before it sends what follows), by more than any D measured: the newest of
  // it stays, as the first run, and a replica that lacks any of it is behind every run (no
  // stream bound). What arrives from now on bounds as usual.
  caught_up_ = true;
  auto after = std::partition_point(runs_.begin(), runs_.end(),
                                    [&](const Run& run) { return run.first_arrival <= upto; });
  if (after != runs_.begin()) runs_.erase(runs_.begin(), std::prev(after));
}

void StreamHistory::Transaction(uint64_t token, const Position& after, MonoTime first_arrival,
                                std::optional<std::pair<uint64_t, uint64_t>> commit_us) {
  std::lock_guard lock(mu_);
  if (token != token_ || !running_) return;
  if (commit_us) commit_us_ = commit_us;
  if (!runs_.empty() && runs_.back().pos == after) return;
  runs_.push_back({after, first_arrival});
  last_transaction_ = first_arrival;
  while (runs_.size() > options_.capacity) runs_.pop_front();
  // Samples waiting for this position: delivered when this transaction's first event arrived.
  while (!pending_.empty()) {
    const Inclusion inc = after.Compare(pending_.front().pos);
    if (inc == Inclusion::kIncomparable) {
      incomparable_ = true;
      pending_.clear();
      break;
    }
    if (inc == Inclusion::kLacks) break;
    AddLag(pending_.front().sent, first_arrival);
    pending_.pop_front();
  }
}

void StreamHistory::Alive(uint64_t token, MonoTime at, bool heartbeat) {
  std::lock_guard lock(mu_);
  if (token != token_ || !running_) return;
  if (!last_alive_ || at > *last_alive_) last_alive_ = at;
  // The dump thread sends a heartbeat only at the end of the binary log: it has caught up.
  if (heartbeat && !caught_up_) CatchUp(at);
}

void StreamHistory::Stop(uint64_t token) {
  std::lock_guard lock(mu_);
  if (token == token_) running_ = false;
}

void StreamHistory::Reset() {
  std::lock_guard lock(mu_);
  ++token_;
  running_ = false;
  incomparable_ = false;
  caught_up_ = false;
  last_alive_.reset();
  last_transaction_.reset();
  runs_.clear();
  pending_.clear();
  lags_.clear();
  long_lags_.clear();
}

std::optional<MonoTime> StreamHistory::CatchingUpSince() const {
  std::lock_guard lock(mu_);
  if (!running_ || caught_up_) return std::nullopt;
  return began_;
}

std::optional<MonoTime> StreamHistory::LastTransactionArrival() const {
  std::lock_guard lock(mu_);
  return last_transaction_;
}

void StreamHistory::CheckSample(const Position& pos, MonoTime sent) {
  std::lock_guard lock(mu_);
  // A sample sent before the stream began says nothing about its delivery.
  if (!running_ || runs_.empty() || sent < began_) return;
  // The earliest run that holds the sample: everything written before `sent` had arrived then.
  // Runs only grow (each includes the one before: the decoder refuses anything else) and share
  // one kind and binary log name, so the newest says whether they compare at all, and the runs
  // that hold the sample are a suffix.
  if (runs_.back().pos.Compare(pos) == Inclusion::kIncomparable) {
    incomparable_ = true;
    return;
  }
  auto first = std::partition_point(runs_.begin(), runs_.end(),
                                    [&](const Run& run) { return !run.pos.Includes(pos); });
  if (first != runs_.end()) {
    AddLag(sent, first->first_arrival);
  } else if (pending_.size() < options_.capacity) {
    pending_.push_back({pos, sent});
  }
}

StreamHistory::State StreamHistory::StateLocked(MonoTime now) const {
  State s;
  s.last_alive = last_alive_;
  s.commit_us = commit_us_;
  if (!runs_.empty()) s.position = runs_.back().pos;
  const Micros d = DeliveryBoundAt(now, now).value_or(options_.min_delivery);
  s.delivery_bound = d;
  if (!running_ || runs_.empty() || !last_alive_) {
    s.why_not = stream_reason::kDown;
  } else if (incomparable_) {
    s.why_not = stream_reason::kIncomparable;
  } else if (!caught_up_ || (!pending_.empty() && now - pending_.front().sent > options_.max_lag)) {
    s.why_not = stream_reason::kBehind;
  } else if (d > options_.max_lag) {
    s.why_not = stream_reason::kSlow;
  } else if (now - *last_alive_ > options_.alive_within) {
    s.why_not = stream_reason::kSilent;
  } else {
    s.usable = true;
    s.why_not = nullptr;
  }
  return s;
}

const char* StreamHistory::Observe(const State& s) const {
  const bool fell = was_usable_ && !s.usable;
  was_usable_ = s.usable;
  if (!fell) return nullptr;
  ++fallbacks_[s.why_not];
  return s.why_not;
}

void StreamHistory::LogFallback(const char* reason) {
  LogLimited(LogLevel::kWarn, "binlog-stream-fallback",
             std::string("binary log stream not used (") + reason +
                 "): bounds from position sampling until it is back");
}

void StreamHistory::NoteLate() const {
  {
    std::lock_guard lock(mu_);
    ++fallbacks_[stream_reason::kLate];
  }
  LogFallback(stream_reason::kLate);
}

StreamHistory::State StreamHistory::StateAt(MonoTime now) const {
  State s;
  const char* fell = nullptr;
  {
    std::lock_guard lock(mu_);
    s = StateLocked(now);
    fell = Observe(s);
  }
  if (fell) LogFallback(fell);
  return s;
}

std::vector<std::pair<const char*, uint64_t>> StreamHistory::TakeFallbacks() {
  std::lock_guard lock(mu_);
  std::vector<std::pair<const char*, uint64_t>> out;
  for (const char* reason : stream_reason::kAll) {
    auto it = fallbacks_.find(reason);
    if (it != fallbacks_.end() && it->second > 0) out.emplace_back(reason, it->second);
  }
  fallbacks_.clear();
  return out;
}

StreamHistory::Bounds StreamHistory::Locate(const Position& replica_pos, MonoTime now) const {
  const char* fell = nullptr;
  Bounds b = LocateLocked(replica_pos, now, &fell);
  if (fell) LogFallback(fell);
  return b;
}

StreamHistory::Bounds StreamHistory::LocateLocked(const Position& replica_pos, MonoTime now,
                                                  const char** fell) const {
  std::lock_guard lock(mu_);
  Bounds b;
  const State s = StateLocked(now);
  *fell = Observe(s);
  if (!s.usable) return b;
  // A transaction may be on its way for up to D: the replica lacks nothing written before
  // (arrival of the next run, or the last sign of life) − D, D as measured around that arrival.
  auto fresh_from = [&](MonoTime arrival) -> std::optional<MonoTime> {
    const std::optional<Micros> d = DeliveryBoundAt(arrival, now);
    if (!d || *d > options_.max_lag) return std::nullopt;
    return arrival - std::chrono::duration_cast<MonoTime::duration>(*d);
  };
  // The runs the replica has are a prefix (as in CheckSample): a binary search, not a walk back
  // over every transaction a lagging replica lacks, on every probe.
  switch (replica_pos.Compare(runs_.back().pos)) {
    case Inclusion::kIncomparable:
      return Bounds{std::nullopt, true};
    case Inclusion::kIncludes:
      b.fresh_at = fresh_from(std::max(*last_alive_, runs_.back().first_arrival));
      return b;
    case Inclusion::kLacks:
      break;
  }
  // The first run it lacks (the newest is one): fresh until that one's first event arrived.
  auto lacked = std::partition_point(runs_.begin(), runs_.end(),
                                     [&](const Run& run) { return replica_pos.Includes(run.pos); });
  if (lacked != runs_.begin()) b.fresh_at = fresh_from(lacked->first_arrival);
  return b;
}

}  // namespace lagwatch
