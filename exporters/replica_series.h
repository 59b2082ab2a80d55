// Storage for the per-replica series (Metrics::Replica): a gauge, a counter, an enum gauge and a
// histogram with the meaning of prometheus-cpp's Gauge::Set, Counter::Increment and
// Histogram::Observe, but without labels, families or a registry. At 1,000 replicas prometheus-cpp
// cost ~15 KB and a copy of every label map per scrape for each replica; these cost a few hundred
// bytes per replica, and Metrics writes their text straight from the atomics.
//
// Thread-safe and lock-free: any thread may update or read at any time (relaxed atomics). Each
// value is read whole, but a reader gets no snapshot across values: a histogram read during an
// Observe may see the observation in its bucket but not yet in its sum.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace lagwatch {

static_assert(std::atomic<double>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// A gauge; starts at 0.
class ReplicaGauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A counter; starts at 0.
class ReplicaCounter {
 public:
  void Increment() { Increment(1.0); }
  // Adds `v`. As prometheus-cpp's Counter, a negative `v` changes nothing.
  void Increment(double v) {
    if (v < 0) return;
    value_.fetch_add(v, std::memory_order_relaxed);
  }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// The enum gauge's storage: which of a fixed list of values is current (its series reads 1, the
// others 0), or none. Starts with none. A scrape sees exactly one current value, or none, never
// two.
class ReplicaEnumGauge {
 public:
  static constexpr int kNone = -1;
  // REQUIRES: index >= 0 and below the list's size, or kNone.
  void Set(int index) { index_.store(index, std::memory_order_relaxed); }
  int Get() const { return index_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int> index_{kNone};
};

// A histogram over the upper bounds `kBounds`: a sorted std::array<double, N> with static storage
// shared by every histogram of the family, plus an implicit +Inf bucket.
template <const auto& kBounds>
class ReplicaHistogram {
 public:
  static constexpr size_t kBuckets = std::size(kBounds) + 1;
  static constexpr const auto& bounds() { return kBounds; }

  // Counts `v` in the first bucket whose bound is not below it (+Inf when all are; the first
  // bucket for NaN) and adds it to the sum: what prometheus-cpp 1.0.1's Histogram::Observe does.
  void Observe(double v) {
    const auto at = std::lower_bound(kBounds.begin(), kBounds.end(), v);
    counts_[static_cast<size_t>(at - kBounds.begin())].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
  }

  // Observations in each bucket or a lower one, +Inf last (so the last is the sample count). Reads
  // each bucket once, so the counts never decrease along the array.
  std::array<uint64_t, kBuckets> CumulativeCounts() const {
    std::array<uint64_t, kBuckets> out;
    uint64_t total = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      total += counts_[i].load(std::memory_order_relaxed);
      out[i] = total;
    }
    return out;
  }
  double Sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
  std::atomic<double> sum_{0.0};
};

}  // namespace lagwatch
