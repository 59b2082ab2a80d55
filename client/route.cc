#include "client/route.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <random>
#include <vector>

namespace lagwatch::client {
namespace {

// Whether the session may read from `r`: it has the session's last write.
bool HasSessionWrites(const Session& s, const ReplicaRecord& r) {
  if (s.token) return r.position && r.position->Includes(*s.token);
  if (s.untokened_write_at) {
    // The record proves the replica had everything committed before its measurement minus its
    // upper bound; the measurement came after measured_after. (A bound of days proves nothing
    // useful, and would overflow the clock's nanoseconds.)
    constexpr int64_t kMaxUsefulDelayMs = int64_t{1} << 30;
    if (r.delay_ms > kMaxUsefulDelayMs) return false;
    return r.measured_after - Millis(r.delay_ms) >= *s.untokened_write_at;
  }
  return true;
}

// The tier order: by limit, no limit last; ties by name.
bool TierBefore(const ReplicaRecord* a, const ReplicaRecord* b) {
  const int64_t la = a->max_delay_ms.value_or(std::numeric_limits<int64_t>::max());
  const int64_t lb = b->max_delay_ms.value_or(std::numeric_limits<int64_t>::max());
  return la != lb ? la < lb : a->tier < b->tier;
}

bool SameTier(const ReplicaRecord* a, const ReplicaRecord* b) {
  return a->tier == b->tier && a->max_delay_ms == b->max_delay_ms;
}

// The first tier (in TierBefore order) with a candidate of weight > 0: one of them, chosen at
// random in proportion to weight. With `drained`, weights are ignored (each counts 1), for the
// last resort. nullptr when there is none.
const ReplicaRecord* Pick(std::vector<const ReplicaRecord*> candidates, const RandomBelow& random,
                          bool drained = false) {
  std::stable_sort(candidates.begin(), candidates.end(), TierBefore);
  for (size_t begin = 0; begin < candidates.size();) {
    size_t end = begin;
    uint64_t total = 0;
    while (end < candidates.size() && SameTier(candidates[begin], candidates[end])) {
      total += drained ? 1 : static_cast<uint64_t>(candidates[end]->weight);
      ++end;
    }
    if (total > 0) {
      uint64_t r = random(total);
      for (size_t i = begin; i < end; ++i) {
        const uint64_t w = drained ? 1 : static_cast<uint64_t>(candidates[i]->weight);
        if (r < w) return candidates[i];
        r -= w;
      }
    }
    begin = end;
  }
  return nullptr;
}

Decision Primary(const Contract& c, Reason reason) {
  Decision d;
  d.target = Target::kPrimary;
  d.reason = reason;
  d.primary = c.primary.id;
  return d;
}

// FreshUntilMs of `r` as if measured at `measured_at_ms`.
std::optional<int64_t> FreshUntilAt(const ReplicaRecord& r, int64_t measured_at_ms,
                                    int64_t clock_skew_ms) {
  if (!r.max_delay_ms) return std::nullopt;
  // Every term is a published non-negative integer; clamp so that no record can overflow.
  auto clamp = [](int64_t v) {
    return std::clamp<int64_t>(v, -(int64_t{1} << 52), int64_t{1} << 52);
  };
  return clamp(measured_at_ms) + clamp(*r.max_delay_ms) - clamp(r.delay_ms) - clamp(clock_skew_ms);
}

// The deadline of a read on `r` decided at freshness.now_unix_ms. A record measured after that
// (this clock behind the agent's by more than clock_skew_ms) counts as measured then.
std::optional<int64_t> Deadline(const ReplicaRecord& r, const Freshness& freshness) {
  return FreshUntilAt(r, std::min(r.measured_at_ms, freshness.now_unix_ms),
                      freshness.clock_skew_ms);
}

Decision OnReplica(const Contract& c, const ReplicaRecord& r, Target target, Reason reason,
                   const std::optional<Freshness>& freshness, bool primary_takes_reads) {
  Decision d = Primary(c, reason);
  d.target = target;
  d.replica = r.id;
  d.tier = r.tier;
  if (!primary_takes_reads) d.fallback = Target::kFailFast;
  if (freshness) d.fresh_until_ms = Deadline(r, *freshness);
  return d;
}

// Usable, and under `freshness` with time enough left before the deadline.
bool Fresh(const ReplicaRecord& r, const std::optional<Freshness>& freshness) {
  if (!r.usable()) return false;
  if (!freshness) return true;
  const std::optional<int64_t> until = Deadline(r, *freshness);
  return !until || *until - freshness->now_unix_ms >= freshness->min_left_ms;
}

Reason Unavailable(PrimaryCircuit circuit) {
  return circuit == PrimaryCircuit::kAmbiguous ? Reason::kPrimaryAmbiguous : Reason::kPrimaryDown;
}

}  // namespace

void Session::Wrote(std::optional<Position> write_token, MonoTime now) {
  token = std::move(write_token);
  untokened_write_at = token ? std::nullopt : std::optional<MonoTime>(now);
}

bool TokenSettled(const Contract& contract, const Position& token) {
  if (contract.members.empty()) return false;
  for (const std::string& m : contract.members) {
    auto r = std::find_if(contract.replicas.begin(), contract.replicas.end(),
                          [&](const ReplicaRecord& x) { return x.id == m; });
    if (r == contract.replicas.end() || !r->position || !r->position->Includes(token)) {
      return false;
    }
  }
  return true;
}

void Session::Settle(const Contract& contract) {
  if (token && TokenSettled(contract, *token)) token.reset();
  if (untokened_write_at && !contract.members.empty()) {
    for (const std::string& m : contract.members) {
      auto r = std::find_if(contract.replicas.begin(), contract.replicas.end(),
                            [&](const ReplicaRecord& x) { return x.id == m; });
      if (r == contract.replicas.end() || !HasSessionWrites(*this, *r)) return;
    }
    untokened_write_at.reset();
  }
}

std::optional<int64_t> FreshUntilMs(const ReplicaRecord& r, int64_t clock_skew_ms) {
  return FreshUntilAt(r, r.measured_at_ms, clock_skew_ms);
}

RandomBelow SeededRandom(uint64_t seed) {
  auto engine = std::make_shared<std::mt19937_64>(seed);
  return
      [engine](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(*engine); };
}

const char* TargetName(Target target) {
  switch (target) {
    case Target::kReplica:
      return "replica";
    case Target::kAskReplica:
      return "ask_replica";
    case Target::kPrimary:
      return "primary";
    case Target::kFailFast:
      break;
  }
  return "fail_fast";
}

const char* ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kWrite:
      return "write";
    case Reason::kLockingRead:
      return "locking_read";
    case Reason::kInTransaction:
      return "in_transaction";
    case Reason::kForced:
      return "forced";
    case Reason::kReplica:
      return "replica";
    case Reason::kDrainedReplica:
      return "drained_replica";
    case Reason::kNoUsableReplica:
      return "no_usable_replica";
    case Reason::kNotCaughtUp:
      return "not_caught_up";
    case Reason::kPrimaryDown:
      return "primary_down";
    case Reason::kPrimaryAmbiguous:
      break;
  }
  return "primary_ambiguous";
}

Decision Route(const Statement& statement, const Session& session, const Contract& contract,
               const RandomBelow& random, const std::optional<Freshness>& freshness) {
  const PrimaryCircuit circuit = contract.primary.circuit;
  const bool primary_takes_writes =
      circuit != PrimaryCircuit::kDown && circuit != PrimaryCircuit::kAmbiguous;
  // Reads may go to the primary unless its circuit is open; in a split brain the pointer's
  // primary is the last one known, and reading from it is as good as it gets.
  const bool primary_takes_reads = circuit != PrimaryCircuit::kDown;

  std::optional<Reason> force;
  if (statement.force_primary) {
    force = Reason::kForced;
  } else if (statement.in_transaction) {
    force = Reason::kInTransaction;
  } else if (statement.locking) {
    force = Reason::kLockingRead;
  } else if (!statement.read) {
    force = Reason::kWrite;
  }
  if (force) {
    Decision d = Primary(contract, *force);
    if (!primary_takes_writes) {
      d.target = Target::kFailFast;
      d.reason = Unavailable(circuit);
    }
    return d;
  }

  std::vector<const ReplicaRecord*> proven, weighted_unproven;
  bool any_usable = false;
  for (const ReplicaRecord& r : contract.replicas) {
    if (!Fresh(r, freshness)) continue;
    any_usable = true;
    if (HasSessionWrites(session, r)) {
      proven.push_back(&r);
    } else if (session.token && r.position && r.position->kind() == session.token->kind()) {
      weighted_unproven.push_back(&r);
    }
  }
  if (const ReplicaRecord* r = Pick(proven, random)) {
    return OnReplica(contract, *r, Target::kReplica, Reason::kReplica, freshness,
                     primary_takes_reads);
  }
  const Reason fallback_reason = any_usable && (session.token || session.untokened_write_at)
                                     ? Reason::kNotCaughtUp
                                     : Reason::kNoUsableReplica;
  if (session.token && session.token->kind() != PositionsKind::kBinlog) {
    if (const ReplicaRecord* r = Pick(weighted_unproven, random)) {
      return OnReplica(contract, *r, Target::kAskReplica, Reason::kNotCaughtUp, freshness,
                       primary_takes_reads);
    }
  }
  if (primary_takes_reads) {
    Decision d = Primary(contract, fallback_reason);
    d.degraded = fallback_reason == Reason::kNoUsableReplica;
    return d;
  }
  if (const ReplicaRecord* r = Pick(proven, random, /*drained=*/true)) {
    Decision d = OnReplica(contract, *r, Target::kReplica, Reason::kDrainedReplica, freshness,
                           primary_takes_reads);
    d.degraded = true;
    return d;
  }
  Decision d = Primary(contract, Unavailable(circuit));
  d.target = Target::kFailFast;
  d.degraded = true;
  return d;
}

}  // namespace lagwatch::client
