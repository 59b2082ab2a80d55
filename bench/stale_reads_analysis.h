// bench/stale_reads' judgement of each read, apart from the I/O: how stale a replica's answer
// was (from the oracle's sequence), which phase a read belongs to, and the per-router, per-phase
// summary the report prints. Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lagwatch::bench {

// The oracle: an UPDATE of one row's seq on the primary every few ms; sent_us[s] is when the
// write of seq s was sent (before its commit, so staleness judged from it errs on the high side
// by at most the commit's latency).
class SeqOracleLog {
 public:
  // Records that seq `seq` (one more than the last) was sent at `sent_us`.
  void Sent(int64_t seq, int64_t sent_us);
  // How stale an answer was that saw seq `seen` at `answer_us`: from the send of the first seq it
  // lacks, if that was sent before the answer; 0 when it lacked nothing sent before it. nullopt
  // when `seen` is not a seq the oracle sent (the answer cannot be judged).
  std::optional<int64_t> StalenessUs(int64_t seen, int64_t answer_us) const;
  int64_t last_seq() const { return first_seq_ + static_cast<int64_t>(sent_us_.size()) - 1; }

 private:
  int64_t first_seq_ = 0;
  std::vector<int64_t> sent_us_;  // [seq - first_seq_]
};

// One read as the application saw it.
struct ReadRecord {
  int router = 0;
  bool own_write = false;  // a session reading back its own write (read-your-writes)
  int think_ms = 0;        // own_write: the think time between the write and the read
  int served_by = 0;       // 0 the primary, 1 or 2 a replica; -1 failed (no answer)
  int64_t answer_us = 0;
  int64_t latency_us = 0;
  bool stale = false;        // own_write: an older version than written; else: over the limit
  int64_t staleness_us = 0;  // replica reads: the oracle's judgement (0 on the primary)
};

// A phase of the run: steady, or a fault on a replica from begin_us to end_us, followed by its
// recovery up to the next phase's begin.
struct Phase {
  std::string name;
  int64_t begin_us = 0;
  int64_t end_us = 0;  // the fault's end (the phase runs on until the next begins)
  int faulted = 0;     // the replica faulted (1 or 2), 0 for none or both
  int group = -1;      // phases of one group (a fault's cycles) are summarised together
};

// The phase a moment belongs to: the last that began at or before it; -1 before the first.
int PhaseOf(const std::vector<Phase>& phases, int64_t at_us);

struct Summary {
  int64_t reads = 0, replica_reads = 0, primary_reads = 0, failed = 0;
  // The same for other sessions' reads only (not a session reading back its own write): the
  // reads read-your-writes never sends to the primary, so what of them goes there is what
  // bounded staleness costs.
  int64_t others_replica_reads = 0, others_primary_reads = 0;
  int64_t stale = 0;          // either kind
  int64_t stale_own = 0;      // own writes read back older
  int64_t stale_others = 0;   // others' rows read from a replica over the limit
  int64_t over_limit_25 = 0;  // replica reads more than limit + 25 ms stale
  std::map<int, std::pair<int64_t, int64_t>> own_by_think;  // think ms -> (reads, stale)
  std::vector<int64_t> latencies_us;
  // The last read the faulted replica served while over the limit, in ms after the fault began;
  // nullopt when it served none.
  std::optional<double> last_bad_use_ms;
};

// Summaries per (router, group) of `reads`, judged against `limit_us`; a phase without a group is
// its own, under its index.
std::map<std::pair<int, int>, Summary> Summarise(const std::vector<ReadRecord>& reads,
                                                 const std::vector<Phase>& phases,
                                                 int64_t limit_us);

// The q-quantile (0..1) of `v` in ms (nearest rank), 0 for none.
double QuantileMs(std::vector<int64_t> v, double q);

}  // namespace lagwatch::bench
