// What HAProxy should do with a server, in every form lagwatch tells it (docs/operations.md,
// "HAProxy"): one pure function from what the agent knows of a server to one answer, which the
// runtime API pusher (exporters/haproxy_runtime.h), the agent-check port
// (exporters/haproxy_agent_check.h) and the HTTP check (exporters/haproxy_http_check.h) each
// write in their own words. A rule changes here or nowhere.
//
// The names: a HAProxy backend for lagwatch lists every configured server twice (the primary
// moves, and HAProxy's `backup` flag does not), once as a normal server named by its lagwatch id
// ("10.0.0.12:3306": HAProxy 2.6 accepts `.`, `:`, `-` and `_` in server names) and once as a
// backup named "<id>_primary" (`~` is refused). A normal entry is in the pool while its replica
// is usable; a backup entry only while its server is the primary, so reads fall back to the
// primary when no replica is usable, wherever the primary is.
//
// The rules: a normal entry is usable when the replica's record is present, younger than
// redis.ttl_ms (a record nobody refreshed is never trusted: a hung prober must not keep a server
// in the pool) and usable as routers read it: `healthy` and `delay_ms` within the tier's limit
// (docs/routing.md). With a pool limit (`max_delay_ms` of a pool with its own), the limit replaces
// the tier's: a replica that is ok or lagging (reachable, replicating from the primary, measured)
// is usable while `delay_ms` is within it. Usable with weight > 0 is up with that weight, usable
// with weight 0 is drain, a disabled tier is maintenance, anything else is down.
//
// Thread-safety: pure functions and values.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/snapshot.h"

namespace lagwatch {

// Which of a server's two entries in the backend.
enum class HaproxyEntry {
  kReplica,  // named by its id: in the pool while the replica is usable
  kPrimary,  // "<id>_primary", a backup: in the pool while the server is the primary
};

// The backup entry's suffix.
inline constexpr std::string_view kHaproxyPrimarySuffix = "_primary";

// A HAProxy server name of lagwatch's: a server's id and which entry.
struct HaproxyServerName {
  std::string id;
  HaproxyEntry entry = HaproxyEntry::kReplica;
  // The name HAProxy knows it by: the id, or the id and kHaproxyPrimarySuffix.
  std::string ToString() const;
};

// Whether `name` is made only of what HAProxy accepts in a proxy or server name (letters, digits,
// `.`, `:`, `-`, `_`), 1..`max` bytes. Every name that goes into a command or a configuration
// passes this first.
bool IsHaproxyName(std::string_view name, size_t max = 300);

// `name` read as one of lagwatch's entries: "<id>_primary" is the backup entry of <id>, anything
// else the normal entry of the id it spells. nullopt when it is not a valid HAProxy name. Whether
// the id is a server lagwatch knows is for the caller to say.
std::optional<HaproxyServerName> ParseHaproxyServerName(std::string_view name);

// What the agent knows of one server, from its memory (exporters/verdict_board.h).
struct HaproxyFacts {
  bool is_primary = false;  // the server lagwatch takes for the primary now
  // Its last published record as a replica; nullopt before its first measurement, and while or
  // since it was the primary (the primary has no record).
  std::optional<ReplicaSnapshot> record;
};

// The answer, in HAProxy's terms.
struct HaproxyAnswer {
  enum class Verdict {
    kUp,     // in the pool with `weight`
    kDrain,  // usable but weight 0: no new connections (an operator's drain)
    kDown,   // not usable now (lag, replication, reachability, no record, expired)
    kMaint,  // not a candidate at all: a disabled tier, the primary's normal entry, a backup
             // entry of a server that is not the primary
  };
  Verdict verdict = Verdict::kDown;
  // Why, one token: "usable", "weight_0", a replica state ("lagging": over the limit that
  // applies, the pool's or the tier's; "stopped", "unreachable", "primary_unknown",
  // "unverified", "disabled"), "no_record", "expired", "primary" (the primary's normal entry),
  // "not_primary" (a backup entry of another server).
  std::string reason;
  // The replica's lagwatch weight (0..1000) for a normal entry; 100 for the primary's backup
  // entry (its weight in HAProxy is the configuration's).
  int weight = 0;
  std::optional<int64_t> delay_ms;      // the record's upper bound, when there is a record
  std::optional<int64_t> max_delay_ms;  // the limit it was judged against (pool's, else tier's)
  std::string state;                    // the record's state; "" without a record
  // When a usable answer stops being so if no new record arrives (the record's age reaches the
  // TTL); nullopt for any other answer.
  std::optional<MonoTime> usable_until;

  bool usable() const { return verdict == Verdict::kUp || verdict == Verdict::kDrain; }

  // The agent-check protocol's reply line (with its "\n"), always naming the administrative
  // state so that one word undoes what an earlier reply set: "ready up 50%", "drain up",
  // "ready down #lagging delay_ms=1234 max_delay_ms=200", "maint #disabled". The weight is a
  // percentage of the server's configured weight: with the generated `weight 100` the effective
  // weight is the lagwatch weight, which HAProxy caps at 256.
  std::string AgentReply() const;
  // The HTTP check's status: 200 for kUp, 503 otherwise (an HTTP check cannot drain).
  int HttpStatus() const;
  // Its body, one line: "usable delay_ms=12 max_delay_ms=200 state=ok", "usable primary" or
  // "unusable lagging delay_ms=1234 max_delay_ms=200 state=lagging".
  std::string HttpBody() const;
  // The runtime API's weight for kUp: min(weight, 256) (HAProxy's maximum).
  int RuntimeWeight() const;
};

// `facts` of the server behind `entry`, at `now`, with records valid for `ttl` after their
// measurement, against `pool_max_delay_ms` when the pool has its own limit (else the tier's).
HaproxyAnswer JudgeForHaproxy(const HaproxyFacts& facts, HaproxyEntry entry, MonoTime now,
                              Millis ttl, std::optional<int64_t> pool_max_delay_ms = std::nullopt);

// What a pull check asks (exporters/haproxy_agent_check.h, exporters/haproxy_http_check.h): a
// server's entry and, for a pool with its own limit, that limit.
struct CheckTarget {
  HaproxyServerName server;
  std::optional<int64_t> max_delay_ms;
};
// The answer to a check; nullopt when lagwatch does not know the server. Thread-safe.
using HaproxyAnswerFn = std::function<std::optional<HaproxyAnswer>(const CheckTarget&)>;

// The name of a verdict for logs and metric labels: "up", "drain", "down", "maint".
const char* VerdictName(HaproxyAnswer::Verdict v);

}  // namespace lagwatch
