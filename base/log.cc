#include "base/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <unordered_map>

#include "base/strings.h"

namespace lagwatch {
namespace {

struct Limiter {
  std::chrono::steady_clock::time_point last{};
  long suppressed = 0;
};

std::mutex g_mu;
std::unordered_map<std::string, Limiter>* g_limiters = new std::unordered_map<std::string, Limiter>;

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

void LogLimited(LogLevel level, std::string_view key, std::string_view message, int interval_s) {
  std::lock_guard lock(g_mu);
  auto now = std::chrono::steady_clock::now();
  Limiter& lim = (*g_limiters)[std::string(key)];
  if (lim.last.time_since_epoch().count() != 0 &&
      now - lim.last < std::chrono::seconds(interval_s)) {
    ++lim.suppressed;
    return;
  }
  lim.last = now;
  if (lim.suppressed > 0) {
    std::string line(message);
    line += " (" + std::to_string(lim.suppressed) + " similar suppressed)";
    lim.suppressed = 0;
    WriteLine(level, line);
  } else {
    WriteLine(level, message);
  }
}

}  // namespace lagwatch
