// Logging: one line per event on stderr, rate-limited per event key so a flapping server cannot
// flood the journal. Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace lagwatch {

enum class LogLevel { kInfo, kWarn, kError };

// Writes "LEVEL message" to stderr (systemd's journal adds the timestamp; we add one too for
// foreground use).
void Log(LogLevel level, std::string_view message);

// Like Log, but at most once per `interval_s` seconds for the same `key`; when lines were dropped
// the next one that passes says how many.
void LogLimited(LogLevel level, std::string_view key, std::string_view message,
                int interval_s = 10);

}  // namespace lagwatch
