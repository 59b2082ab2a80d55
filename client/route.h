// The reference routing algorithm of docs/routing.md as one pure function: given a statement, the
// session's read-your-writes state, a snapshot of the contract and a random source, where does
// the statement go, and why.
//
// Pure functions and values; thread-compatible (a Session belongs to one application session).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/position.h"
#include "client/record.h"

namespace lagwatch::client {

// What the router knows of the statement. ClassifySql (client/sql_classify.h) fills the first
// two from the text; the others come from the caller.
struct Statement {
  bool read = false;            // a plain read (SqlClass::read)
  bool locking = false;         // FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE
  bool in_transaction = false;  // inside BEGIN ... COMMIT, or autocommit off
  bool force_primary = false;   // the caller's explicit flag
};

// A session's read-your-writes state (docs/routing.md, "Read-your-writes"): after a write, either
// a token (the primary's position taken after it) or, when none could be taken, the time of the
// write. A new write replaces both: its token includes everything the session wrote before.
struct Session {
  std::optional<Position> token;
  std::optional<MonoTime> untokened_write_at;  // on the router's monotonic clock

  // Records a committed write: `token` the position taken on its connection, or nullopt when
  // none could be taken (then `now` is kept).
  void Wrote(std::optional<Position> write_token, MonoTime now);
  // Drops the token once every replica in the contract's set publishes a position that includes
  // it (see TokenSettled), and the untokened time once every member's record proves its
  // measurement came after the write. Optional: keeping them is always correct.
  void Settle(const Contract& contract);
};

// True when `contract` has at least one member and every member's record has a position that
// includes `token`. A replica that is unusable now counts too: it may become usable within its
// limit of the write while lacking it.
bool TokenSettled(const Contract& contract, const Position& token);

// Bounded staleness (docs/routing.md, "Bounded staleness"), on top of `healthy`: a record's upper
// bound `delay_ms` held at its measurement, and a replica falls behind by at most a millisecond per
// millisecond since, so its answer is within the tier's limit if it comes back before
//   measured_at_ms + max_delay_ms - delay_ms - clock_skew_ms   (unix ms, the router's clock).
struct Freshness {
  int64_t now_unix_ms = 0;    // the router's wall clock at the decision
  int64_t clock_skew_ms = 0;  // how far the router's clock may run behind the agent's
  // A replica is chosen only with at least this long left before its deadline: a read that cannot
  // be answered in time is not worth sending.
  int64_t min_left_ms = 5;
};

// The unix ms (router's clock) until which an answer from `r` is within its tier's limit; nullopt
// for a replica without a limit. Saturates rather than overflowing on absurd records.
std::optional<int64_t> FreshUntilMs(const ReplicaRecord& r, int64_t clock_skew_ms);

// A uniformly distributed integer in [0, n), n >= 1. Injected so tests are deterministic.
using RandomBelow = std::function<uint64_t(uint64_t n)>;
// A Mersenne Twister seeded with `seed`. The function it returns is not thread-safe: one per
// thread.
RandomBelow SeededRandom(uint64_t seed);

enum class Target {
  kReplica,     // read from `replica`
  kAskReplica,  // ask `replica` whether it has the session's token (CatchUpQuery); if it
                // answers "reached", read there, else go to `fallback`
  kPrimary,     // the primary (`primary`; empty: the one the application knows)
  kFailFast,    // fail the statement now: there is nowhere safe to send it
};

enum class Reason {
  kWrite,             // not a read
  kLockingRead,       // FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE
  kInTransaction,     // inside a transaction
  kForced,            // the caller's flag
  kReplica,           // a usable replica, by tier and weight
  kDrainedReplica,    // only weight-0 replicas were usable and the primary cannot take the read
  kNoUsableReplica,   // no usable replica with a weight: the primary
  kNotCaughtUp,       // usable replicas, but none proven to have the session's writes
  kPrimaryDown,       // the primary's circuit is open
  kPrimaryAmbiguous,  // two writable servers: no one primary to write to
};

const char* TargetName(Target target);
const char* ReasonName(Reason reason);

struct Decision {
  Target target = Target::kPrimary;
  Reason reason = Reason::kWrite;
  std::string replica;  // kReplica, kAskReplica: "host:port"
  std::string tier;     // kReplica, kAskReplica: its tier
  std::string primary;  // the pointer's primary, "" when unknown
  // kAskReplica: where the read goes when the replica has not reached the token; kReplica and
  // kAskReplica: where it goes when the answer misses fresh_until_ms. kPrimary, or kFailFast while
  // the primary is down.
  Target fallback = Target::kPrimary;
  // With Freshness, kReplica and kAskReplica on a replica with a limit: the answer proves the
  // limit only if it arrives by this unix ms (router's clock); a later answer is discarded and the
  // read goes to `fallback` instead.
  std::optional<int64_t> fresh_until_ms;
  // A read that wanted a replica and could not have one (kNoUsableReplica, kDrainedReplica, or
  // kFailFast for a read): counted as a degradation in rw_stats (client/feedback.h).
  bool degraded = false;
};

// Where `statement` goes (docs/routing.md, "The algorithm"):
//  1. Not a read, locking, in a transaction, or forced: the primary; kFailFast when its circuit is
//     down or ambiguous.
//  2. A read: the usable replicas the session may read from (read-your-writes), tier by tier in
//     the order of their limits (no limit last), weighted at random among those with a weight
//     above 0 in the first tier that has one.
//  3. None, and the session holds a token: kAskReplica for a usable replica of the token's kind
//     (chosen the same way), unless the kind has no cheap check (binary log coordinates).
//  4. Otherwise the primary — or, when its circuit is down, a usable weight-0 replica the session
//     may read from, else kFailFast.
// A circuit that is unknown (no pointer) does not stop anything: lagwatch has no opinion.
// With `freshness`, a replica with a limit is usable only with at least min_left_ms before its
// FreshUntilMs, and the decision carries that deadline; a record measured after now_unix_ms (the
// router's clock behind the agent's by more than clock_skew_ms) counts as measured now.
Decision Route(const Statement& statement, const Session& session, const Contract& contract,
               const RandomBelow& random, const std::optional<Freshness>& freshness = std::nullopt);

}  // namespace lagwatch::client
