// The Redis publisher (docs/redis.md). Probers hand it records; its own thread writes each one
// into `<prefix>:<host>:<port>` through the merge script of exporters/record_merge.h (several
// agents may share the key), keeps `<prefix>:replicas`, and publishes change events on
// `<prefix>:events`.
//
// Only the latest record per replica is kept while Redis is slow or away (no unbounded queue), and
// every record expires `ttl_ms` after its measurement, however late it is written: one older than
// that is dropped, and one written late lives only for what remains of its TTL, so a key never
// looks fresher than its measurement. Reconnects with capped exponential backoff.
// Thread-safe; owns one thread (Start/Stop; the destructor stops).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/redis_client.h"
#include "base/redis_conn.h"
#include "base/snapshot.h"
#include "base/status.h"
#include "base/worker.h"
#include "exporters/record_merge.h"

namespace lagwatch {

class Metrics;

class RedisPublisher {
 public:
  // `agent_id` is the agent whose records these are (for retiring them: SetReplicas).
  RedisPublisher(const RedisConfig& config, int64_t agent_id, Metrics* metrics, const Clock& clock);
  ~RedisPublisher() { Stop(); }

  // With `realtime`, the publishing thread asks for SCHED_FIFO priority 1 (see
  // base/event_loop.h): records must not wait behind the probes that produce them.
  void Start(bool realtime = false);
  void Stop();

  // The members of `<prefix>:replicas`; members no longer listed are removed from the set and
  // this agent's records removed from their keys (a key goes when no agent's record is left).
  void SetReplicas(const std::vector<std::string>& ids);
  // Drops every record not written yet and removes this agent's record from every member's key
  // (the primary moved: they were judged against the old one), before any record queued after.
  void RetireAll();
  // Queues `snap` for writing, replacing an unwritten older record of the same replica.
  void Publish(const ReplicaSnapshot& snap);
  // Queues the primary's record (`lagwatch:primary:<host>:<port>`), replacing an unwritten one.
  void PublishPrimary(const PrimarySnapshot& snap);
  // Queues a JSON event for the events channel; at most kMaxEvents wait, the oldest are dropped.
  void PublishEvent(std::string json);

  bool connected() const;

  static constexpr size_t kMaxEvents = 1000;

 private:
  // The primary's HSET argument list (docs/redis.md).
  static std::vector<std::string> HsetArgs(const PrimarySnapshot& s);
  // How long a record measured at `measured` may still be read, at `now`: what is left of the TTL.
  Millis Remaining(MonoTime measured, MonoTime now) const;

  void Run(std::stop_token stop);
  // Connects (to every master of a Redis Cluster as it is needed), loading the scripts on each
  // connection.
  bool Connect();
  void Disconnect();
  // Writes everything pending; false on a connection failure or a READONLY reply (what was not
  // written is requeued).
  bool Flush(std::map<std::string, ReplicaSnapshot> records, std::optional<PrimarySnapshot> primary,
             std::deque<std::string> events, bool with_members);
  // Each Append* adds its units of work (one key each: base/redis_cluster.h) to `units`.
  // SADD of every member and, for the replicas removed since, SREM and the retirement of this
  // agent's record from their keys; moves removed_ into `removing`. After RetireAll, first this
  // agent's record leaves every member's key (`*retired_all` says so).
  void AppendMembership(std::vector<RedisUnit>& units, std::set<std::string>& removing,
                        bool* retired_all);
  // The records measured within the TTL before `now`, each merged into its key for what remains
  // of its TTL; adds the measurement time of each to `written`.
  void AppendRecords(std::vector<RedisUnit>& units,
                     const std::map<std::string, ReplicaSnapshot>& records, MonoTime now,
                     std::vector<MonoTime>* written);
  // The primary's record, if there is one measured within the TTL before `now`, and the pointer
  // `<prefix>:primary` naming it, each written with its expiry (what remains of its TTL) in one
  // script call: two keys, which a Redis Cluster may keep on two shards.
  void AppendPrimary(std::vector<RedisUnit>& units, const std::optional<PrimarySnapshot>& primary,
                     MonoTime now);
  // PUBLISH of each event on `<prefix>:events` (on a cluster, from any master: the cluster
  // delivers it to the subscribers of every node).
  void AppendEvents(std::vector<RedisUnit>& units, const std::deque<std::string>& events);
  // Writes `units` and checks the replies, counting the refused commands; Unavailable when a
  // connection failed or Redis lost a script (NOSCRIPT), ServerError when Redis refused a write
  // as READONLY (it is a replica now). Either way the client is of no further use.
  Status Write(const std::vector<RedisUnit>& units);
  // Puts back what a failed Flush may not have written, unless newer data arrived meanwhile.
  void Requeue(std::map<std::string, ReplicaSnapshot> records,
               std::optional<PrimarySnapshot> primary, bool with_members,
               const std::set<std::string>& removing, bool retired_all);

  const RedisConfig config_;
  const int64_t agent_id_;
  Metrics* const metrics_;
  const Clock& clock_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, ReplicaSnapshot> pending_;  // GUARDED_BY(mu_)
  std::optional<PrimarySnapshot> primary_;          // GUARDED_BY(mu_)
  std::deque<std::string> events_;                  // GUARDED_BY(mu_)
  std::set<std::string> members_;                   // GUARDED_BY(mu_)
  std::set<std::string> removed_;                   // GUARDED_BY(mu_): to SREM and DEL
  bool members_dirty_ = true;                       // GUARDED_BY(mu_)
  bool retire_all_ = false;                         // GUARDED_BY(mu_)
  bool connected_ = false;                          // GUARDED_BY(mu_)

  // Used only by the publisher thread.
  std::unique_ptr<RedisClient> client_;
  const std::string merge_sha_ = ScriptSha(kMergeRecordScript);
  const std::string hash_sha_ = ScriptSha(kHashWithExpiryScript);
  Worker worker_;
};

}  // namespace lagwatch
