#include "bench/stale_reads_analysis.h"

#include <doctest/doctest.h>

namespace lagwatch::bench {
namespace {

TEST_CASE("stale reads: an answer is as stale as the first oracle write it lacks is old") {
  SeqOracleLog log;
  for (int64_t s = 10; s <= 20; ++s) log.Sent(s, s * 5'000);  // seq s sent at s * 5 ms
  CHECK(log.last_seq() == 20);
  // Saw 20, the last: lacks nothing.
  CHECK(log.StalenessUs(20, 200'000) == 0);
  // Saw 15 at 130 ms: lacks 16, sent at 80 ms.
  CHECK(log.StalenessUs(15, 130'000) == 50'000);
  // Lacks 16, but 16 was sent after the answer: nothing it should have had.
  CHECK(log.StalenessUs(15, 79'000) == 0);
  // Saw the seq before the first sent (the table's start): lacks the first.
  CHECK(log.StalenessUs(9, 60'000) == 10'000);
  // Not a seq the oracle sent: cannot be judged.
  CHECK_FALSE(log.StalenessUs(21, 1'000'000).has_value());
  CHECK_FALSE(log.StalenessUs(3, 1'000'000).has_value());
  CHECK_FALSE(SeqOracleLog().StalenessUs(0, 1).has_value());
}

TEST_CASE("stale reads: reads are summarised per router and phase") {
  const std::vector<Phase> phases = {{"steady", 0, 0, 0}, {"sql-stop", 1'000'000, 2'000'000, 1}};
  CHECK(PhaseOf(phases, -1) == -1);
  CHECK(PhaseOf(phases, 999'999) == 0);
  CHECK(PhaseOf(phases, 1'000'000) == 1);
  CHECK(PhaseOf(phases, 9'000'000) == 1);
  std::vector<ReadRecord> reads = {
      // router 0, steady: a replica read, a primary read, a failed one.
      {0, false, 0, 1, 100'000, 1'000, false, 5'000},
      {0, false, 0, 0, 200'000, 2'000, false, 0},
      {0, false, 0, -1, 300'000, 0, false, 0},
      // router 0, the fault: replica 1 read 300 ms stale at +400 ms and 230 ms at +500 ms (both
      // over the 200 ms limit, the first also over limit + 25 ms); an own write read back old.
      {0, false, 0, 1, 1'400'000, 1'000, true, 300'000},
      {0, false, 0, 1, 1'500'000, 1'000, true, 230'000},
      {0, true, 20, 2, 1'600'000, 1'000, true, 10'000},
      {0, true, 20, 2, 1'700'000, 1'000, false, 0},
      // router 1, the fault: only replica 2 and the primary.
      {1, false, 0, 2, 1'400'000, 1'000, false, 1'000},
  };
  const auto s = Summarise(reads, phases, 200'000);
  const Summary& steady = s.at({0, 0});
  CHECK(steady.reads == 3);
  CHECK(steady.replica_reads == 1);
  CHECK(steady.primary_reads == 1);
  CHECK(steady.failed == 1);
  CHECK(steady.stale == 0);
  CHECK_FALSE(steady.last_bad_use_ms.has_value());
  const Summary& fault = s.at({0, 1});
  CHECK(fault.stale == 3);
  CHECK(fault.stale_others == 2);
  CHECK(fault.stale_own == 1);
  CHECK(fault.over_limit_25 == 2);
  CHECK(fault.own_by_think.at(20) == std::pair<int64_t, int64_t>{2, 1});
  // Other sessions' reads apart: the two replica-1 reads; the own writes' are not among them.
  CHECK(fault.others_replica_reads == 2);
  CHECK(fault.others_primary_reads == 0);
  CHECK(steady.others_replica_reads == 1);
  CHECK(steady.others_primary_reads == 1);
  REQUIRE(fault.last_bad_use_ms.has_value());
  CHECK(*fault.last_bad_use_ms == doctest::Approx(500.0));
  const Summary& other = s.at({1, 1});
  CHECK(other.stale == 0);
  CHECK_FALSE(other.last_bad_use_ms.has_value());
  // Two cycles of one fault, grouped: one summary, the last bad use from each cycle's own start.
  const std::vector<Phase> cycles = {{"steady", 0, 0, 0, 0},
                                     {"ftwrl", 1'000'000, 2'000'000, 1, 1},
                                     {"ftwrl", 5'000'000, 6'000'000, 1, 1}};
  const auto g = Summarise({{0, false, 0, 1, 1'300'000, 1'000, true, 250'000},
                            {0, false, 0, 1, 5'100'000, 1'000, true, 250'000}},
                           cycles, 200'000);
  REQUIRE(g.size() == 1);
  CHECK(g.at({0, 1}).reads == 2);
  CHECK(*g.at({0, 1}).last_bad_use_ms == doctest::Approx(300.0));
  CHECK(QuantileMs({1'000, 2'000, 3'000, 4'000}, 0.5) == doctest::Approx(2.0));
  CHECK(QuantileMs({1'000, 2'000, 3'000, 4'000}, 0.99) == doctest::Approx(4.0));
  CHECK(QuantileMs({}, 0.5) == 0);
}

}  // namespace
}  // namespace lagwatch::bench
