// What the agent remembers about the primary, on its own monotonic clock: when each heartbeat was
// sent and acknowledged (HeartbeatLog) and the primary's replication position over time
// (PositionHistory, of one positions kind: base/position.h). Both are bounded rings, written
// by one thread and read by every prober. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "base/clock.h"
#include "base/position.h"
#include "base/thread_times.h"

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
  // Forgets every record (the primary changed: what another server acknowledged proves nothing
  // about the new one). Seqs recorded afterwards must still be greater than the forgotten ones.
  void Clear();

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
  Position pos;
  MonoTime first_sent;      // request sent for the first sample of the run
  MonoTime first_received;  // its answer arrived
  MonoTime last_sent;       // request sent for the latest sample of the run
};

class PositionHistory {
 public:
  // Samples sent more than `gap_after` apart leave a gap (see LastGap).
  explicit PositionHistory(size_t capacity = 4096, Millis gap_after = Millis(100))
      : capacity_(capacity), gap_after_(gap_after) {}

  // Adds a sample read between `sent` and `received`. REQUIRES: calls in time order. Returns
  // false when the sample does not include the previous one (it went backwards: RESET MASTER, a
  // restored or replaced primary; or another kind or binary log): the older samples cannot be
  // compared with it and are dropped. A sample of an older `generation` (read before a Reset) is
  // ignored.
  bool Add(const Position& pos, MonoTime sent, MonoTime received,
           std::optional<uint64_t> generation = std::nullopt);

  // Forgets everything (the primary changed): samples, gap, kind, server id, failures. Starts a
  // new generation: what a sampler still adds for an older one is ignored.
  void Reset();
  uint64_t generation() const;

  // What is sampled: the positions kind (kNone until the sampler has decided, and when it samples
  // none) and the primary's @@server_id (binary log coordinates only mean something for replicas
  // of that server). A new kind drops the samples of the old one.
  void SetSource(PositionsKind kind, std::optional<uint32_t> server_id,
                 std::optional<uint64_t> generation = std::nullopt);
  // nullopt until the first SetSource.
  std::optional<PositionsKind> kind() const;
  std::optional<uint32_t> primary_server_id() const;

  struct Bounds {
    // Latest sample time at which the primary had nothing the replica lacks: the replica's
    // staleness at probe time r is at most r - fresh_at.
    std::optional<MonoTime> fresh_at;
    // Earliest moment by which the primary had something the replica still lacks: staleness at
    // the probe is at least r - missing_since.
    std::optional<MonoTime> missing_since;
    // The replica's position cannot be compared with the samples (another kind, or coordinates
    // in another binary log): no bounds.
    bool incomparable = false;
  };
  // Bounds for a replica whose applied position is `replica_pos`.
  Bounds Locate(const Position& replica_pos) const;

  std::optional<MonoTime> LastSample() const;

  // Whether the primary was writable (@@read_only = 0) as the sample sent at `sent` found it (the
  // sampler asks after each position). Ignored for an older `generation`, as Add.
  void NoteWritable(MonoTime sent, bool writable,
                    std::optional<uint64_t> generation = std::nullopt);
  // While the latest sample that asked found the primary read-only: when the last one that found
  // it writable was sent (nullopt: none since the history began). A read-only primary takes no
  // writes, but another server may; what proves a replica fresh is then bounded by where else
  // writes can have gone (docs/measurement.md, "A read-only primary").
  struct ReadOnly {
    std::optional<MonoTime> last_writable;
  };
  std::optional<ReadOnly> ReadOnlyNow() const;

  // The latest stretch without samples (a primary that hung, stalled or could not be reached):
  // from the send time of the newest sample before it to that of the first one after it. What
  // the primary committed in between, if anything, was committed at a time nobody knows, so a
  // replica fresh as of `before` but not `after` is not proven stale by its upper bound alone.
  struct Gap {
    MonoTime before;
    MonoTime after;
  };
  std::optional<Gap> LastGap() const;
  // A sample that failed at `at` (ignored for an older `generation`, as Add).
  void RecordFailure(MonoTime at, std::optional<uint64_t> generation = std::nullopt);
  std::optional<MonoTime> LastFailure() const;
  // A sample was sent at `sent` and has not answered yet (cleared by Add or RecordFailure).
  // `sender`: the counters of the thread that waits for its answer, readable from any thread
  // (ThreadTimes), or null.
  void BeginSample(MonoTime sent, std::shared_ptr<const ThreadCounters> sender = nullptr);
  // What was begun was answered, but is no sample (the sampler's question after the position:
  // @@read_only). Ignored for an older `generation`, as Add.
  void EndSample(std::optional<uint64_t> generation = std::nullopt);
  // How long the sample in flight has waited for the primary's answer by `now`; nullopt when none
  // is in flight. That is the time since it was sent, less what its sender spent since running or
  // waiting for a CPU; and none while the sender is runnable, or after a resume of this process
  // from a stop since it was sent. An agent kept from running (a CPU quota, a stalled host,
  // SIGSTOP) has the answer waiting when it runs again: the primary is not late for that
  // (PrimaryKnown). A sender asleep on something other than the answer (a lock) counts as
  // waiting for it. Reads the sender's counters (/proc) outside the lock.
  // A wait once found stays found until the sample ends: a sender asleep had no answer then,
  // and its being runnable later (its poll waking every 50 ms to look for a stop, or the answer
  // come and not read yet) does not make the primary less late than it was.
  std::optional<Micros> AnswerAwaited(MonoTime now) const;

 private:
  uint64_t generation_ = 0;  // GUARDED_BY(mu_)
  const size_t capacity_;
  const Millis gap_after_;
  mutable std::mutex mu_;
  std::optional<Gap> last_gap_;           // GUARDED_BY(mu_)
  std::deque<PositionRun> runs_;          // GUARDED_BY(mu_), oldest first
  std::optional<PositionsKind> kind_;     // GUARDED_BY(mu_)
  std::optional<uint32_t> server_id_;     // GUARDED_BY(mu_)
  std::optional<MonoTime> last_failure_;  // GUARDED_BY(mu_)
  struct InFlight {
    MonoTime sent;
    std::shared_ptr<const ThreadCounters> sender;  // may be null
    // The sender's counters as it sent.
    std::optional<std::chrono::nanoseconds> busy;
    int64_t resumes = 0;
    Micros longest{0};  // the longest wait AnswerAwaited has found for it
  };
  mutable std::optional<InFlight> in_flight_;  // GUARDED_BY(mu_); AnswerAwaited keeps `longest`
  // AnswerAwaited's wait as `f`'s sender's counters say now (may be negative before it was sent).
  static Micros AwaitedNow(const InFlight& f, MonoTime now);
  std::optional<MonoTime> last_writable_;  // GUARDED_BY(mu_): NoteWritable's last writable sample
  bool read_only_ = false;                 // GUARDED_BY(mu_): its latest found it read-only
};

}  // namespace lagwatch
