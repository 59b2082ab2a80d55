// The accuracy benchmark's ground truth and measures, as pure functions of recorded timelines
// (no I/O, no clocks). All times are unix microseconds (system clock), all lags microseconds
// unless a name says _ms.
//
// Ground truth ("the oracle"): a writer commits row `id` into lwtest.oracle on the primary every
// few ms and records when it sent the INSERT (sent) and when the OK came back (acked). A reader per
// replica runs `SELECT MAX(id)` every few ms. Replication applies in commit order, so a reader
// sample sent at τ that sees max id m proves row m+1 was not applied at τ: staleness(τ) ≥
// τ − acked(m+1) whenever row m+1 had been acked by τ (the primary had committed it).
//
// Truth(t), for any t, is that proven lower bound using the first reader sample sent at or after t
// (it saw no more than the replica had at t): Truth(t) = max(0, t − acked(m_next + 1)). The same
// function defines every crossing and episode below. Its companion Upper(t) = t − sent(m_prev),
// from the last sample answered by t (the replica had applied m_prev, committed after
// sent(m_prev)) or the last apply time (below), brackets real staleness; Upper − Truth is the
// oracle's resolution (about one write interval plus one reader interval plus commit latency
// from the reads alone; about one write interval with the apply times).
//
// A hung replica (its server SIGSTOPped) blocks the reader, whose next answer comes after SIGCONT,
// when the replica has already caught up part of the way: reads alone would prove next to nothing
// about the hang. What the bench knows instead is when the hang began (every thread of the server
// seen stopped) and that it lasted at least until SIGCONT was sent: the replica applied nothing in
// between, so it had at most the rows the primary had committed when it stopped. A row the writer
// sent after that moment cannot have been committed before it, so it is missing throughout the
// hang. Rows committed between the last read before the hang and the stop may or may not have
// reached the replica, and are taken to have (the conservative side). Truth during a hang is
// therefore t − acked(the first row sent at or after the stop): the same rule as for a read, given
// by points every few ms that stand in for the reads the hang blocked (see Hang). It stays a
// proven lower bound, so "below truth" counts stay certain; it trails real staleness by the time
// between the replica's oldest missing commit and that row's ack (a few ms), which makes crossings
// during a hang that much late (and detection latencies that much shorter).
//
// Apply times sharpen the lower bound where reads are too coarse: while a replica catches up on a
// backlog it applies many rows between two reads, and the next read sees them all (the bracket
// widens to tens of ms). A trigger on lwtest.oracle, on every replica (not the primary), records
// for every row the replica applies the server's clock (the host's) as it inserts the row:
// the row cannot be visible before then, so at that moment, less a microsecond, the replica lacked
// it, and (commit order) every later row. Each such moment is a point like a read's, with
// max_id = id − 1. A replica that applies one transaction at a time has committed row id − 1
// before it inserts row id, so the bound then trails real staleness by at most one row: the one
// whose commit may still be under way. For the same reason each apply also proves row id − 1
// applied at that moment, so the upper bound follows the apply times too, not the reads alone:
// the bracket narrows to about one row while the replica keeps applying.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lagwatch::bench {

struct OracleRow {
  int64_t sent_us = -1;   // just before the INSERT was sent
  int64_t acked_us = -1;  // when its OK arrived; -1 if it failed or never answered
  // Not in the current primary's history, so no replica will ever apply it: an id the writer
  // skipped when it moved to a new primary, or a row a primary committed and died with before
  // the replica promoted in its place had it (a failover). Truth passes over such rows.
  bool skipped = false;
};

// Rows by id; ids are consecutive from first_id (one writer, explicit ids; the ids it jumps over
// when it moves to a new primary are rows marked skipped).
struct OracleLog {
  int64_t first_id = 1;
  std::vector<OracleRow> rows;
  const OracleRow* Get(int64_t id) const {
    if (id < first_id || id - first_id >= static_cast<int64_t>(rows.size())) return nullptr;
    return &rows[static_cast<size_t>(id - first_id)];
  }
  // The first row after `id` that is not skipped: the one a replica that has applied up to `id`
  // lacks first; nullptr if the writer sent none.
  const OracleRow* NextAfter(int64_t id) const {
    const OracleRow* row = Get(++id);
    while (row && row->skipped) row = Get(++id);
    return row;
  }
};

struct ReaderSample {
  int64_t sent_us = 0;
  int64_t recv_us = 0;
  int64_t max_id = 0;  // 0: no row yet
};

// A row's apply on a replica, from its trigger: the server inserted oracle row `id` at at_us.
struct AppliedRow {
  int64_t id = 0;
  int64_t at_us = 0;
};

// A replica's server was stopped (SIGSTOP, every thread seen stopped) at from_us and stayed stopped
// at least until to_us (just before SIGCONT was sent).
struct Hang {
  int64_t from_us = 0;
  int64_t to_us = 0;
};

// A maximal interval during which Truth > threshold.
struct Episode {
  int64_t start_us = 0;  // exact crossing of the Truth function
  int64_t end_us = 0;    // last moment Truth was over (the sample before the first one under)
  int64_t peak_us = 0;   // largest Truth seen in it
};

class Truth {
 public:
  // `reads`: the reader's samples in the order they were taken (sent_us ascending). `hangs`: the
  // replica's hangs (see the top of this file), each given a point every `hang_step_us`.
  // `applied`: the replica's apply times (see the top of this file), in any order.
  Truth(const OracleLog* log, std::vector<ReaderSample> reads, const std::vector<Hang>& hangs = {},
        int64_t hang_step_us = 5000, const std::vector<AppliedRow>& applied = {});

  // Proven lower bound on staleness at t; nullopt if no reader sample was sent at or after t or
  // the row it needs has no known ack.
  std::optional<int64_t> At(int64_t t) const;
  // Upper bound on staleness at t; nullopt if no sample answered by t.
  std::optional<int64_t> Upper(int64_t t) const;
  // Truth at each of samples()' send times (nullopt where unknown).
  std::optional<int64_t> AtSample(size_t i) const;
  // Episodes over `threshold_us` in the whole timeline.
  std::vector<Episode> Episodes(int64_t threshold_us) const;

  // The points the lower bound is known at, sent_us ascending: the reads, during a hang a point
  // every few ms, and a point just before each apply (for those two, sent_us = recv_us; max_id =
  // the last row that can have been applied).
  // Each point's max_id is the lowest of its own and every later point's: a row missing at τ was
  // missing before τ too (for the reads, which see more and more, that changes nothing).
  const std::vector<ReaderSample>& samples() const { return samples_; }
  // The reads alone, as taken.
  const std::vector<ReaderSample>& reads() const { return reads_; }

 private:
  std::optional<int64_t> LowerFrom(const ReaderSample& next, int64_t t) const;
  const OracleLog* log_;
  std::vector<ReaderSample> reads_;    // for Upper: a read proves the rows it saw applied
  std::vector<ReaderSample> samples_;  // for the lower bound
  // For Upper too: each apply proves the row before it committed (recv_us = its moment, max_id
  // = that row, the most of any apply up to it), recv_us ascending.
  std::vector<ReaderSample> applied_;
};

// One change of lagwatch's Redis hash for a replica, as the bench's poller saw it.
struct LagwatchRecord {
  int64_t seen_us = 0;       // the poll that first saw it
  int64_t last_seen_us = 0;  // the last poll that still saw it (the same fields, or still missing)
  bool missing = false;      // the key did not exist
  int64_t measured_at_ms = 0;
  double delay_ms = 0;
  // The finest statement of the bound the record carries: delay_us at measured_at_us (the
  // answer's own microsecond), or delay_ms at measured_at_ms from agents without them.
  int64_t measured_us = 0;
  double value_ms = 0;
  double delay_lower_ms = 0;
  bool healthy = false;
  std::string state;
  int64_t seq = 0;
  double max_delay_ms = -1;  // the replica's tier limit; -1 if the record has none
};

// One reading of a measuring system for one replica.
struct Report {
  int64_t measured_us = 0;         // the moment the value describes (lagwatch: measured_at_ms)
  int64_t seen_us = 0;             // when the bench had it (a router could have acted on it)
  std::optional<double> value_ms;  // reported lag; nullopt = unknown (SBM NULL, key missing)
  std::optional<double> lower_ms;  // lagwatch's delay_lower_ms
  bool over200 = false;            // the system's "exclude at 200 ms" verdict
  bool over1000 = false;           // ... and at 1000 ms
};

// A maximal run of consecutive reports that are over a threshold.
struct Run {
  int64_t start_seen_us = 0, start_measured_us = 0;
  int64_t end_seen_us = 0, end_measured_us = 0;  // the first report back under; or window end
  bool open = false;                             // still over at the end of the data
};

// The reports' over-runs for threshold 200 (`at1000` false) or 1000 ms.
std::vector<Run> Runs(const std::vector<Report>& reports, bool at1000, int64_t data_end_us);

struct Percentiles {
  size_t n = 0;
  double p50 = 0, p95 = 0, p99 = 0, max = 0, min = 0;
};
// Nearest-rank percentiles; n == 0 if `v` is empty.
Percentiles Summarize(std::vector<double> v);

struct ErrorStats {
  size_t reports = 0;    // reports in the window
  size_t unknown = 0;    // reports with no value (SBM NULL, lagwatch key missing)
  size_t no_truth = 0;   // value but no truth at that moment (end of data)
  Percentiles error_ms;  // reported − Truth(measured), for reports with both
  // reported − Upper(measured), for reports with both: the error that is certain whatever real
  // staleness within the oracle's bracket was (negative: within or under the bracket).
  Percentiles over_upper_ms;
  size_t below_10ms = 0;     // reported < Truth − 10 ms
  size_t lower_above = 0;    // lagwatch: delay_lower_ms > Upper + 10 ms (lower bound too high)
  size_t lower_checked = 0;  // reports where that could be checked
};
ErrorStats ComputeErrors(const std::vector<Report>& reports, const Truth& truth, int64_t from_us,
                         int64_t to_us);

struct EpisodeMeasures {
  size_t episodes = 0;            // true episodes starting in the window
  std::vector<double> detect_ms;  // per detected episode: first over report seen − crossing
  // Episodes the system was already reporting over before the replica even started to lag
  // (before crossing − threshold, when truth was still 0): no detection latency for those.
  size_t already_over = 0;
  size_t missed = 0;  // episodes with no over report before their end + grace
  // Per episode (detected or already over): the system's first report back under − the moment
  // truth fell back under. Negative: the system cleared the replica while truth was still over.
  std::vector<double> recover_ms;
  // Episodes after which the system was still over when the next true episode began or the
  // window ended: no recovery time for those.
  size_t not_recovered = 0;
  size_t false_exclusions = 0;  // over-runs starting in the window with Truth ≤ threshold
  double false_excluded_s = 0;  // their total length (measured time)
  double false_exclusion_peak_truth_ms = 0;  // the highest Truth during any of them
  // Time share (on the grid of Truth::samples()) during which truth was ≤ threshold but the
  // system's latest report, as seen by the bench, was over it: of the time truth was ≤ threshold
  // (fine_but_over / fine), or of all the window's time (fine_but_over / window).
  size_t fine_samples = 0;
  size_t fine_but_over_samples = 0;
  size_t window_samples = 0;
};
// `grace_us`: how long after a true episode ends a first over report still counts as its
// detection. `reports` must be in the order the bench saw them.
EpisodeMeasures ComputeEpisodes(const std::vector<Report>& reports, const Truth& truth, bool at1000,
                                int64_t from_us, int64_t to_us, int64_t data_end_us,
                                int64_t grace_us);

// What a router reading one replica's Redis key would have found in a window, whichever agent
// wrote it: from the poller's records (seen_us ascending).
struct KeyStats {
  size_t records = 0;     // records first seen in the window
  size_t missing = 0;     // times a poll found the key gone
  double missing_ms = 0;  // from each poll that found it gone to the first that found it back
  // The oldest record a poll saw: the last poll that saw it − its measured_at_ms.
  double max_age_ms = 0;
  // The longest time measured_at_ms did not advance: between two polls that saw it pass every
  // value before (counted from the window's start and up to its end).
  double max_stall_ms = 0;
  size_t backwards = 0;        // records whose measured_at_ms is below the record's before
  size_t flips = 0;            // changes of healthy from one record to the next
  size_t flips_while_far = 0;  // ... with the oracle's upper bound ≤ far_us at both measured times
};
KeyStats ComputeKeyStats(const std::vector<LagwatchRecord>& records, const Truth& truth,
                         int64_t from_us, int64_t to_us, int64_t far_us);

// A system's "within the limit" verdicts where truth says otherwise, in a window: the time during
// which its latest report as the bench saw it said at or under 200 ms (lagwatch: healthy=1; a
// missing key or an unknown value says over) while Truth was over `limit_us`, on a grid of
// `step_us` (Truth is a proven lower bound, so all of it is certain).
struct FalselyFine {
  double ms = 0;             // in all
  size_t runs = 0;           // maximal stretches of it
  double longest_ms = 0;     // the longest of them
  double peak_truth_ms = 0;  // the highest Truth during any of them
};
FalselyFine ComputeFalselyFine(const std::vector<Report>& reports, const Truth& truth,
                               int64_t from_us, int64_t to_us, int64_t limit_us,
                               int64_t step_us = 1000);

// When a replica that was moved to a new primary at `after_us` was truly caught up for good, and
// when the system then said so: `caught_us` is the first grid point (every `step_us`) from
// `after_us` after which Truth stays at or under `limit_us` up to `until_us` (`after_us` itself if
// it never was over); `fine_us` is the first report at or under 200 ms seen after `caught_us`,
// or, if the system already said so at `caught_us`, when that run of such reports began (before
// `caught_us`: a negative delay). A run that began before `after_us` is a verdict from before the
// move: it counts only if it is never withdrawn before `until_us` (then the system said so all
// along); if it is, the first report at or under 200 ms after the withdrawal counts. A later dip
// (an exclusion after the system said so) does not move `fine_us`. nullopt where there is none.
struct BackFine {
  std::optional<int64_t> caught_us;
  std::optional<int64_t> fine_us;
  // fine_us − caught_us in ms, when both are known.
  std::optional<double> DelayMs() const {
    if (!caught_us || !fine_us) return std::nullopt;
    return static_cast<double>(*fine_us - *caught_us) / 1000.0;
  }
};
BackFine ComputeBackFine(const std::vector<Report>& reports, const Truth& truth, int64_t after_us,
                         int64_t until_us, int64_t limit_us, int64_t step_us = 1000);

// Records first seen in [from_us, to_us) that say healthy=1 with delay_ms over their own
// max_delay_ms: a router comparing the two would decide otherwise than one reading healthy.
size_t CountHealthyOverLimit(const std::vector<LagwatchRecord>& records, int64_t from_us,
                             int64_t to_us);

}  // namespace lagwatch::bench
