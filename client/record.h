// What a router reads from lagwatch's Redis contract (docs/redis.md), as plain values: one
// replica's hash (`<prefix>:<host>:<port>`), the primary's pointer and key, and a snapshot of all
// of them; and the parsers that turn HGETALL's field maps into these values. A record the parser
// refuses is unusable, like a missing key (docs/routing.md).
//
// Pure functions and values; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/position.h"
#include "base/status.h"

namespace lagwatch::client {

// A hash's fields as HGETALL returns them.
using FieldMap = std::map<std::string, std::string>;

// The `state` field (docs/measurement.md#states).
// In the order of base/contract.h's kReplicaStates, whose names ParseReplicaState reads.
enum class ReplicaState {
  kOk,
  kLagging,
  kStopped,
  kUnreachable,
  kPrimaryUnknown,
  kDisabled,
  kUnverified
};

// "ok", "lagging", ... as published; nullopt for any other text.
std::optional<ReplicaState> ParseReplicaState(std::string_view text);

// The largest weight the contract allows.
inline constexpr int kMaxWeight = 1000;

// One replica's hash, validated.
struct ReplicaRecord {
  std::string id;              // "host:port", the member of `<prefix>:replicas`
  int64_t delay_ms = 0;        // upper bound on staleness at the measurement
  int64_t delay_lower_ms = 0;  // lower bound
  ReplicaState state = ReplicaState::kUnreachable;
  bool healthy = false;
  std::string tier;
  int weight = 0;                       // 0..kMaxWeight
  std::optional<int64_t> max_delay_ms;  // the tier's limit; nullopt: no limit (published as -1)
  int64_t seq = 0;
  int64_t measured_at_ms = 0;  // the agent's wall clock, unix ms
  std::string agent;
  // The replica's applied position at the probe, and its kind. nullopt when the record has none
  // (position_kind `none`, an empty `position`, or an agent that predates the fields).
  std::optional<Position> position;

  // Set by ContractReader (the parser leaves the defaults, which prove nothing): a time on the
  // router's monotonic clock before which the measurement was surely taken (the fetch minus the
  // key's TTL), and when the key expires at the latest (the fetch plus its PTTL).
  MonoTime measured_after{};
  MonoTime expires_at = MonoTime::max();

  // Reads may go here: healthy, and within the tier's limit (the parser refuses a record where
  // the two disagree, so this is `healthy`).
  bool usable() const { return healthy && (!max_delay_ms || delay_ms <= *max_delay_ms); }
};

// Validates one replica's hash. `id` is its member of `<prefix>:replicas`.
//
// Required: delay_ms, delay_lower_ms, max_delay_ms, seq, measured_at_ms (base-10 integers;
// delays and times not negative, max_delay_ms -1 or not negative), state (a known state),
// healthy (`1` or `0`), tier (1..64 of [A-Za-z0-9_.:-]), weight (0..1000). Optional: agent,
// position_kind (default `none`) and position (parsed by ParsePosition; empty: unknown). Other
// fields (`agent:<id>`) are ignored. Refused as well, because the contract says they cannot
// happen: healthy `1` over the tier's limit, or with a state other than `ok` or
// `primary_unknown`; a position with position_kind `none`.
//
// DataError naming the field and quoting (escaped, cut) what it held. Never throws.
Result<ReplicaRecord> ParseReplicaRecord(std::string_view id, const FieldMap& fields);

// A position of `kind` as the server prints it: a MariaDB GTID list ("0-1-120,1-2-7"), a MySQL
// GTID set, or binary log coordinates "file:offset" ("mysql-bin.000012:4567"). Used for the
// published `position` and for read-your-writes tokens. DataError for empty text, kind `none`,
// text the kind's parser refuses, or a file name with a quote, backslash or control byte.
Result<Position> ParsePosition(PositionsKind kind, std::string_view text);

// The primary's circuit as the pointer and the primary's key say (docs/redis.md#the-primary).
enum class PrimaryCircuit {
  kUp,         // closed
  kDegraded,   // recent failures or a half-open trial: still takes statements
  kDown,       // open: writes fail fast
  kAmbiguous,  // two writable servers: no one primary to write to
  kUnknown,    // no pointer (no agent, no Redis, or malformed): lagwatch has no opinion
};

const char* PrimaryCircuitName(PrimaryCircuit circuit);

struct PrimaryInfo {
  std::string id;  // "host:port" from the pointer; empty when unknown
  PrimaryCircuit circuit = PrimaryCircuit::kUnknown;
  std::string topology;  // "ok", "unknown", "ambiguous"; empty when unknown
  // From `lagwatch:primary:<host>:<port>`, when it was read and valid (key_valid).
  bool key_valid = false;
  bool read_only = false;
  int64_t last_write_ms = 0;
  int64_t consecutive_failures = 0;
};

// The pointer `<prefix>:primary` and the primary's key `lagwatch:primary:<id>` (nullptr: not
// read, or absent). The circuit is the worse of the two states (`down` over `degraded` over
// `up`; `ambiguous` over all). DataError when the pointer is malformed (no valid `primary`, an
// unknown state or topology); a malformed primary's key is ignored (key_valid stays false) and
// the pointer's state stands.
Result<PrimaryInfo> ParsePrimary(const FieldMap& pointer, const FieldMap* primary_key);

// "host:port" as lagwatch spells a replica: host 1..253 of [A-Za-z0-9._:-] (split at the last
// ':'), port 1..65535 without leading zeros.
bool IsReplicaId(std::string_view id);

// A refresh's view of the contract.
struct Contract {
  std::vector<std::string> members;     // `<prefix>:replicas`, valid ids only
  std::vector<ReplicaRecord> replicas;  // the members whose key exists and parses
  PrimaryInfo primary;
  MonoTime fetched_at{};           // when the refresh started, on the router's clock
  int64_t fetched_at_unix_ms = 0;  // the same moment on the router's wall clock
};

}  // namespace lagwatch::client
