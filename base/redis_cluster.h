// Redis Cluster (docs/redis.md, "Redis Cluster"): the contract's keys spread over the cluster's
// masters by hash slot, reached through the same connect path as one server
// (base/redis_conn.h: TLS, AUTH with an ACL user, deadlines). Hiredis 0.14 has no cluster support,
// so the slot map, the routing and the redirections are here.
//
// RedisCluster keeps the slot map (CLUSTER SLOTS, asked of any node that answers: the seeds
// first) and one connection per master. Run sends each unit of work to the master that serves
// its key's slot, every master's units pipelined, and follows the cluster's redirections:
//   - MOVED <slot> <host:port>: the slot lives elsewhere now (a resharding finished, a failover
//     promoted a replica): the slot map is read again and the unit sent where it says;
//   - ASK <slot> <host:port>: the slot is being migrated and this key is already on the target:
//     the unit goes there once, preceded by ASKING, and the map stays as it is;
//   - a master that cannot be reached (killed, partitioned) makes the map be read again from
//     another node, and its units are sent again where the new map says (after a failover, the
//     promoted replica).
// A unit is redirected at most kMaxRedirects times.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/endpoint.h"
#include "base/redis_conn.h"
#include "base/redis_pipeline.h"
#include "base/status.h"

struct redisReply;

namespace lagwatch {

inline constexpr int kRedisClusterSlots = 16384;

// The hash slot of `key`: CRC16 (XMODEM) of the key, or of its hash tag (the part between the
// first '{' and the next '}' when that part is not empty), modulo 16384, as Redis computes it.
uint16_t RedisKeySlot(std::string_view key);

// One range of slots and the master that serves it.
struct RedisSlotRange {
  uint16_t first = 0;
  uint16_t last = 0;
  Endpoint master;
  bool operator==(const RedisSlotRange&) const = default;
};

// CLUSTER SLOTS's reply as ranges (replicas are ignored). A master whose address is empty or
// "?" (the node does not know how it is reached) is `reached_as`, the node that answered.
// DataError on any reply of another shape (a range out of 0..16383, a port out of range, ...).
Result<std::vector<RedisSlotRange>> ParseClusterSlots(const redisReply& r,
                                                      const Endpoint& reached_as);

// A redirection in an error reply's text: "MOVED 3999 127.0.0.1:6381", "ASK 3999 [::1]:6381".
struct RedisRedirect {
  bool ask = false;  // ASK (one time, after ASKING); else MOVED
  uint16_t slot = 0;
  Endpoint to;
};
std::optional<RedisRedirect> ParseRedisRedirect(std::string_view error);

// Commands sent back to back to the master that serves `key` (a unit's commands must all be for
// that key's slot); `key` empty: any master.
struct RedisUnit {
  std::string key;
  std::vector<std::vector<std::string>> commands;
};

class RedisCluster {
 public:
  static constexpr int kMaxRedirects = 5;

  // Asks `config.cluster` (the seeds) in turn for CLUSTER SLOTS, with `timeout` as the deadline
  // of every connect and command from now on. Unavailable or Tls (as RedisConnect) when no seed
  // answered; DataError when one answered with a map that does not cover every slot.
  static Result<std::unique_ptr<RedisCluster>> Open(const RedisConfig& config, Millis timeout);

  // The replies of each unit, in order (one per command), after redirections: a reply may still
  // be an error (the command's own, or a redirection given up on). Unavailable (or Tls) when a
  // master could not be reached even after the map was read again; then nothing can be said of
  // which units ran.
  Result<std::vector<std::vector<RedisReply>>> Run(const std::vector<RedisUnit>& units);

  // Every master of the current map (for what must visit all of them: SCAN).
  std::vector<Endpoint> masters() const;
  // A connection to `master`, opened if needed (owned by the cluster, valid until the next Run,
  // Refresh or Connection call). Unavailable or Tls when it cannot be opened.
  Result<RedisConnection*> Connection(const Endpoint& master);
  // Reads the slot map again from any node that answers (the current masters, then the seeds).
  Status Refresh();
  // "host:port" of every master, comma-separated, for messages.
  std::string Describe() const;

 private:
  RedisCluster(RedisConfig config, Millis timeout)
      : config_(std::move(config)), timeout_(timeout) {}
  // The map from one node's CLUSTER SLOTS; DataError unless every slot is served.
  Status LoadMapFrom(RedisConnection& conn, const Endpoint& node);
  const Endpoint* MasterOf(const std::string& key) const;
  void Drop(const Endpoint& master);
  // Drops every connection (a Run stopped with replies unread on some) and returns `why`.
  Status Abandon(Status why);

  const RedisConfig config_;
  const Millis timeout_;
  std::vector<int16_t> slot_master_;  // by slot: an index into masters_, -1 for none
  std::vector<Endpoint> masters_;
  std::map<std::string, std::unique_ptr<RedisConnection>> conns_;  // by "host:port"
};

}  // namespace lagwatch
