// Logging: one line per event on stderr, rate-limited per event key so a flapping server cannot
// flood the journal. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/clock.h"

namespace lagwatch {

enum class LogLevel { kInfo, kWarn, kError };

// Writes "LEVEL message" to stderr (systemd's journal adds the timestamp; we add one too for
// foreground use).
void Log(LogLevel level, std::string_view message);

// Like Log, but at most once per `interval_s` seconds for the same `key`; when lines were dropped
// the next one that passes says how many.
void LogLimited(LogLevel level, std::string_view key, std::string_view message,
                int interval_s = 10);

// LogLimited's bookkeeping: per key, when a line last passed and how many were held back since.
// Keys come and go (replicas are removed, servers send new error texts), so entries that carry
// nothing are pruned as the map grows: the map stays about as large as the keys seen within one
// interval. Time is passed in, so tests need no clock. Thread-compatible.
class LogRateLimiter {
 public:
  // True if a line for `key` may pass at `now`; then *suppressed is how many were held back since
  // the last one that passed (and the count restarts). False: this line is held back and counted.
  bool Allow(std::string_view key, MonoTime now, Millis interval, long* suppressed);
  size_t size() const { return entries_.size(); }

 private:
  // Drops entries whose next line would pass anyway and that hold no count, and entries idle for
  // kForgetAfterIntervals of their interval (losing only that count).
  void Prune(MonoTime now);
  static constexpr int kForgetAfterIntervals = 10;

  struct Entry {
    MonoTime last;
    Millis interval;
    long suppressed = 0;
  };
  std::unordered_map<std::string, Entry> entries_;
  size_t prune_at_ = 64;  // the size that triggers the next Prune
};

}  // namespace lagwatch
