// Router feedback, first layer (docs/redis.md): one `rw_stats:<app>` hash, as a router's
// `HINCRBY rw_stats:<app> <field> 1` left it, parsed into AppStats. Pure functions of their
// arguments: no I/O, no clock, no state; thread-safe. Nothing a router writes is fatal here: bad
// data is counted and described, and skipped.
//
// The next layers: exporters/feedback_accumulator.h (successive AppStats -> monotonic totals) and
// exporters/router_feedback.h (the polling thread and the metrics).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/contract.h"

namespace lagwatch {

// The fields of one `rw_stats:<app>` hash, as (field, value) pairs in reply order.
using HashFields = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::string_view kRwStatsPrefix = contract::kRwStatsPrefix;
// The field name of one replica's reads is this prefix and its "host:port".
inline constexpr std::string_view kReplicaFieldPrefix = contract::rw_stats::kReplicaReadsPrefix;

// One router hash, parsed. Counts are the raw values found in Redis (what HINCRBY left there);
// exact as long as they stay below 2^53.
struct AppStats {
  std::string app;
  double reads_replica = 0, reads_master = 0, degrade_attempts = 0, degrade_successes = 0;
  std::map<std::string, double> reads_by_replica;  // "host:port" -> reads
  // Fields present in the hash whose value could not be read (e.g. "reads_master",
  // "reads_replica:db1:3306"). Their counts above are 0 but mean "unknown": the accumulator keeps
  // their previous value instead of taking them for a reset.
  std::set<std::string> unreadable;
};

struct ParseOutcome {
  AppStats stats;
  int malformed = 0;       // values that are not non-negative integers, bad replica suffixes
  int unknown_fields = 0;  // field names outside the contract
  bool bad_app = false;    // the app name is unusable as a label: nothing was parsed
  // Human-readable reasons for the log, at most kMaxProblems of them; bytes outside printable
  // ASCII are escaped and long values truncated.
  std::vector<std::string> problems;
  static constexpr size_t kMaxProblems = 16;
};

// True if `app` may be a label value: 1..64 characters from [A-Za-z0-9_.:-].
bool IsValidAppName(std::string_view app);

// The app of a `rw_stats:<app>` key, or nullopt if `key` lacks the prefix or the app is invalid.
std::optional<std::string> AppFromKey(std::string_view key);

// "host:port" if `s` is one: host 1..253 characters from [A-Za-z0-9._:-] (the same rule as the
// configuration's hosts; split at the last ':'), port 1..65535 written without leading zeros, so
// that one replica has exactly one spelling. Otherwise nullopt.
std::optional<std::string> ParseHostPort(std::string_view s);

// Parses the fields of `rw_stats:<app>`. Never fails: values that are not non-negative base-10
// integers (empty, junk, sign, overflow, fractions), `reads_replica:` fields whose suffix is not
// a valid host:port, and repeated fields count as `malformed`; field names outside the contract
// count as `unknown_fields`; all of them are skipped. An invalid `app` sets `bad_app` and nothing
// else is read.
ParseOutcome ParseRwStats(std::string_view app, const HashFields& fields);

// Text a router or Redis wrote, fit for a log line: in double quotes, bytes outside printable
// ASCII (and `"`, `\`) as \xNN, at most `max_bytes` of it, then "... (N bytes)" if cut.
std::string QuotedForLog(std::string_view s, size_t max_bytes = 64);

}  // namespace lagwatch
