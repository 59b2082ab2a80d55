#include "bench/analysis.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace lagwatch::bench {

Truth::Truth(const OracleLog* log, std::vector<ReaderSample> reads, const std::vector<Hang>& hangs,
             int64_t hang_step_us, const std::vector<AppliedRow>& applied)
    : log_(log), reads_(std::move(reads)), samples_(reads_) {
  for (const AppliedRow& a : applied) {
    // Row a.id was not visible a microsecond before its insert, and row a.id − 1 had committed
    // by then (see the top of analysis.h).
    samples_.push_back({a.at_us - 1, a.at_us - 1, a.id - 1});
    applied_.push_back({a.at_us, a.at_us, a.id - 1});
  }
  std::sort(applied_.begin(), applied_.end(),
            [](const ReaderSample& a, const ReaderSample& b) { return a.recv_us < b.recv_us; });
  // A row applied stays applied: each point proves the most any point up to it proves.
  for (size_t k = 1; k < applied_.size(); ++k) {
    applied_[k].max_id = std::max(applied_[k].max_id, applied_[k - 1].max_id);
  }
  for (const Hang& h : hangs) {
    // The first row sent at or after the stop, whose outcome is known: committed after the stop,
    // so missing throughout the hang (see the top of analysis.h).
    int64_t first = -1;
    for (size_t k = 0; k < log_->rows.size() && first < 0; ++k) {
      const OracleRow& row = log_->rows[k];
      if (row.sent_us >= h.from_us && row.acked_us >= 0 && !row.skipped) {
        first = log_->first_id + static_cast<int64_t>(k);
      }
    }
    if (first < 0) continue;  // the writer sent nothing after it: no proof
    for (int64_t t = h.from_us;; t = std::min(t + hang_step_us, h.to_us)) {
      samples_.push_back({t, t, first - 1});
      if (t >= h.to_us) break;
    }
  }
  std::stable_sort(
      samples_.begin(), samples_.end(),
      [](const ReaderSample& a, const ReaderSample& b) { return a.sent_us < b.sent_us; });
  for (size_t k = samples_.size(); k-- > 1;) {
    samples_[k - 1].max_id = std::min(samples_[k - 1].max_id, samples_[k].max_id);
  }
}

std::optional<int64_t> Truth::LowerFrom(const ReaderSample& next, int64_t t) const {
  const OracleRow* row = log_->NextAfter(next.max_id);
  if (!row) return 0;  // the replica had every oracle row the writer ever sent
  if (row->sent_us >= 0 && row->sent_us > t) return 0;  // not even sent at t
  if (row->acked_us < 0) return std::nullopt;           // unknown outcome: cannot place its commit
  if (row->acked_us >= t) return 0;                     // maybe not committed yet at t
  return t - row->acked_us;
}

std::optional<int64_t> Truth::At(int64_t t) const {
  auto it = std::lower_bound(samples_.begin(), samples_.end(), t,
                             [](const ReaderSample& s, int64_t v) { return s.sent_us < v; });
  if (it == samples_.end()) return std::nullopt;
  return LowerFrom(*it, t);
}

std::optional<int64_t> Truth::AtSample(size_t i) const {
  return LowerFrom(samples_[i], samples_[i].sent_us);
}

std::optional<int64_t> Truth::Upper(int64_t t) const {
  // The most rows proven applied by t: by the last read answered by t, or the last apply.
  // Reads are sent in order and answered in order (one connection), so recv_us ascends too.
  int64_t max_id = 0;
  for (const auto* points : {&reads_, &applied_}) {
    auto it = std::upper_bound(points->begin(), points->end(), t,
                               [](int64_t v, const ReaderSample& s) { return v < s.recv_us; });
    if (it != points->begin()) max_id = std::max(max_id, std::prev(it)->max_id);
  }
  if (max_id == 0) return std::nullopt;
  const OracleRow* row = log_->Get(max_id);
  if (!row || row->sent_us < 0) return std::nullopt;
  return std::max<int64_t>(0, t - row->sent_us);
}

std::vector<Episode> Truth::Episodes(int64_t threshold_us) const {
  std::vector<Episode> out;
  bool over = false;
  for (size_t i = 0; i < samples_.size(); ++i) {
    auto lo = AtSample(i);
    if (!lo) continue;  // unknown: keep the current state
    if (*lo > threshold_us) {
      if (!over) {
        // Truth(t) = t − acked(m+1) on the interval ending at this sample: exact crossing.
        const OracleRow* row = log_->NextAfter(samples_[i].max_id);
        Episode e;
        e.start_us = row->acked_us + threshold_us;
        e.peak_us = *lo;
        out.push_back(e);
        over = true;
      }
      out.back().end_us = samples_[i].sent_us;
      out.back().peak_us = std::max(out.back().peak_us, *lo);
    } else {
      over = false;
    }
  }
  return out;
}

std::vector<Run> Runs(const std::vector<Report>& reports, bool at1000, int64_t data_end_us) {
  std::vector<Run> out;
  bool over = false;
  for (const Report& r : reports) {
    const bool o = at1000 ? r.over1000 : r.over200;
    if (o && !over) {
      Run run;
      run.start_seen_us = r.seen_us;
      run.start_measured_us = r.measured_us;
      run.open = true;
      out.push_back(run);
    } else if (!o && over) {
      out.back().end_seen_us = r.seen_us;
      out.back().end_measured_us = r.measured_us;
      out.back().open = false;
    }
    over = o;
  }
  if (over) {
    out.back().end_seen_us = data_end_us;
    out.back().end_measured_us = data_end_us;
  }
  return out;
}

Percentiles Summarize(std::vector<double> v) {
  Percentiles p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(k, 1, v.size()) - 1];
  };
  p.p50 = rank(0.50);
  p.p95 = rank(0.95);
  p.p99 = rank(0.99);
  p.max = v.back();
  p.min = v.front();
  return p;
}

ErrorStats ComputeErrors(const std::vector<Report>& reports, const Truth& truth, int64_t from_us,
                         int64_t to_us) {
  ErrorStats s;
  std::vector<double> errors, over_upper;
  for (const Report& r : reports) {
    if (r.measured_us < from_us || r.measured_us >= to_us) continue;
    ++s.reports;
    if (!r.value_ms) {
      ++s.unknown;
      continue;
    }
    auto t = truth.At(r.measured_us);
    if (!t) {
      ++s.no_truth;
      continue;
    }
    const double err = *r.value_ms - static_cast<double>(*t) / 1000.0;
    errors.push_back(err);
    if (err < -10.0) ++s.below_10ms;
    const auto up = truth.Upper(r.measured_us);
    if (up) over_upper.push_back(*r.value_ms - static_cast<double>(*up) / 1000.0);
    if (r.lower_ms && up) {
      ++s.lower_checked;
      if (*r.lower_ms > static_cast<double>(*up) / 1000.0 + 10.0) ++s.lower_above;
    }
  }
  s.error_ms = Summarize(std::move(errors));
  s.over_upper_ms = Summarize(std::move(over_upper));
  return s;
}

EpisodeMeasures ComputeEpisodes(const std::vector<Report>& reports, const Truth& truth, bool at1000,
                                int64_t from_us, int64_t to_us, int64_t data_end_us,
                                int64_t grace_us) {
  const int64_t threshold_us = at1000 ? 1'000'000 : 200'000;
  const std::vector<Episode> all = truth.Episodes(threshold_us);
  const std::vector<Run> runs = Runs(reports, at1000, data_end_us);
  EpisodeMeasures m;

  for (size_t ei = 0; ei < all.size(); ++ei) {
    const Episode& e = all[ei];
    if (e.start_us < from_us || e.start_us >= to_us) continue;
    ++m.episodes;
    // The first over-run still over at the true crossing (it may have started before it: a
    // negative latency) or starting before the episode ended (+ grace).
    size_t ri = 0;
    while (ri < runs.size() && !runs[ri].open && runs[ri].end_seen_us <= e.start_us) ++ri;
    if (ri == runs.size() || runs[ri].start_seen_us > e.end_us + grace_us) {
      ++m.missed;
      continue;
    }
    const Run& det = runs[ri];
    // Truth grew from 0 at (crossing − threshold): a run older than that is a standing
    // exclusion, not a detection of this episode.
    if (det.start_seen_us < e.start_us - threshold_us) {
      ++m.already_over;
    } else {
      m.detect_ms.push_back(static_cast<double>(det.start_seen_us - e.start_us) / 1000.0);
    }
    // Recovery: the end of the last over-run that started by the time truth fell back under
    // (or the detecting run, if it started later).
    const Run* rec = &det;
    for (size_t i = ri + 1; i < runs.size() && runs[i].start_seen_us <= e.end_us; ++i) {
      rec = &runs[i];
    }
    // Until the next true episode or the end of the scenario, whichever comes first.
    const int64_t horizon = std::min(ei + 1 < all.size() ? all[ei + 1].start_us : data_end_us,
                                     std::max(to_us, e.end_us));
    if (rec->open || rec->end_seen_us >= horizon) {
      ++m.not_recovered;
    } else {
      m.recover_ms.push_back(static_cast<double>(rec->end_seen_us - e.end_us) / 1000.0);
    }
  }

  // False exclusions: over-runs (by measured time) that no true episode overlaps.
  for (const Run& r : runs) {
    if (r.start_measured_us < from_us || r.start_measured_us >= to_us) continue;
    bool overlaps = false;
    for (const Episode& e : all) {
      if (e.start_us <= r.end_measured_us && e.end_us >= r.start_measured_us) {
        overlaps = true;
        break;
      }
    }
    if (overlaps) continue;
    ++m.false_exclusions;
    m.false_excluded_s += static_cast<double>(r.end_measured_us - r.start_measured_us) / 1e6;
    // Truth rises only up to each sample (see Truth), so its peak is at a sample or the end.
    int64_t peak = truth.At(r.end_measured_us).value_or(0);
    const auto& samples = truth.samples();
    auto it = std::lower_bound(samples.begin(), samples.end(), r.start_measured_us,
                               [](const ReaderSample& s, int64_t v) { return s.sent_us < v; });
    for (; it != samples.end() && it->sent_us <= r.end_measured_us; ++it) {
      peak = std::max(peak, truth.AtSample(static_cast<size_t>(it - samples.begin())).value_or(0));
    }
    m.false_exclusion_peak_truth_ms =
        std::max(m.false_exclusion_peak_truth_ms, static_cast<double>(peak) / 1000.0);
  }

  // Time excluded while fine, on the reader-sample grid.
  const auto& samples = truth.samples();
  size_t next_report = 0;
  std::optional<bool> over;
  for (size_t k = 0; k < samples.size(); ++k) {
    const int64_t t = samples[k].sent_us;
    while (next_report < reports.size() && reports[next_report].seen_us <= t) {
      over = at1000 ? reports[next_report].over1000 : reports[next_report].over200;
      ++next_report;
    }
    if (t < from_us || t >= to_us) continue;
    ++m.window_samples;
    if (!over) continue;
    auto lo = truth.AtSample(k);
    if (!lo || *lo > threshold_us) continue;
    ++m.fine_samples;
    if (*over) ++m.fine_but_over_samples;
  }
  return m;
}

KeyStats ComputeKeyStats(const std::vector<LagwatchRecord>& records, const Truth& truth,
                         int64_t from_us, int64_t to_us, int64_t far_us) {
  KeyStats k;
  int64_t newest_ms = -1;                // the highest measured_at_ms seen so far
  int64_t last_advance = from_us;        // the poll that saw it
  const LagwatchRecord* prev = nullptr;  // the last record with the key present
  auto far = [&](const LagwatchRecord& r) {
    auto up = truth.Upper(r.measured_at_ms * 1000);
    return up && *up <= far_us;
  };
  for (size_t i = 0; i < records.size(); ++i) {
    const LagwatchRecord& r = records[i];
    const bool in = r.seen_us >= from_us && r.seen_us < to_us;
    if (r.missing) {
      if (!in) continue;
      ++k.missing;
      const int64_t back = i + 1 < records.size() ? std::min(records[i + 1].seen_us, to_us) : to_us;
      k.missing_ms += static_cast<double>(back - r.seen_us) / 1000.0;
      continue;
    }
    // A record first seen before the window and still seen in it counts for its age.
    if (r.last_seen_us >= from_us && r.seen_us < to_us) {
      const int64_t last = std::min(r.last_seen_us, to_us);
      k.max_age_ms =
          std::max(k.max_age_ms, static_cast<double>(last - r.measured_at_ms * 1000) / 1000.0);
    }
    if (in) {
      ++k.records;
      if (r.measured_at_ms > newest_ms) {
        k.max_stall_ms =
            std::max(k.max_stall_ms, static_cast<double>(r.seen_us - last_advance) / 1000.0);
        last_advance = r.seen_us;
      }
      if (prev && r.measured_at_ms < prev->measured_at_ms) ++k.backwards;
      if (prev && r.healthy != prev->healthy) {
        ++k.flips;
        if (far(r) && far(*prev)) ++k.flips_while_far;
      }
    }
    newest_ms = std::max(newest_ms, r.measured_at_ms);
    prev = &r;
  }
  k.max_stall_ms = std::max(k.max_stall_ms, static_cast<double>(to_us - last_advance) / 1000.0);
  return k;
}

namespace {

// The verdicts of `reports` as the bench saw them, read forward in time.
class VerdictCursor {
 public:
  explicit VerdictCursor(const std::vector<Report>& reports) : reports_(reports) {}
  // Moves to time t (never backwards); true if the latest report seen by t said over 200 ms or
  // there was none yet.
  bool OverAt(int64_t t) {
    while (next_ < reports_.size() && reports_[next_].seen_us <= t) {
      over_ = reports_[next_].over200;
      ++next_;
    }
    return over_;
  }

 private:
  const std::vector<Report>& reports_;
  size_t next_ = 0;
  bool over_ = true;
};

}  // namespace

FalselyFine ComputeFalselyFine(const std::vector<Report>& reports, const Truth& truth,
                               int64_t from_us, int64_t to_us, int64_t limit_us, int64_t step_us) {
  FalselyFine f;
  VerdictCursor cursor(reports);
  double run_ms = 0;
  for (int64_t t = from_us; t < to_us; t += step_us) {
    const bool over = cursor.OverAt(t);
    const auto lo = truth.At(t);
    if (!over && lo && *lo > limit_us) {
      const double ms = static_cast<double>(std::min(step_us, to_us - t)) / 1000.0;
      if (run_ms == 0) ++f.runs;
      run_ms += ms;
      f.ms += ms;
      f.longest_ms = std::max(f.longest_ms, run_ms);
      f.peak_truth_ms = std::max(f.peak_truth_ms, static_cast<double>(*lo) / 1000.0);
    } else {
      run_ms = 0;
    }
  }
  return f;
}

BackFine ComputeBackFine(const std::vector<Report>& reports, const Truth& truth, int64_t after_us,
                         int64_t until_us, int64_t limit_us, int64_t step_us) {
  BackFine b;
  int64_t caught = after_us;
  for (int64_t t = after_us; t < until_us; t += step_us) {
    const auto lo = truth.At(t);
    if (lo && *lo > limit_us) caught = t + step_us;
  }
  if (caught >= until_us) return b;
  b.caught_us = caught;
  // The verdict in effect at `caught` and when its run of fine reports began.
  const size_t n = reports.size();
  size_t k = 0;
  bool over = true;
  int64_t fine_since = 0;
  for (; k < n && reports[k].seen_us <= caught; ++k) {
    if (!reports[k].over200 && over) fine_since = reports[k].seen_us;
    over = reports[k].over200;
  }
  // The first fine report from index j on, before `until_us`.
  auto first_fine = [&](size_t j) -> std::optional<int64_t> {
    for (; j < n && reports[j].seen_us < until_us; ++j) {
      if (!reports[j].over200) return reports[j].seen_us;
    }
    return std::nullopt;
  };
  if (over) {
    b.fine_us = first_fine(k);
  } else if (fine_since >= after_us) {
    b.fine_us = fine_since;
  } else {
    // A verdict from before the move: it counts only if it is never withdrawn.
    size_t j = k;
    while (j < n && reports[j].seen_us < until_us && !reports[j].over200) ++j;
    b.fine_us = j < n && reports[j].seen_us < until_us ? first_fine(j) : fine_since;
  }
  return b;
}

size_t CountHealthyOverLimit(const std::vector<LagwatchRecord>& records, int64_t from_us,
                             int64_t to_us) {
  size_t n = 0;
  for (const LagwatchRecord& r : records) {
    if (r.seen_us < from_us || r.seen_us >= to_us || r.missing || !r.healthy) continue;
    if (r.max_delay_ms >= 0 && r.delay_ms > r.max_delay_ms) ++n;
  }
  return n;
}

}  // namespace lagwatch::bench
