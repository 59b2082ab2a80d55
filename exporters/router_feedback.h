// Router feedback (docs/redis.md, docs/metrics.md): routers count their reads and degradations in
// Redis with `HINCRBY rw_stats:<app> <field> 1`; lagwatch polls those hashes and exports them as
// Prometheus counters, the inputs of RWSR (replica reads / all reads) and DSR (degrade successes /
// attempts).
//
// Three layers, the first two testable without Redis:
//   ParseRwStats         one hash's fields -> AppStats, counting what it had to skip
//                        (exporters/rw_stats.h);
//   FeedbackAccumulator  successive AppStats -> monotonic exported totals, resets absorbed
//                        (exporters/feedback_accumulator.h);
//   RouterFeedback       the polling thread: SCAN (every master of a Redis Cluster in turn) +
//                        HGETALL, then the two above, then metrics (this file).
// Nothing a router or Redis writes is fatal: bad data is counted, logged (rate-limited) and
// skipped.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/redis_client.h"
#include "base/redis_conn.h"
#include "base/status.h"
#include "base/worker.h"
#include "exporters/feedback_accumulator.h"
#include "exporters/metrics.h"
#include "exporters/rw_stats.h"

struct redisReply;

namespace lagwatch {

// Polls Redis for router feedback every `interval` and exports it on `metrics`
// (RouterFeedbackMetrics, exporters/metrics.h, lists the series). Series of an app, once created,
// stay for the life of the process.
//
// One round: SCAN the whole keyspace for `rw_stats:*` (COUNT 100), and per page pipeline HLEN
// then HGETALL for each key. Work per round is bounded: at most kMaxApps apps (more are counted
// as too_many_apps), hashes longer than kMaxFieldsPerApp are skipped (too_many_fields), and a
// round stops after kMaxScanCalls SCAN calls or one interval, whichever is first (scan_truncated),
// and the next round resumes the SCAN where it stopped.
// Every Redis call has a 250 ms timeout; a connection failure closes the connection and the next
// attempt follows a capped exponential backoff (250 ms doubling, at most one interval). With
// Redis Sentinel, each round first checks with ROLE that the server is still a master and, when
// it is not (demoted by a failover), connects to the master the sentinels name now. The first
// round runs as soon as the thread starts. Rounds are timed and waited for on `clock`.
//
// Thread-safe; owns one thread (Start/Stop; the destructor stops). Its own Redis connection.
class RouterFeedback {
 public:
  static constexpr std::chrono::milliseconds kDefaultInterval{5000};
  static constexpr size_t kMaxApps = 1000;
  static constexpr size_t kMaxReplicasPerApp = 64;
  static constexpr long long kMaxFieldsPerApp = 1024;
  static constexpr int kMaxScanCalls = 10000;
  static constexpr const auto& kErrorReasons = kRouterFeedbackErrorReasons;

  // REQUIRES: interval > 0. `metrics` and `clock` must outlive this.
  RouterFeedback(const RedisConfig& config, RouterFeedbackMetrics* metrics, const Clock& clock,
                 std::chrono::milliseconds interval = kDefaultInterval);
  ~RouterFeedback();  // Stop()s
  RouterFeedback(const RouterFeedback&) = delete;
  RouterFeedback& operator=(const RouterFeedback&) = delete;

  // Starts the polling thread. REQUIRES: not running.
  void Start();
  // Stops and joins the thread and closes the connection; returns within about 250 ms (one Redis
  // timeout), or, with Sentinel, within the time RedisConnect may take when the sentinels or the
  // master they name hang (at most six timeouts per sentinel). Idempotent.
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
  // How a round ended, for the wait before the next one.
  enum class RoundEnd { kDone, kFailed, kStopping };
  // One page of SCAN: the cursor to continue from ("0": the scan is complete) and its keys.
  struct ScanPage {
    std::string next_cursor;
    std::vector<std::string> keys;
  };

  void Run(std::stop_token stop);
  // Connects if need be and polls once; kFailed when the connection failed (it is closed).
  RoundEnd RunRound(std::stop_token stop);
  bool Connect();
  void Disconnect();
  // With Sentinel: whether the server of ctx_ is still a master (ROLE), counted and logged when
  // not. Sentinel closes the connections of a server it demotes, but a master demoted otherwise
  // (REPLICAOF by hand) keeps them and answers reads, so without this check the reader could
  // stay on it for good. Always true without Sentinel.
  bool StillOnMaster();
  // One round: each master's keys (one server's, or each of a Redis Cluster's masters in turn),
  // each from where the last round stopped on it. Unavailable: a connection failed (the caller
  // disconnects); ServerError or DataError: Redis refused SCAN or answered nonsense (connection
  // kept); Cancelled: stopping.
  Status Poll(std::stop_token stop);
  // One SCAN call from `cursor` on `master`; errors as Poll's.
  Result<ScanPage> Scan(const Endpoint& master, const std::string& cursor);
  // HLEN then HGETALL for each key of one SCAN page not in `seen` (SCAN may repeat keys), then
  // Ingest; adds their apps to `seen`. Unavailable on a connection failure.
  Status FetchPage(const std::vector<std::string>& keys, std::set<std::string>& seen);
  // The keys of `keys` whose app is valid, not in `seen` and admitted by the accumulator; adds
  // their apps to `seen` and counts the others.
  std::vector<std::string> AdmitKeys(const std::vector<std::string>& keys,
                                     std::set<std::string>& seen);
  // HLEN for `keys` (pipelined, each to its master): those with 1..kMaxFieldsPerApp fields;
  // counts the others. Unavailable on a connection failure.
  Result<std::vector<std::string>> KeysWithinFieldCap(const std::vector<std::string>& keys);
  // HGETALL for `keys` (pipelined, each to its master) and Ingests each hash. Unavailable on a
  // connection failure.
  Status FetchAndIngest(const std::vector<std::string>& keys);
  // One command for each of `keys` (`command` then the key), each to its key's master.
  Result<std::vector<std::vector<RedisReply>>> ForEachKey(const char* command,
                                                          const std::vector<std::string>& keys);
  // The (field, value) pairs of an HGETALL reply, or nullopt if it is not a list of at most
  // kMaxFieldsPerApp string pairs.
  static std::optional<HashFields> FieldsOf(const redisReply& r);

  void CountError(const char* reason, double n = 1);
  // Count and log one key skipped: its app is unusable (`why`), Redis refused a command on it
  // (`r`, an error reply), or its reply to `what` made no sense.
  void SkipBadApp(std::string_view key, const std::string& why);
  void SkipRefused(const std::string& key, const redisReply& r);
  void SkipOddReply(const std::string& key, const char* what);
  // Count and log an app refused because kMaxApps are tracked.
  void RefuseApp(const std::string& app);
  // Count and log what Ingest met besides the counts: problems of the hash, a reset, replicas
  // refused.
  void NoteParseProblems(std::string_view key, const ParseOutcome& out);
  void NoteDeltaProblems(std::string_view key, const FeedbackAccumulator::Delta& d);
  void Export(const std::string& app, const FeedbackAccumulator::Delta& d);

  // Constant after construction.
  const RedisConfig config_;
  const std::chrono::milliseconds interval_;
  RouterFeedbackMetrics* const m_;
  const Clock& clock_;

  FeedbackAccumulator accumulator_;  // thread-safe itself
  std::atomic<uint64_t> polls_{0};
  std::atomic<bool> connected_{false};

  // Used only by the polling thread (and Stop() after joining it).
  std::unique_ptr<RedisClient> client_;
  // Where the next round's SCAN starts on each master ("host:port"; absent: "0").
  std::map<std::string, std::string> scan_cursors_;

  Worker worker_;  // last: stopped before the members its thread uses are destroyed
};

}  // namespace lagwatch
