// The lag estimator (docs/measurement.md): turns one probe of a replica into bounds on how stale
// the replica's data is, using only times on the agent's clock.
//
// Staleness of a replica at time τ is τ minus the commit time of the oldest transaction the
// primary had committed and the replica has not applied (0 when it has applied everything).
// Pure functions of their inputs; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "base/clock.h"
#include "heartbeat/history.h"
#include "heartbeat/stream_history.h"

namespace lagwatch {

// What one probe of a replica read, and when.
struct ProbeObservation {
  MonoTime sent;                // the probe query left the agent
  MonoTime received;            // its answer arrived
  std::optional<uint64_t> seq;  // heartbeat seq in our row; nullopt: no row yet
  // What the replica had applied (@@gtid_slave_pos, @@GLOBAL.gtid_executed, or its executed source
  // coordinates); nullopt: unknown or unusable.
  std::optional<Position> applied_pos;
};

enum class BoundSource { kNone, kHeartbeat, kPosition, kStream };
// "heartbeat", "positions", "stream"; "" for kNone (the API's replicas[].bound).
const char* BoundSourceName(BoundSource source);

struct LagBounds {
  // The replica's data was complete up to this moment: staleness at time t is at most
  // t - fresh_at. nullopt: nothing is known (no heartbeat seen that the agent remembers).
  std::optional<MonoTime> fresh_at;
  // Lower bound on staleness at the probe (≥ 0).
  Micros lower{0};
  BoundSource upper_source = BoundSource::kNone;
  // Heartbeat and position bounds contradicted each other (lower > upper); the heartbeat bounds
  // were used alone. Indicates a primary change or a GTID oddity worth logging.
  bool inconsistent = false;
  // The replica's position could not be compared with the primary's samples (another kind, or
  // coordinates in another binary log): no position bounds.
  bool incomparable = false;

  // Upper bound on staleness at time `at`. REQUIRES: fresh_at.
  Micros UpperAt(MonoTime at) const {
    return std::max(Micros(0), std::chrono::duration_cast<Micros>(at - *fresh_at));
  }
};

// Heartbeat bounds alone: reading seq k means heartbeat k applied (fresh at sent(k)) and k+1 not
// applied (missing since acked(k+1), if k+1 was acknowledged before the probe was sent).
LagBounds HeartbeatBounds(const ProbeObservation& obs, const HeartbeatLog& log);

// Position bounds alone, from the primary's sampled positions.
LagBounds PositionBounds(const ProbeObservation& obs, const PositionHistory& history);

// Stream bounds alone (StreamHistory::Locate at the probe's end): none while the stream is not
// usable.
LagBounds StreamBounds(const ProbeObservation& obs, const StreamHistory& stream);

// The tightest consistent combination of all (the published estimate); `stream` may be null
// (no binary log stream).
LagBounds Estimate(const ProbeObservation& obs, const HeartbeatLog& log,
                   const PositionHistory& history, const StreamHistory* stream = nullptr);

// A replica that does not answer (hung, or slower than the probe's timeout) still has
// everything it had applied at its last answer, `applied`: a replica never un-applies. What the
// primary committed since can move `kept`'s fresh_at later, never earlier: to the positions
// sampled since that `applied` includes, and to the arrival (less the delivery bound) of the
// first transaction after `applied` that the stream delivered, or its last sign of life when
// none has (StreamHistory::Locate at `now`). The lower bound is kept (it was proven at the last
// answer; the replica may have applied more since, so nothing here proves more).
// REQUIRES: kept.fresh_at.
LagBounds Relocate(const LagBounds& kept, const Position& applied, MonoTime now,
                   const PositionHistory& history, const StreamHistory* stream = nullptr);

// Relocate from each position the replica is known to have applied, those it has: its last
// answer's (`answered`) and what its own binary log proved since (`witnessed`,
// heartbeat/applied_witness.h). Each can only move fresh_at later. REQUIRES: kept.fresh_at.
LagBounds RelocateFromKnown(const LagBounds& kept, const std::optional<Position>& answered,
                            const std::optional<Position>& witnessed, MonoTime now,
                            const PositionHistory& history, const StreamHistory* stream = nullptr);

// While the primary is read-only, writes may be going to another server lagwatch has not seen
// made writable yet: nothing proves a replica fresh past `not_after`, the earliest moment such a
// write can have been made (agent/read_only_sightings.h). Moves fresh_at back to it, never
// forward; no `not_after`: unchanged.
LagBounds FreshNotAfter(LagBounds bounds, std::optional<MonoTime> not_after);

}  // namespace lagwatch
