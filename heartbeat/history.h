// What the agent remembers about the primary, on its own monotonic clock: when each heartbeat was
// sent and acknowledged (HeartbeatLog) and the primary's GTID position over time
// (PositionHistory). Both are bounded rings, written by one thread and read by every prober.
// Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "base/clock.h"
#include "heartbeat/gtid.h"

namespace lagwatch {

struct HeartbeatRecord {
  uint64_t seq = 0;
  MonoTime sent;                  // just before the UPDATE left the agent
  std::optional<MonoTime> acked;  // when the primary's OK arrived; nullopt: failed or unknown
};

class HeartbeatLog {
 public:
  explicit HeartbeatLog(size_t capacity = 4096) : capacity_(capacity) {}

  // Records an attempt to write `seq`. REQUIRES: seq greater than every seq recorded before.
  void RecordSent(uint64_t seq, MonoTime sent);
  // Marks `seq` acknowledged; ignored if it has left the ring.
  void RecordAcked(uint64_t seq, MonoTime acked);

  std::optional<HeartbeatRecord> Find(uint64_t seq) const;
  // The newest record, if any.
  std::optional<HeartbeatRecord> Latest() const;
  // Time of the newest acknowledgement, if any.
  std::optional<MonoTime> LastAck() const;
  // When the newest acknowledged heartbeat was sent: a replica that shows it was complete then.
  std::optional<MonoTime> LastAckedSent() const;
  // A write that failed at `at` (no ack will come); cleared by the next acknowledgement.
  void RecordFailure(MonoTime at);
  std::optional<MonoTime> LastFailure() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<HeartbeatRecord> records_;      // GUARDED_BY(mu_), increasing seq
  std::optional<MonoTime> last_ack_;         // GUARDED_BY(mu_)
  std::optional<MonoTime> last_acked_sent_;  // GUARDED_BY(mu_)
  std::optional<MonoTime> last_failure_;     // GUARDED_BY(mu_)
};

// A run of consecutive samples that all read the same primary position.
struct PositionRun {
  GtidPos pos;
  MonoTime first_sent;      // request sent for the first sample of the run
  MonoTime first_received;  // its answer arrived
  MonoTime last_sent;       // request sent for the latest sample of the run
};

class PositionHistory {
 public:
  explicit PositionHistory(size_t capacity = 4096) : capacity_(capacity) {}

  // Adds a sample read between `sent` and `received`. REQUIRES: calls in time order.
  void Add(const GtidPos& pos, MonoTime sent, MonoTime received);

  struct Bounds {
    // Latest sample time at which the primary had nothing the replica lacks: the replica's
    // staleness at probe time r is at most r - fresh_at.
    std::optional<MonoTime> fresh_at;
    // Earliest moment by which the primary had something the replica still lacks: staleness at
    // the probe is at least r - missing_since.
    std::optional<MonoTime> missing_since;
  };
  // Bounds for a replica whose applied position is `replica_pos`.
  Bounds Locate(const GtidPos& replica_pos) const;

  std::optional<MonoTime> LastSample() const;
  // A sample that failed at `at`.
  void RecordFailure(MonoTime at);
  std::optional<MonoTime> LastFailure() const;
  // A sample was sent at `sent` and has not answered yet (cleared by Add or RecordFailure).
  void BeginSample(MonoTime sent);
  // When the sample in flight was sent, if one is.
  std::optional<MonoTime> OutstandingSince() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<PositionRun> runs_;               // GUARDED_BY(mu_), oldest first
  std::optional<MonoTime> last_failure_;       // GUARDED_BY(mu_)
  std::optional<MonoTime> outstanding_since_;  // GUARDED_BY(mu_)
};

}  // namespace lagwatch
