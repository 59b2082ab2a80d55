#include "bench/stale_reads_analysis.h"

#include <algorithm>
#include <cmath>

namespace lagwatch::bench {

void SeqOracleLog::Sent(int64_t seq, int64_t sent_us) {
  if (sent_us_.empty()) first_seq_ = seq;
  sent_us_.push_back(sent_us);
}

std::optional<int64_t> SeqOracleLog::StalenessUs(int64_t seen, int64_t answer_us) const {
  if (sent_us_.empty() || seen < first_seq_ - 1 || seen > last_seq()) return std::nullopt;
  const int64_t missing = seen + 1;  // the first write the answer lacks
  if (missing > last_seq()) return 0;
  const int64_t sent = sent_us_[static_cast<size_t>(missing - first_seq_)];
  return sent < answer_us ? answer_us - sent : 0;
}

int PhaseOf(const std::vector<Phase>& phases, int64_t at_us) {
  int found = -1;
  for (size_t i = 0; i < phases.size(); ++i) {
    if (phases[i].begin_us <= at_us) found = static_cast<int>(i);
  }
  return found;
}

std::map<std::pair<int, int>, Summary> Summarise(const std::vector<ReadRecord>& reads,
                                                 const std::vector<Phase>& phases,
                                                 int64_t limit_us) {
  std::map<std::pair<int, int>, Summary> out;
  for (const ReadRecord& r : reads) {
    const int phase = PhaseOf(phases, r.answer_us);
    if (phase < 0) continue;
    const int group = phases[static_cast<size_t>(phase)].group;
    Summary& s = out[{r.router, group >= 0 ? group : phase}];
    ++s.reads;
    if (r.served_by < 0) {
      ++s.failed;
      continue;
    }
    s.latencies_us.push_back(r.latency_us);
    (r.served_by == 0 ? s.primary_reads : s.replica_reads) += 1;
    if (!r.own_write) (r.served_by == 0 ? s.others_primary_reads : s.others_replica_reads) += 1;
    if (r.stale) {
      ++s.stale;
      ++(r.own_write ? s.stale_own : s.stale_others);
    }
    if (r.own_write) {
      auto& [n, stale] = s.own_by_think[r.think_ms];
      ++n;
      if (r.stale) ++stale;
    }
    if (r.served_by > 0 && r.staleness_us > limit_us + 25'000) ++s.over_limit_25;
    const Phase& p = phases[static_cast<size_t>(phase)];
    if (p.faulted != 0 && r.served_by == p.faulted && r.staleness_us > limit_us &&
        r.answer_us >= p.begin_us) {
      const double ms = static_cast<double>(r.answer_us - p.begin_us) / 1000.0;
      s.last_bad_use_ms = std::max(s.last_bad_use_ms.value_or(0.0), ms);
    }
  }
  return out;
}

double QuantileMs(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return static_cast<double>(v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)]) / 1000.0;
}

}  // namespace lagwatch::bench
