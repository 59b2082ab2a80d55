#include "base/log.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <mutex>

#include "base/strings.h"

namespace lagwatch {
namespace {

std::mutex g_mu;
// Never destroyed: threads may still log while static destructors run.
LogRateLimiter* g_limiter = new LogRateLimiter;  // GUARDED_BY(g_mu)

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

// One line per message, whatever it holds: control bytes are escaped (EscapeControl).
// REQUIRES: g_mu held.
void WriteLine(LogLevel level, std::string_view raw) {
  const std::string message = EscapeControl(raw);
  // The system clock, not an injected Clock: a log line is stamped with when it was written.
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::fprintf(stderr, "%s.%03dZ %s %.*s\n", stamp, ms, LevelName(level),
               static_cast<int>(message.size()), message.data());
}

}  // namespace

void Log(LogLevel level, std::string_view message) {
  std::lock_guard lock(g_mu);
  WriteLine(level, message);
}

bool LogRateLimiter::Allow(std::string_view key, MonoTime now, Millis interval, long* suppressed) {
  auto [it, inserted] = entries_.try_emplace(std::string(key), Entry{now, interval, 0});
  Entry& e = it->second;
  *suppressed = 0;
  if (!inserted) {
    if (now - e.last < interval) {
      ++e.suppressed;
      return false;
    }
    *suppressed = e.suppressed;
    e.last = now;
    e.interval = interval;
    e.suppressed = 0;
  }
  if (entries_.size() >= prune_at_) Prune(now);
  return true;
}

void LogRateLimiter::Prune(MonoTime now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& e = it->second;
    const bool passes_anyway = now - e.last >= e.interval;
    const bool forgotten = now - e.last >= e.interval * kForgetAfterIntervals;
    it = (passes_anyway && e.suppressed == 0) || forgotten ? entries_.erase(it) : std::next(it);
  }
  prune_at_ = std::max<size_t>(64, 2 * entries_.size());
}

void LogLimited(LogLevel level, std::string_view key, std::string_view message, int interval_s) {
  std::lock_guard lock(g_mu);
  long suppressed = 0;
  if (!g_limiter->Allow(key, SystemClock::Get().Now(), std::chrono::seconds(interval_s),
                        &suppressed)) {
    return;
  }
  if (suppressed > 0) {
    std::string line(message);
    line += " (" + std::to_string(suppressed) + " similar suppressed)";
    WriteLine(level, line);
  } else {
    WriteLine(level, message);
  }
}

}  // namespace lagwatch
