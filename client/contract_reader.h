// ContractReader: a router's view of lagwatch's Redis contract (docs/redis.md), read over one
// hiredis connection and cached for at most `max_age` (docs/routing.md, "Caching"). An optional
// subscriber on `<prefix>:events` (its own connection and thread) drops the cache as soon as
// lagwatch announces a change.
//
// A refresh is one pipelined round trip: SMEMBERS `<prefix>:replicas`, HGETALL `<prefix>:primary`,
// HGETALL and PTTL of each replica's key known from the previous refresh, HGETALL of the known
// primary's `lagwatch:primary:<host>:<port>`. Only when the set or the primary changed does a
// second round trip fetch the newcomers.
//
// Thread-safe: Snapshot, Send, Invalidate and stats may be called from any thread; refreshes are
// serialised (a caller may wait for another's round trip, bounded by `timeout`).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/redis_client.h"
#include "base/redis_conn.h"
#include "base/status.h"
#include "client/feedback.h"
#include "client/record.h"

struct redisReply;

namespace lagwatch::client {

struct ReaderOptions {
  // Where Redis is (host/port or sentinels, password), the key prefix and the keys' TTL
  // (redis.key_prefix, redis.ttl_ms of the agent's configuration: they must match).
  RedisConfig redis;
  // Deadline of a connect and of each round trip.
  Millis timeout{50};
  // The longest a snapshot is served from the cache. The contract allows at most 25 ms.
  Millis max_age{25};
  // For a router that routes with bounded staleness (client/route.h, Freshness): the clock skew
  // and the time left it passes to Route. A snapshot is then also served only until the first of
  // its usable records with a limit has less than `min_left_ms` left before its deadline
  // (FreshUntilMs), so that a replica is not skipped for a deadline a newer record in Redis has
  // already moved (the agent probes again before it: agent/schedule.h).
  struct BoundedStaleness {
    int64_t clock_skew_ms = 0;
    int64_t min_left_ms = 5;
  };
  std::optional<BoundedStaleness> bounded_staleness;
  // After a failed connect or round trip, Snapshot serves the empty contract (everything
  // unusable: the primary) for this long before trying again.
  Millis retry_after{200};
  // Subscribe to `<prefix>:events` on a thread of the reader's own.
  bool subscribe = true;
  // More members than this in `<prefix>:replicas` are counted as malformed and skipped.
  size_t max_replicas = 10000;
};

// The cache rule of docs/routing.md apart from the I/O: a contract may be served until the
// earliest of its fetch plus `max_age` and each of its records' key expiry, with `bounded` also
// each usable record's bounded-staleness deadline less its time left (ReaderOptions), and only
// while no invalidation happened since it was read (`generation`, which Invalidate bumps). A
// record already past that point when fetched does not shorten it (a refresh would not bring its
// replica back before the agent's next record).
// Thread-compatible (the reader holds its lock).
class SnapshotCache {
 public:
  explicit SnapshotCache(Millis max_age,
                         std::optional<ReaderOptions::BoundedStaleness> bounded = std::nullopt)
      : max_age_(max_age), bounded_(bounded) {}
  // The cached contract if it may be served at `now` under `generation`; null otherwise.
  std::shared_ptr<const Contract> Get(MonoTime now, uint64_t generation) const;
  // Caches `contract`, read while the invalidation count was `generation`.
  void Put(std::shared_ptr<const Contract> contract, uint64_t generation);
  void Clear() { contract_.reset(); }

 private:
  Millis max_age_;
  std::optional<ReaderOptions::BoundedStaleness> bounded_;
  std::shared_ptr<const Contract> contract_;
  MonoTime until_{};
  uint64_t generation_ = 0;
};

struct ReaderStats {
  uint64_t refreshes = 0;          // round trips that produced a snapshot
  uint64_t errors = 0;             // connects and round trips that failed
  uint64_t malformed = 0;          // records, members, pointers and replies refused
  uint64_t events = 0;             // messages from `<prefix>:events`
  uint64_t served_from_cache = 0;  // Snapshot calls answered without Redis
  std::string last_error;          // the last failure or refusal, for a log line
};

class ContractReader {
 public:
  // Connects lazily: nothing happens until the first Snapshot (or, with `subscribe`, the
  // subscriber's first connect on its thread). `clock` must outlive the reader.
  explicit ContractReader(ReaderOptions options, const Clock& clock = SystemClock::Get());
  // Stops and joins the subscriber (within about 100 ms plus one connect timeout).
  ~ContractReader();
  ContractReader(const ContractReader&) = delete;
  ContractReader& operator=(const ContractReader&) = delete;

  // The contract as of at most max_age ago, and never past any included record's key expiry, nor
  // past an event received since it was read. Never null, never throws: when Redis cannot be
  // read, an empty contract (no replicas, primary unknown), which routes everything to the
  // primary; the failure is in stats().
  std::shared_ptr<const Contract> Snapshot();

  // Makes the next Snapshot read Redis again. Called by the subscriber on every event; callers
  // may call it too (e.g. after a read on a replica failed). Any event drops the whole snapshot
  // (a refresh costs one round trip whatever it holds).
  void Invalidate();

  // Runs `commands` pipelined on the reader's connection (e.g. FeedbackCommands). Unavailable
  // when Redis cannot be reached; ServerError when Redis refused one (the others still ran).
  Status Send(const std::vector<RedisCommand>& commands);

  ReaderStats stats() const;

 private:
  // Connects when needed; Unavailable (and the context dropped) on failure. REQUIRES: mu_ held.
  Status Connect();
  // One refresh. REQUIRES: mu_ held.
  Result<Contract> Refresh();
  // Each command (its key the second word) to the master of its key, pipelined; one reply each.
  // `read_only`: reads, which a replica may answer while the master cannot be reached (a Redis
  // Cluster's: base/redis_client.h). Unavailable when a connection failed. REQUIRES: mu_ held,
  // connected.
  Result<std::vector<RedisReply>> RunEach(const std::vector<std::vector<std::string>>& cmds,
                                          bool read_only);
  void Fail(const Status& s);  // REQUIRES: mu_ held
  void RunSubscriber(const std::stop_token& stop);

  // Constant after construction.
  const ReaderOptions options_;
  const Clock& clock_;

  // Guarded by mu_.
  mutable std::mutex mu_;
  std::unique_ptr<RedisClient> client_;  // one server, Sentinel's master or a Redis Cluster
  SnapshotCache cache_;
  MonoTime next_attempt_{};                 // after a failure: no Redis before this
  std::vector<std::string> known_members_;  // from the last refresh, to pipeline their keys
  std::string known_primary_;
  ReaderStats stats_;

  // Bumped by Invalidate; a snapshot read before the latest bump is stale.
  std::atomic<uint64_t> generation_{0};

  std::jthread subscriber_;  // last: stopped and joined before the members above go
};

// Pure parts of a refresh, for tests without a server.

// The field map of an HGETALL reply (an empty map for a missing key); nullopt when the reply is
// not an array of an even number of strings (an error, a key of another type).
std::optional<FieldMap> HashFromReply(const redisReply* reply);
// The members of an SMEMBERS reply; nullopt when it is not an array of strings.
std::optional<std::vector<std::string>> MembersFromReply(const redisReply* reply);

// The replica key of `id` under `prefix`: "<prefix>:<id>".
std::string ReplicaKey(std::string_view prefix, std::string_view id);
// The primary's key: "lagwatch:primary:<id>" (no prefix: docs/redis.md#the-primary).
std::string PrimaryKey(std::string_view id);

}  // namespace lagwatch::client
