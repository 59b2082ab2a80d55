// Redis Cluster's rules, apart from any I/O (docs/redis.md, "Redis Cluster"): which hash slot a
// key lives in, the slot map as CLUSTER SLOTS gives it, and the redirections a node answers with.
// The client that follows them is base/redis_client.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/endpoint.h"
#include "base/status.h"

struct redisReply;

namespace lagwatch {

inline constexpr int kRedisClusterSlots = 16384;

// The hash slot of `key`: CRC16 (XMODEM) of the key, or of its hash tag (the part between the
// first '{' and the next '}' when that part is not empty), modulo 16384, as Redis computes it.
uint16_t RedisKeySlot(std::string_view key);

// One range of slots, the master that serves it and its replicas.
struct RedisSlotRange {
  uint16_t first = 0;
  uint16_t last = 0;
  Endpoint master;
  std::vector<Endpoint> replicas;
  bool operator==(const RedisSlotRange&) const = default;
};

// CLUSTER SLOTS's reply as ranges. A master whose address is empty or "?" (the node does not
// know how it is reached) is `reached_as`, the node that answered; a replica without one is left
// out.
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

// Commands sent back to back to the master that serves `key`'s slot (a unit's commands must all be
// for that key's slot); `key` empty: any master.
struct RedisUnit {
  std::string key;
  std::vector<std::vector<std::string>> commands;
  // Reads only: while the key's master cannot be reached, a replica of it may answer
  // (RedisClient, "a master that cannot be reached").
  bool read_only = false;
};

}  // namespace lagwatch
