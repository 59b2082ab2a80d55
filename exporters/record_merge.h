// How several agents share one replica's key (docs/redis.md, "Several agents"): each agent's
// latest record is kept inside the hash under `agent:<id>`, and the contract's fields are those
// of the most cautious live record. A Lua script does it atomically in Redis, so two agents'
// schedules and clocks can neither make a key go backwards nor make it flap between their
// verdicts:
//   - a record older (measured_at_ms) than the same agent's stored one is refused;
//   - a record lives until its measurement is `ttl_ms` old (the agent tells how long that is
//     from now; Redis's clock keeps it), and the key expires with its longest-lived record;
//   - of the live records, an unhealthy one wins over a healthy one, and among those that agree,
//     the newest measurement: one agent that cannot prove a replica fresh keeps it out of the
//     routers' choice, and a key never shows an older verdict than one it showed.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/snapshot.h"

namespace lagwatch {

// The script (for SCRIPT LOAD / EVALSHA). KEYS[1] is the replica's key; ARGV is what
// MergeRecordArgs and RetireRecordArgs build. Returns 1 when the record was stored (or
// retired), 0 when a newer one of the same agent was already there.
extern const char* const kMergeRecordScript;

// A hash written with its expiry in one step (the primary's key and its pointer, docs/redis.md):
// KEYS[1] the key; ARGV the expiry in ms, then field/value pairs (HSET, then PEXPIRE). One key
// per call, so that it runs on a Redis Cluster's node of that key's slot.
extern const char* const kHashWithExpiryScript;
std::vector<std::string> HashWithExpiryArgs(const std::string& sha, const std::string& key,
                                            int64_t ttl_ms, const std::vector<std::string>& fields);

// The SHA1 of a script as Redis names it (SCRIPT LOAD's answer, EVALSHA's argument): lowercase
// hex.
std::string ScriptSha(const char* script);

// The field/value list of the Redis contract for one record, in the contract's order.
std::vector<std::string> ReplicaFields(const ReplicaSnapshot& s);

// EVALSHA `sha` storing `s` under `key` for `remaining_ms` more (REQUIRES: remaining_ms > 0).
std::vector<std::string> MergeRecordArgs(const std::string& sha, const std::string& key,
                                         const ReplicaSnapshot& s, int64_t remaining_ms);

// EVALSHA `sha` removing agent `agent_id`'s record from `key`: the other agents' records stay
// (and decide the fields); with none left the key is deleted.
std::vector<std::string> RetireRecordArgs(const std::string& sha, const std::string& key,
                                          int64_t agent_id);

}  // namespace lagwatch
