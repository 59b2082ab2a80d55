// Router feedback (DESIGN.md §4, §5): routers count their reads and degradations in Redis with
// `HINCRBY rw_stats:<app> <field> 1`; lagwatch polls those hashes and exports them as Prometheus
// counters, the inputs of RWSR (replica reads / all reads) and DSR (degrade successes / attempts).
//
// Three layers, the first two testable without Redis:
//   ParseRwStats         one hash's fields -> AppStats, counting what it had to skip;
//   FeedbackAccumulator  successive AppStats -> monotonic exported totals (resets absorbed);
//   RouterFeedback       the polling thread: SCAN + HGETALL, then the two above, then metrics.
// Nothing a router or Redis writes is fatal: bad data is counted, logged (rate-limited) and
// skipped.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <prometheus/registry.h>

#include "base/redis_conn.h"
#include "base/status.h"

struct redisContext;

namespace lagwatch {

// The fields of one `rw_stats:<app>` hash, as (field, value) pairs in reply order.
using HashFields = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::string_view kRwStatsPrefix = "rw_stats:";

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

// Turns successive snapshots of each app's counters into monotonically increasing totals, the
// way Prometheus treats counter resets: a value that goes DOWN (router restarted, Redis flushed,
// hash deleted) is a reset, and the new value is added as the delta. A field missing from a
// snapshot counts as 0; an unreadable one keeps its previous value. The first snapshot of an app
// adds its full values.
//
// Bounded: at most `max_apps` apps and `max_replicas_per_app` replicas per app are ever tracked
// (they become label values); later newcomers are refused, the ones already tracked stay.
// Thread-safe.
class FeedbackAccumulator {
 public:
  // Cumulative exported totals of one app, for RWSR = reads_replica / reads_all and
  // DSR = degrade_successes / degrade_attempts over any window between two snapshots.
  struct Totals {
    double reads_replica = 0;
    double reads_all = 0;  // replica + master
    double degrade_attempts = 0;
    double degrade_successes = 0;
  };

  // What one Observe() added to the exported totals: every value >= 0.
  struct Delta {
    bool accepted = false;  // false: a new app beyond max_apps; nothing below is set
    double reads_replica = 0, reads_master = 0, degrade_attempts = 0, degrade_successes = 0;
    // One entry per tracked replica present in the snapshot (0 if unchanged), so its series
    // exists from its first sighting.
    std::map<std::string, double> reads_by_replica;
    bool reset = false;        // at least one counter went down
    int replicas_refused = 0;  // new replicas beyond max_replicas_per_app
  };

  explicit FeedbackAccumulator(size_t max_apps = 1000, size_t max_replicas_per_app = 64);

  // True if Observe() would accept `app` (already tracked, or room for one more).
  bool Admits(const std::string& app) const;

  // Folds in the latest snapshot of `stats.app`.
  Delta Observe(const AppStats& stats);

  // A copy of every tracked app's totals.
  std::map<std::string, Totals> AppTotals() const;

 private:
  // Per counter, keyed by hash field name ("reads_master", "reads_replica:h:p", ...).
  struct Counter {
    double last_raw = 0;  // the value seen in Redis last time
    double total = 0;     // exported: never decreases
  };
  struct App {
    std::map<std::string, Counter> counters;
    size_t replicas = 0;
  };

  const size_t max_apps_;
  const size_t max_replicas_per_app_;

  mutable std::mutex mu_;
  std::map<std::string, App> apps_;  // GUARDED_BY(mu_)
};

// Polls Redis for router feedback every `interval` and exports it on `registry`:
//   lagwatch_router_reads_total{app, target="replica"|"master"}
//   lagwatch_router_replica_reads_total{app, replica="host:port"}
//   lagwatch_router_degrade_attempts_total{app}
//   lagwatch_router_degrade_successes_total{app}
//   lagwatch_router_feedback_errors_total{reason}  (reasons: kErrorReasons)
//   lagwatch_router_feedback_polls_total
// Series of an app, once created, stay for the life of the process.
//
// One round: SCAN the whole keyspace for `rw_stats:*` (COUNT 100), and per page pipeline HLEN
// then HGETALL for each key. Work per round is bounded: at most kMaxApps apps (more are counted
// as too_many_apps), hashes longer than kMaxFieldsPerApp are skipped (too_many_fields), and a
// round stops after kMaxScanCalls SCAN calls or one interval, whichever is first (scan_truncated),
// and the next round resumes the SCAN where it stopped.
// Every Redis call has a 250 ms timeout; a connection failure closes the connection and the next
// attempt follows a capped exponential backoff (250 ms doubling, at most one interval). The
// first round runs as soon as the thread starts.
//
// Thread-safe; owns one thread (Start/Stop; the destructor stops). Its own Redis connection.
class RouterFeedback {
 public:
  static constexpr std::chrono::milliseconds kDefaultInterval{5000};
  static constexpr size_t kMaxApps = 1000;
  static constexpr size_t kMaxReplicasPerApp = 64;
  static constexpr long long kMaxFieldsPerApp = 1024;
  static constexpr int kMaxScanCalls = 10000;
  static constexpr const char* kErrorReasons[] = {
      "malformed", "unknown_field", "bad_app",           "wrong_type",      "redis",
      "reset",     "too_many_apps", "too_many_replicas", "too_many_fields", "scan_truncated"};

  // REQUIRES: interval > 0.
  // Registers the metric families on `registry` (which it keeps alive) and creates every
  // errors_total{reason} series at 0. Throws only what prometheus-cpp throws for misuse (a family
  // of the same name but another type already on `registry`).
  RouterFeedback(const RedisConfig& config, std::shared_ptr<prometheus::Registry> registry,
                 std::chrono::milliseconds interval = kDefaultInterval);
  ~RouterFeedback();  // Stop()s
  RouterFeedback(const RouterFeedback&) = delete;
  RouterFeedback& operator=(const RouterFeedback&) = delete;

  // Starts the polling thread. REQUIRES: not running.
  void Start();
  // Stops and joins the thread and closes the connection; returns within about 250 ms (one Redis
  // timeout). Idempotent.
  void Stop();

  // Handles one `rw_stats:*` hash as a round does: parse, accumulate, update metrics, count and
  // log problems. Used by the thread; public so tests can drive the export without Redis.
  void Ingest(std::string_view key, const HashFields& fields);

  // Cumulative totals per app (see FeedbackAccumulator::Totals), for rolling-window ratios.
  std::map<std::string, FeedbackAccumulator::Totals> AppTotals() const {
    return accumulator_.AppTotals();
  }
  // Rounds completed (every page scanned or the round's budget used up).
  uint64_t polls() const { return polls_.load(); }
  bool connected() const { return connected_.load(); }

 private:
  struct Families;

  void Run(std::stop_token stop);
  bool Connect();
  void Disconnect();
  // One round. Unavailable: the connection failed (the caller disconnects); ServerError or
  // DataError: Redis refused SCAN or answered nonsense (connection kept); Cancelled: stopping.
  Status Poll(std::stop_token stop);
  // HLEN then HGETALL for each key of one SCAN page not in `seen` (SCAN may repeat keys), then
  // Ingest; adds their apps to `seen`. Unavailable on a connection failure.
  Status FetchPage(const std::vector<std::string>& keys, std::set<std::string>& seen);
  void CountError(const char* reason, double n = 1);

  // Constant after construction.
  const RedisConfig config_;
  const std::chrono::milliseconds interval_;
  const std::shared_ptr<prometheus::Registry> registry_;
  const std::unique_ptr<Families> m_;

  FeedbackAccumulator accumulator_;  // thread-safe itself
  std::atomic<uint64_t> polls_{0};
  std::atomic<bool> connected_{false};

  // Used only by the polling thread (and Stop() after joining it).
  redisContext* ctx_ = nullptr;
  std::string scan_cursor_ = "0";  // where the next round's SCAN starts

  std::condition_variable_any cv_;  // waits between rounds; woken by the stop token
  std::jthread thread_;
};

}  // namespace lagwatch
