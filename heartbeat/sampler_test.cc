#include "heartbeat/sampler.h"

#include <doctest/doctest.h>

#include <mutex>
#include <thread>
#include <vector>

#include "heartbeat/fake_primary.h"

namespace lagwatch {
namespace {

bool IsSample(const std::string& sql) { return sql == "SELECT @@gtid_binlog_pos"; }
bool IsLoad(const std::string& sql) { return sql.rfind("SELECT @@max_connections", 0) == 0; }

SamplerOptions Options() {
  SamplerOptions options;
  options.interval_ms = 50;
  return options;
}

struct Fixture : FakePrimaryFixture<PositionSampler, PositionHistory, RecordingSamplerSink> {
  explicit Fixture(FakeSqlConnection::Script script)
      : FakePrimaryFixture(std::move(script), Options()) {}
  std::vector<int64_t> RunFor(int ms, bool (*pred)(const std::string&) = IsSample) {
    FakePrimaryFixture::RunFor(ms);
    return TimesOf(pred);
  }
  PositionHistory& history = record;
};

FakeSqlConnection::Answer Position(const std::string& gtid, Millis latency = Millis(1)) {
  return {Row({"@@gtid_binlog_pos"}, {gtid}), latency};
}

TEST_CASE("sampler reads the primary's position every 50 ms on a fake clock") {
  Fixture f([](const std::string& sql, size_t i) {
    return IsSample(sql) ? Position("0-1-" + std::to_string(100 + i)) : FakeSqlConnection::Answer{};
  });
  auto times = f.RunFor(220);
  CHECK(times == std::vector<int64_t>{0, 50, 100, 150, 200});
  // Each sample is in the history with the fake times it was sent at.
  auto last = f.history.LastSample();
  REQUIRE(last);
  CHECK(f.clock.ElapsedMs(*last) >= 150);
}

TEST_CASE("sampler backs off after failures, doubling up to a second, and recovers at once") {
  // Samples 0-3 answer, 4-9 fail (a dead primary), then it answers again.
  auto n = std::make_shared<int>(0);
  Fixture f([n](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
    if (!IsSample(sql)) return {Row({"a", "b", "c", "d"}, {"151", "12", "0", "0"}), Millis(0)};
    const int i = (*n)++;
    if (i >= 4 && i <= 9) return {Status::Unavailable("connection refused"), Millis(0)};
    return Position("0-1-" + std::to_string(i));
  });
  auto times = f.RunFor(3760);
  // 0, 50, 100, 150 fine; the failure at 200 waits 100, then 200, 400, 800, 1000, 1000 ms;
  // the sample at 3700 answers, and the next comes one interval later.
  CHECK(times == std::vector<int64_t>{0, 50, 100, 150, 200, 300, 500, 900, 1700, 2700, 3700, 3750});
  CHECK(f.sink.failed.Get().size() == 6);
  CHECK(f.sink.failed.Get()[0] == "unavailable");
  CHECK(PositionSampler::Backoff(Millis(50), 0) == Millis(50));
  CHECK(PositionSampler::Backoff(Millis(50), 3) == Millis(400));
  CHECK(PositionSampler::Backoff(Millis(50), 9) == Millis(1000));
}

TEST_CASE("sampler reads the primary's load every 5 s and reports counter growth") {
  auto n = std::make_shared<int>(0);
  Fixture f([n](const std::string& sql, size_t i) -> FakeSqlConnection::Answer {
    if (IsSample(sql)) return Position("0-1-" + std::to_string(i));
    if (sql == kServerFlavorQuery) {
      return {Row({"VERSION()", "@@version_comment"}, {"10.11.19-MariaDB-log", "Debian 12"})};
    }
    // Buffer pool counters: 1000, 1600, then 200 (the server restarted).
    static const char* const reads[] = {"1000", "1600", "200"};
    const int k = std::min((*n)++, 2);
    return {Row({"a", "b", "c", "d"}, {"151", "12", reads[k], "7"}), Millis(1)};
  });
  auto times = f.RunFor(10'100, IsLoad);
  // The first sample is at 0; loads follow a successful sample once 5 s have passed.
  REQUIRE(times.size() == 3);
  CHECK(times[0] == 1);  // after the first sample, which took 1 ms
  CHECK(times[1] >= 5001);
  CHECK(times[1] <= 5052);
  const auto loads = f.sink.loads.Get();
  REQUIRE(loads.size() == 3);
  CHECK(loads[0].max_connections == 151u);
  CHECK(loads[0].threads_connected == 12u);
  CHECK_FALSE(loads[0].buffer_pool_read_requests_growth);  // first reading: no growth
  CHECK(loads[1].buffer_pool_read_requests_growth == 600u);
  CHECK(loads[2].buffer_pool_read_requests_growth == 200u);  // restart: from zero
  CHECK(loads[1].buffer_pool_reads_growth == 0u);
  // The primary's flavor was asked once, on the one connection, before the first sample.
  const auto flavors = f.sink.flavors.Get();
  REQUIRE(flavors.size() == 1);
  CHECK(flavors[0].kind == ServerFlavor::kMariaDB);
  CHECK(flavors[0].Describe() == "MariaDB 10.11.19-MariaDB-log (Debian 12)");
}

TEST_CASE("sampler stops for good on a server without @@gtid_binlog_pos") {
  Fixture f([](const std::string&, size_t) -> FakeSqlConnection::Answer {
    return {Status::ServerError("Unknown system variable 'gtid_binlog_pos'"), Millis(1), 1193};
  });
  f.clock.HoldAfter(Millis(1000));
  f.worker->Start();
  REQUIRE(f.conn->WaitFor([](const auto& sent) { return !sent.empty(); }));
  // A sampler that went on would send 20 more statements in this time (its waits are free).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  f.worker->Stop();
  size_t samples = 0;
  for (const auto& s : f.conn->sent()) samples += IsSample(s.sql);
  CHECK(samples == 1);
  CHECK(f.sink.failed.Get().empty());
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

TEST_CASE(
    "sampler asks the primary's flavor again after a failure (the next connection may differ)") {
  auto n = std::make_shared<int>(0);
  Fixture f([n](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
    if (sql == kServerFlavorQuery) {
      return {Row({"VERSION()", "@@version_comment"}, {"8.4.3", "MySQL Community Server - GPL"})};
    }
    if (!IsSample(sql)) return {Row({"a", "b", "c", "d"}, {"1", "1", "1", "1"})};
    // The third sample fails: the connection is gone.
    return (*n)++ == 2 ? FakeSqlConnection::Answer{Status::Unavailable("gone"), Millis(0)}
                       : Position("0-1-1");
  });
  auto asked = f.RunFor(1000, [](const std::string& s) { return s == kServerFlavorQuery; });
  // At the start, and after the failed sample at 100 (the next round, at 200).
  CHECK(asked == std::vector<int64_t>{0, 200});
  CHECK(f.sink.flavors.Get().size() == 2);
  CHECK(f.sink.flavors.Get()[0].kind == ServerFlavor::kMySQL);
}

}  // namespace
}  // namespace lagwatch
