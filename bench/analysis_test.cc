#include "bench/analysis.h"

#include <doctest/doctest.h>

namespace lagwatch::bench {
namespace {

// A writer that sends row k (id k + 1) at k × 5 ms and has it acked 1 ms later.
OracleLog Rows(int n) {
  OracleLog log;
  for (int k = 0; k < n; ++k) log.rows.push_back({k * 5000, k * 5000 + 1000});
  return log;
}

// A replica that applies every row 2 ms after its ack and is read every 5 ms (at 5k + 3 ms,
// answered 1 ms later), except that from `hang_from` to `hang_to` it applies nothing and the read
// in flight then is answered only at `hang_to` + 1 ms with what it has caught up by then.
std::vector<ReaderSample> Reads(const OracleLog& log, int64_t end, int64_t hang_from,
                                int64_t hang_to) {
  auto applied_at = [&](int64_t t) {  // max id applied at t
    const int64_t seen = t >= hang_from && t < hang_to + 10'000 ? hang_from : t;
    int64_t max_id = 0;
    for (size_t k = 0; k < log.rows.size(); ++k) {
      if (log.rows[k].acked_us + 2000 <= seen) max_id = static_cast<int64_t>(k) + 1;
    }
    return max_id;
  };
  std::vector<ReaderSample> out;
  for (int64_t t = 3000; t < end;) {
    int64_t recv = t + 1000;
    if (t < hang_from && recv >= hang_from) recv = hang_to + 1000;  // blocked
    if (t >= hang_from && t < hang_to) {  // no read is sent during the hang
      t = hang_to + 1000;
      recv = t + 1000;
    }
    out.push_back({t, recv, applied_at(recv >= hang_to ? recv + 20'000 : t)});
    t = recv + 4000;
  }
  return out;
}

TEST_CASE("truth during a replica hang is t − ack of the first row sent after the stop") {
  const OracleLog log = Rows(1000);  // 5 s of rows
  const int64_t from = 1'000'500, to = 2'500'000;
  const auto reads = Reads(log, 4'000'000, from, to);

  // The reads alone: the blocked read and the next are answered after the replica caught up
  // (here 20 ms after SIGCONT), so they prove nothing about the hang.
  const Truth reads_only(&log, reads);
  CHECK(reads_only.At(2'000'000).value() < 50'000);

  const Truth truth(&log, reads, {{from, to}});
  // Row 201 (sent at 1'000'000) may have been committed before the stop: not proven missing. Row
  // 202 (sent at 1'005'000 >= from, acked at 1'006'000) is.
  CHECK(truth.At(2'000'000).value() == 2'000'000 - 1'006'000);
  CHECK(truth.At(to).value() == to - 1'006'000);
  const auto over200 = truth.Episodes(200'000);
  REQUIRE(over200.size() == 1);
  CHECK(over200[0].start_us == 1'006'000 + 200'000);
  CHECK(over200[0].end_us >= to);
  const auto over1000 = truth.Episodes(1'000'000);
  REQUIRE(over1000.size() == 1);
  CHECK(over1000[0].start_us == 1'006'000 + 1'000'000);
  // A hang proves nothing applied: without apply times the upper bound during it still comes
  // from the last read answered before it.
  CHECK(truth.Upper(2'000'000) == reads_only.Upper(2'000'000));
  CHECK(truth.reads().size() == reads.size());
  CHECK(truth.samples().size() > reads.size());
  // Before the hang nothing changes.
  CHECK(truth.At(500'000) == reads_only.At(500'000));
}

TEST_CASE("apply times make truth exact while a replica catches up faster than it is read") {
  const OracleLog log = Rows(1000);  // row id k + 1 sent at 5k ms, acked 1 ms later
  // Applied 2 ms after its ack, in order, except that rows due in [1 s, 2 s) wait for the SQL
  // thread's restart at 2 s: from then on each is applied 0.1 ms after the one before, until it
  // has caught up.
  std::vector<AppliedRow> applied;
  int64_t last = 0;
  for (size_t k = 0; k < log.rows.size(); ++k) {
    int64_t at = log.rows[k].acked_us + 2000;
    if (at >= 1'000'000 && at < 2'000'000) at = 2'000'000;
    at = std::max(at, last + 100);
    applied.push_back({static_cast<int64_t>(k) + 1, at});
    last = at;
  }
  auto max_applied = [&](int64_t t) {
    int64_t m = 0;
    for (const AppliedRow& a : applied) m = a.at_us <= t ? std::max(m, a.id) : m;
    return m;
  };
  std::vector<ReaderSample> reads;
  for (int64_t t = 3000; t < 4'000'000; t += 5000) reads.push_back({t, t + 1000, max_applied(t)});

  const Truth reads_only(&log, reads);
  const Truth truth(&log, reads, {}, 5000, applied);
  // 10.05 ms into the catch-up, 101 of the 200 stalled rows (ids 201..400) are in: the first
  // missing is id 302.
  const int64_t t = 2'010'050;
  const int64_t first_missing = max_applied(t) + 1;
  CHECK(first_missing == 302);
  const int64_t exact = t - log.Get(first_missing)->acked_us;
  CHECK(truth.At(t).value() == exact);
  // The next read, sent at 2,013,000, saw 30 more rows: 150 ms less than the truth.
  CHECK(reads_only.At(t).value() == exact - 30 * 5000);
  // Away from the catch-up nothing changes.
  CHECK(truth.At(500'000) == reads_only.At(500'000));
  CHECK(truth.At(1'500'000).value() == reads_only.At(1'500'000).value());
  // Each apply proves the row before it committed: the upper bound follows the apply times, from
  // row 300 (proven by 301's apply), where the reads' trails at the last read answered by t
  // (sent at 2,008,000: it saw row 281). The bracket still holds the exact truth.
  CHECK(truth.Upper(t).value() == t - log.Get(first_missing - 2)->sent_us);
  const int64_t read_saw = max_applied(2'008'000);
  CHECK(read_saw == 281);
  CHECK(reads_only.Upper(t).value() == t - log.Get(read_saw)->sent_us);
  CHECK(truth.Upper(t).value() >= exact);
  CHECK(truth.Upper(t).value() - exact < 3 * 5000);
  // The crossing of 200 ms is where the stalled rows make it, from either.
  REQUIRE(truth.Episodes(200'000).size() == 1);
  CHECK(truth.Episodes(200'000)[0].start_us == reads_only.Episodes(200'000)[0].start_us);
}

LagwatchRecord Record(int64_t seen, int64_t last_seen, int64_t measured_ms, bool healthy) {
  LagwatchRecord r;
  r.seen_us = seen;
  r.last_seen_us = last_seen;
  r.measured_at_ms = measured_ms;
  r.healthy = healthy;
  return r;
}

TEST_CASE("key stats: missing time, age, stalls, measured_at going backwards, flips") {
  const OracleLog log = Rows(1000);
  const Truth truth(&log, Reads(log, 5'000'000, 10'000'000, 10'000'000));  // no hang
  std::vector<LagwatchRecord> records = {
      Record(1'000'000, 1'090'000, 995, true), Record(1'100'000, 1'190'000, 1'095, true),
      Record(1'200'000, 1'490'000, 1'090, false),  // older than the last: backwards, and a flip
      Record(1'500'000, 1'500'000, 1'495, true),   // a flip back
  };
  LagwatchRecord gone;
  gone.seen_us = 1'600'000;
  gone.last_seen_us = 1'640'000;
  gone.missing = true;
  records.push_back(gone);
  records.push_back(Record(1'650'000, 1'700'000, 1'648, true));

  const KeyStats k = ComputeKeyStats(records, truth, 1'000'000, 1'800'000, 100'000);
  CHECK(k.records == 5);
  CHECK(k.missing == 1);
  CHECK(k.missing_ms == doctest::Approx(50.0));
  CHECK(k.max_age_ms == doctest::Approx(400.0));    // measured at 1'090 ms, last seen at 1'490 ms
  CHECK(k.max_stall_ms == doctest::Approx(400.0));  // no advance from 1'100 ms to 1'500 ms
  CHECK(k.backwards == 1);
  CHECK(k.flips == 2);
  CHECK(k.flips_while_far == 2);  // the replica was caught up all along
}

TEST_CASE("truth passes over rows lost with a primary and ids skipped at its move") {
  // Rows 1..10 reached the replica; the dead primary also acked rows 11 and 12, which the new
  // primary never had; the writer then jumped ids 13..20 and wrote row 21 on the new primary.
  OracleLog log = Rows(21);
  for (int64_t id = 11; id <= 20; ++id) {
    OracleRow& row = log.rows[static_cast<size_t>(id - 1)];
    row.skipped = true;
    if (id > 12) row = {-1, -1, true};
  }
  log.rows[20] = {200'000, 201'000};  // row 21
  const std::vector<ReaderSample> reads = {{150'000, 150'500, 10}, {300'000, 300'500, 10}};
  const Truth truth(&log, reads);
  CHECK(truth.At(150'000) == 0);  // the only rows it lacks then are lost ones
  CHECK(truth.At(300'000) == 300'000 - 201'000);
  const auto over = truth.Episodes(50'000);
  REQUIRE(over.size() == 1);
  CHECK(over[0].start_us == 201'000 + 50'000);
}

// A replica read every 5 ms (at 5k + 3 ms) that has every acked row, except that from 0.5 s to
// 1.5 s it applies nothing beyond row 100 (acked at 501 ms).
std::vector<ReaderSample> StuckReads(int64_t end) {
  std::vector<ReaderSample> out;
  for (int64_t t = 3000; t < end; t += 5000) {
    const int64_t max_id = t >= 500'000 && t < 1'500'000 ? 100 : (t - 1000) / 5000 + 1;
    out.push_back({t, t + 500, max_id});
  }
  return out;
}

Report Verdict(int64_t seen, bool over) {
  Report r;
  r.seen_us = r.measured_us = seen;
  r.over200 = over;
  return r;
}

TEST_CASE("falsely fine: said within the limit while truth was over it") {
  const OracleLog log = Rows(1000);
  const Truth truth(&log, StuckReads(3'000'000));
  // Truth is t − 501 ms from 0.5 s on: over 200 ms after 701 ms, until the read at 1.498 s.
  SUBCASE("excluded 98 ms after the crossing") {
    const std::vector<Report> reports = {Verdict(0, false), Verdict(800'000, true),
                                         Verdict(1'600'000, false)};
    const FalselyFine f = ComputeFalselyFine(reports, truth, 0, 3'000'000, 200'000);
    CHECK(f.ms == doctest::Approx(98.0));  // 702 .. 799 ms
    CHECK(f.runs == 1);
    CHECK(f.longest_ms == doctest::Approx(98.0));
    CHECK(f.peak_truth_ms == doctest::Approx(298.0));
    const BackFine b = ComputeBackFine(reports, truth, 400'000, 3'000'000, 200'000);
    CHECK(b.caught_us == 1'499'000);
    CHECK(b.fine_us == 1'600'000);
    CHECK(b.DelayMs() == doctest::Approx(101.0));
  }
  SUBCASE("never excluded") {
    const std::vector<Report> reports = {Verdict(0, false)};
    const FalselyFine f = ComputeFalselyFine(reports, truth, 0, 3'000'000, 200'000);
    CHECK(f.ms == doctest::Approx(797.0));  // 702 .. 1498 ms
    const BackFine b = ComputeBackFine(reports, truth, 400'000, 3'000'000, 200'000);
    CHECK(b.DelayMs() == doctest::Approx(-1499.0));  // fine since before the lag began
  }
  SUBCASE("a verdict withdrawn after the catch-up does not count") {
    const std::vector<Report> reports = {Verdict(0, false), Verdict(1'550'000, true),
                                         Verdict(1'700'000, false)};
    const BackFine b = ComputeBackFine(reports, truth, 400'000, 3'000'000, 200'000);
    CHECK(b.DelayMs() == doctest::Approx(201.0));
  }
  SUBCASE("a later exclusion does not move the way back") {
    const std::vector<Report> reports = {Verdict(0, false), Verdict(800'000, true),
                                         Verdict(1'600'000, false), Verdict(2'000'000, true),
                                         Verdict(2'500'000, false)};
    const BackFine b = ComputeBackFine(reports, truth, 400'000, 3'000'000, 200'000);
    CHECK(b.DelayMs() == doctest::Approx(101.0));
  }
  SUBCASE("a fresh verdict before the catch-up is a negative delay") {
    const std::vector<Report> reports = {Verdict(0, true), Verdict(1'400'000, false)};
    const BackFine b = ComputeBackFine(reports, truth, 400'000, 3'000'000, 200'000);
    CHECK(b.DelayMs() == doctest::Approx(-99.0));
  }
  SUBCASE("no report at all is no verdict of fine, and no way back") {
    const FalselyFine f = ComputeFalselyFine({}, truth, 0, 3'000'000, 200'000);
    CHECK(f.ms == 0);
    CHECK(f.runs == 0);
    const BackFine b = ComputeBackFine({}, truth, 400'000, 3'000'000, 200'000);
    CHECK(b.caught_us == 1'499'000);
    CHECK_FALSE(b.fine_us.has_value());
  }
  SUBCASE("a replica never over the limit is caught up from the start") {
    const Truth fine(&log, StuckReads(400'000));
    const std::vector<Report> reports = {Verdict(0, true), Verdict(250'000, false)};
    const BackFine b = ComputeBackFine(reports, fine, 100'000, 300'000, 200'000);
    CHECK(b.caught_us == 100'000);
    CHECK(b.DelayMs() == doctest::Approx(150.0));
  }
}

TEST_CASE("healthy=1 beside a delay_ms over the tier's limit is counted") {
  std::vector<LagwatchRecord> records = {
      Record(1'000, 1'000, 1, true), Record(2'000, 2'000, 2, true), Record(3'000, 3'000, 3, false),
      Record(4'000, 4'000, 4, true)};
  for (auto& r : records) r.max_delay_ms = 200;
  records[0].delay_ms = 150;
  records[1].delay_ms = 250;  // counted
  records[2].delay_ms = 900;  // unhealthy: fine
  records[3].delay_ms = 300;
  records[3].max_delay_ms = -1;  // no limit published: not judged
  CHECK(CountHealthyOverLimit(records, 0, 10'000) == 1);
  CHECK(CountHealthyOverLimit(records, 2'001, 10'000) == 0);
}

}  // namespace
}  // namespace lagwatch::bench
