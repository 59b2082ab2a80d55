#include "exporters/record_merge.h"

#include <openssl/sha.h>

#include <cstring>

#include "base/contract.h"

namespace lagwatch {

// ARGV: agent id, remaining ms ("" retires the agent's record), measured_at_ms, healthy, then
// the contract's field/value pairs. A record is stored as JSON with every number a string
// (cjson would round 13-digit integers): e = expiry on Redis's clock, m = measured_at_ms,
// h = healthy, f = the field/value list. A stored record that does not decode (written by
// something else) is dropped, never trusted.
const char* const kMergeRecordScript = R"lua(
local key, mine = KEYS[1], 'agent:' .. ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function decode(text)
  local ok, r = pcall(cjson.decode, text)
  if ok and type(r) == 'table' and tonumber(r.e) and tonumber(r.m) and
     (r.h == '0' or r.h == '1') and type(r.f) == 'table' and #r.f > 0 and #r.f % 2 == 0 then
    return r
  end
  return nil
end
if ARGV[2] == '' then
  redis.call('HDEL', key, mine)
else
  local old = redis.call('HGET', key, mine)
  old = old and decode(old)
  if old and tonumber(old.m) > tonumber(ARGV[3]) then return 0 end
  local f = {}
  for i = 5, #ARGV do f[#f + 1] = ARGV[i] end
  redis.call('HSET', key, mine, cjson.encode({
    e = tostring(now + tonumber(ARGV[2])), m = ARGV[3], h = ARGV[4], f = f}))
end
local best, last = nil, 0
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 6) == 'agent:' then
    local r = decode(all[i + 1])
    if not r or tonumber(r.e) <= now then
      redis.call('HDEL', key, all[i])
    else
      last = math.max(last, tonumber(r.e))
      if not best or r.h < best.h or
         (r.h == best.h and tonumber(r.m) > tonumber(best.m)) then
        best = r
      end
    end
  end
end
if not best then
  redis.call('DEL', key)
  return 1
end
redis.call('HSET', key, unpack(best.f))
redis.call('PEXPIREAT', key, last)
return 1
)lua";

const char* const kHashWithExpiryScript = R"lua(
local f = {}
for i = 2, #ARGV do f[#f + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(f))
return redis.call('PEXPIRE', KEYS[1], ARGV[1])
)lua";

std::vector<std::string> HashWithExpiryArgs(const std::string& sha, const std::string& key,
                                            int64_t ttl_ms,
                                            const std::vector<std::string>& fields) {
  std::vector<std::string> args = {"EVALSHA", sha, "1", key, std::to_string(ttl_ms)};
  args.insert(args.end(), fields.begin(), fields.end());
  return args;
}

std::string ScriptSha(const char* script) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(script), std::strlen(script), digest);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::vector<std::string> ReplicaFields(const ReplicaSnapshot& s) {
  namespace f = contract::field;
  return {f::kDelayMs, std::to_string(s.delay_ms), f::kDelayLowerMs,
          std::to_string(s.delay_lower_ms), f::kState, s.state, f::kHealthy, s.healthy ? "1" : "0",
          f::kTier, s.tier, f::kWeight, std::to_string(s.weight), f::kMaxDelayMs,
          s.max_delay_ms ? std::to_string(*s.max_delay_ms) : "-1", f::kSeq, std::to_string(s.seq),
          f::kMeasuredAtMs, std::to_string(s.measured_at_ms), f::kDelayUs,
          std::to_string(s.delay_us), f::kMeasuredAtUs, std::to_string(s.measured_at_us), f::kAgent,
          std::to_string(s.agent_id),
          // Always written, "" when unknown: a record without them must not leave another
          // record's position in the key.
          f::kPosition, s.position, f::kPositionKind, s.position_kind, f::kCluster, s.cluster};
}

std::vector<std::string> MergeRecordArgs(const std::string& sha, const std::string& key,
                                         const ReplicaSnapshot& s, int64_t remaining_ms) {
  std::vector<std::string> args = {"EVALSHA",
                                   sha,
                                   "1",
                                   key,
                                   std::to_string(s.agent_id),
                                   std::to_string(remaining_ms),
                                   std::to_string(s.measured_at_ms),
                                   s.healthy ? "1" : "0"};
  std::vector<std::string> fields = ReplicaFields(s);
  args.insert(args.end(), std::make_move_iterator(fields.begin()),
              std::make_move_iterator(fields.end()));
  return args;
}

std::vector<std::string> RetireRecordArgs(const std::string& sha, const std::string& key,
                                          int64_t agent_id) {
  return {"EVALSHA", sha, "1", key, std::to_string(agent_id), "", "", ""};
}

}  // namespace lagwatch
