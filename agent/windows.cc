#include "agent/windows.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lagwatch {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// 0-based position of the nearest-rank `percent` quantile among n >= 1 sorted values:
// ceil(percent × n / 100) - 1, in integers so that 95 % of 100 is exactly rank 95.
size_t RankIndex(size_t n, size_t percent) { return (n * percent + 99) / 100 - 1; }

// QuantileWindow keeps sample times as 32-bit millisecond offsets from a base that moves on
// once they reach 2^31, keeping the last 2^30 ms (more than any window) representable.
constexpr int64_t kRebaseAfterMs = int64_t{1} << 31;
constexpr int64_t kKeepMs = int64_t{1} << 30;

}  // namespace

QuantileWindow::QuantileWindow(Millis span, size_t capacity)
    : span_(span), capacity_(std::max<size_t>(capacity, 1)), ring_(capacity_) {}

int64_t QuantileWindow::MsSinceBase(MonoTime t) const {
  return std::chrono::floor<Millis>(t - *base_).count();
}

void QuantileWindow::Add(MonoTime at, double value) {
  if (std::isnan(value)) return;
  if (!base_) base_ = at;
  if (MsSinceBase(at) >= kRebaseAfterMs) {
    // Move the base on so offsets stay in 32 bits. Samples older than the new base are older
    // than any window (span < 2^30 ms) and are pinned to it, which keeps them out.
    const int64_t shift = MsSinceBase(at) - kKeepMs;
    *base_ += Millis(shift);
    for (size_t i = 0; i < size_; ++i) {
      ring_[i].at_ms = static_cast<uint32_t>(std::max<int64_t>(ring_[i].at_ms - shift, 0));
    }
  }
  if (size_ == capacity_) {
    last_overwritten_at_ = *base_ + Millis(ring_[next_].at_ms);
  } else {
    ++size_;
  }
  ring_[next_] = {static_cast<uint32_t>(MsSinceBase(at)), static_cast<float>(value)};
  next_ = (next_ + 1) % capacity_;
}

QuantileWindow::Summary QuantileWindow::Summarize(MonoTime now, Millis span) const {
  std::vector<double> values;
  if (base_) {
    const int64_t to = MsSinceBase(now);
    const int64_t from = MsSinceBase(now - std::min(span, span_));
    values.reserve(size_);
    // Entries [0, size_) are the valid ones whether or not the ring has wrapped; order is
    // irrelevant to quantiles.
    for (size_t i = 0; i < size_; ++i) {
      const int64_t at = ring_[i].at_ms;
      if (at > from && at <= to) values.push_back(ring_[i].value);
    }
  }
  Summary s;
  s.count = values.size();
  if (values.empty()) {
    s.p50 = s.p95 = s.p99 = s.max = kNaN;
    return s;
  }
  // Select the highest rank first, then each lower one within the part below it, so the three
  // selections together stay O(n).
  const size_t i99 = RankIndex(values.size(), 99);
  const size_t i95 = RankIndex(values.size(), 95);
  const size_t i50 = RankIndex(values.size(), 50);
  const auto begin = values.begin();
  std::nth_element(begin, begin + i99, values.end());
  s.p99 = values[i99];
  s.max = *std::max_element(begin + i99, values.end());
  std::nth_element(begin, begin + i95, begin + i99);
  s.p95 = values[i95];
  std::nth_element(begin, begin + i50, begin + i95);
  s.p50 = values[i50];
  return s;
}

bool QuantileWindow::truncated(MonoTime now) const {
  return last_overwritten_at_ && *last_overwritten_at_ > now - span_;
}

RatioWindow::RatioWindow(Millis span, Millis slot) : span_(span), slot_(std::max(slot, Millis(1))) {
  // The window (now - span, now] touches at most ceil(span / slot) + 1 slots.
  const int64_t slots = span_.count() > 0 ? (span_.count() + slot_.count() - 1) / slot_.count() : 0;
  ring_.assign(static_cast<size_t>(slots + 1), Slot{std::numeric_limits<int64_t>::min(), 0, 0});
}

int64_t RatioWindow::SlotIndex(MonoTime t) const {
  const auto since_epoch = t.time_since_epoch();
  return FloorDiv(since_epoch.count(),
                  std::chrono::duration_cast<MonoTime::duration>(slot_).count());
}

void RatioWindow::Add(MonoTime at, bool good) {
  const int64_t index = SlotIndex(at);
  const auto n = static_cast<int64_t>(ring_.size());
  Slot& slot = ring_[static_cast<size_t>((index % n + n) % n)];
  if (slot.index > index) return;
  if (slot.index < index) slot = {index, 0, 0};
  ++slot.total;
  if (good) ++slot.good;
}

RatioWindow::Totals RatioWindow::Sum(MonoTime now, Millis span) const {
  const int64_t first = SlotIndex(now - std::min(span, span_));
  const int64_t last = SlotIndex(now);
  Totals t;
  for (const Slot& slot : ring_) {
    if (slot.index < first || slot.index > last) continue;
    t.good += slot.good;
    t.total += slot.total;
  }
  return t;
}

std::optional<double> RatioWindow::Ratio(MonoTime now, Millis span) const {
  const Totals t = Sum(now, span);
  if (t.total == 0) return std::nullopt;
  return static_cast<double>(t.good) / static_cast<double>(t.total);
}

uint64_t RatioWindow::Count(MonoTime now, Millis span) const { return Sum(now, span).total; }

CounterRatioWindow::CounterRatioWindow(Millis span, size_t capacity)
    : span_(span), capacity_(std::max<size_t>(capacity, 2)), ring_(capacity_) {}

const CounterRatioWindow::Observation& CounterRatioWindow::Oldest(size_t i) const {
  const size_t start = (next_ + capacity_ - size_) % capacity_;
  return ring_[(start + i) % capacity_];
}

void CounterRatioWindow::Observe(MonoTime at, double numerator_total, double denominator_total) {
  if (!std::isfinite(numerator_total) || !std::isfinite(denominator_total)) return;
  if (size_ > 0) {
    const Observation& newest = Oldest(size_ - 1);
    if (numerator_total < newest.numerator || denominator_total < newest.denominator) {
      size_ = 0;
      last_overwritten_at_.reset();
    }
  }
  if (size_ == capacity_) {
    last_overwritten_at_ = ring_[next_].at;
  } else {
    ++size_;
  }
  ring_[next_] = {at, numerator_total, denominator_total};
  next_ = (next_ + 1) % capacity_;
}

std::optional<double> CounterRatioWindow::Ratio(MonoTime now) const {
  const MonoTime from = now - span_;
  const Observation* first = nullptr;
  const Observation* last = nullptr;
  for (size_t i = 0; i < size_; ++i) {
    const Observation& o = Oldest(i);
    if (o.at <= from) continue;
    if (o.at > now) break;
    if (first == nullptr) first = &o;
    last = &o;
  }
  if (first == nullptr) return std::nullopt;
  // A single observation in the window has a zero delta, so it is caught here too.
  const double denominator_delta = last->denominator - first->denominator;
  if (denominator_delta <= 0) return std::nullopt;
  return (last->numerator - first->numerator) / denominator_delta;
}

bool CounterRatioWindow::truncated(MonoTime now) const {
  return last_overwritten_at_ && *last_overwritten_at_ > now - span_;
}

}  // namespace lagwatch
