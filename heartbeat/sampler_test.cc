#include "heartbeat/sampler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "heartbeat/fake_primary.h"

namespace lagwatch {
namespace {

// A MariaDB GTID sample: the position and @@read_only in one statement.
bool IsSample(const std::string& sql) { return sql == "SELECT @@gtid_binlog_pos, @@read_only"; }
bool IsLoad(const std::string& sql) { return sql.rfind("SELECT @@max_connections", 0) == 0; }
// What the sampler asks on every new connection besides the flavor.
bool IsServerId(const std::string& sql) { return sql == "SELECT @@server_id"; }

SamplerOptions Options() {
  SamplerOptions options;
  options.interval_ms = 50;
  return options;
}

// `script`, but @@read_only answers `*read_only`: asked alone (after coordinates) at once, and
// asked with a GTID position as that statement's second column (the script's row gives the
// position only).
FakeSqlConnection::Script WithReadOnly(FakeSqlConnection::Script script,
                                       std::shared_ptr<std::atomic<int>> read_only) {
  return [script = std::move(script), read_only](const std::string& sql, size_t i) {
    if (sql == "SELECT @@read_only") {
      return FakeSqlConnection::Answer{Row({"@@read_only"}, {std::to_string(read_only->load())}),
                                       Millis(0)};
    }
    FakeSqlConnection::Answer a = script(sql, i);
    const std::string with = ", @@read_only";
    if (sql.size() > with.size() && sql.ends_with(with) && a.result.ok() &&
        a.result->rows.size() == 1 && a.result->rows[0].size() == 1) {
      a.result->columns.push_back("@@read_only");
      a.result->rows[0].push_back(std::to_string(read_only->load()));
    }
    return a;
  };
}

struct Fixture : FakePrimaryFixture<PositionSampler, PositionHistory, RecordingSamplerSink> {
  explicit Fixture(FakeSqlConnection::Script script, std::shared_ptr<std::atomic<int>> read_only =
                                                         std::make_shared<std::atomic<int>>(0))
      : FakePrimaryFixture(WithReadOnly(std::move(script), read_only), Options()) {}
  std::vector<int64_t> RunFor(int ms, bool (*pred)(const std::string&) = IsSample) {
    FakePrimaryFixture::RunFor(ms);
    return TimesOf(pred);
  }
  PositionHistory& history = record;
};

FakeSqlConnection::Answer GtidSample(const std::string& gtid, Millis latency = Millis(1)) {
  return {Row({"@@gtid_binlog_pos"}, {gtid}), latency};
}

TEST_CASE("sampler reads the primary's position every 50 ms on a fake clock") {
  Fixture f([](const std::string& sql, size_t i) {
    return IsSample(sql) ? GtidSample("0-1-" + std::to_string(100 + i))
                         : FakeSqlConnection::Answer{};
  });
  auto times = f.RunFor(220);
  CHECK(times == std::vector<int64_t>{0, 50, 100, 150, 200});
  // Each sample is in the history with the fake times it was sent at.
  auto last = f.history.LastSample();
  REQUIRE(last);
  CHECK(f.clock.ElapsedMs(*last) >= 150);
}

TEST_CASE("sampler asks @@read_only with each position: the history knows the last writable one") {
  auto read_only = std::make_shared<std::atomic<int>>(0);
  auto samples = std::make_shared<int>(0);
  // The samples at 0 and 50 ms find the primary writable; from the one at 100 ms on, read-only.
  Fixture f(
      [read_only, samples](const std::string& sql, size_t) {
        if (!IsSample(sql)) return FakeSqlConnection::Answer{};
        if ((*samples)++ == 2) *read_only = 1;
        return GtidSample("0-1-7");
      },
      read_only);
  std::atomic<int> told{0};
  f.worker->OnReadOnly([&] { ++told; });
  f.RunFor(180);
  const auto ro = f.history.ReadOnlyNow();
  REQUIRE(ro.has_value());
  REQUIRE(ro->last_writable.has_value());
  CHECK(f.clock.ElapsedMs(*ro->last_writable) == 50);
  CHECK(told == 2);  // the samples at 100 and 150 ms
  // Asked with each position, in the same statement: no question of its own.
  const auto positions = f.TimesOf(IsSample);
  const auto asked = f.TimesOf([](const std::string& sql) { return sql == "SELECT @@read_only"; });
  CHECK(positions.size() == 4);
  CHECK(asked.empty());
  // Writable again: no longer read-only.
  f.history.NoteWritable(f.clock.Now(), true);
  CHECK_FALSE(f.history.ReadOnlyNow().has_value());
}

TEST_CASE("sampler: a primary that stops answering at the @@read_only question is awaited") {
  // Binary log coordinates come from a statement of their own, and the question follows it. The
  // position at 0 ms answers at once; the question after it does not answer until released (a
  // primary stopped right after the position).
  std::mutex m;
  std::condition_variable cv;
  bool asked = false, released = false;
  SamplerOptions options = Options();
  options.positions = PositionsKind::kBinlog;
  FakePrimaryFixture<PositionSampler, PositionHistory, RecordingSamplerSink> f(
      [&](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
        if (sql == "SELECT @@read_only") {
          std::unique_lock lock(m);
          asked = true;
          cv.notify_all();
          cv.wait(lock, [&] { return released; });
          return {Row({"@@read_only"}, {"0"})};
        }
        if (sql == "SHOW MASTER STATUS") {
          return {Row({"File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"},
                      {"mariadb-bin.000001", "1000", "", ""})};
        }
        return FakeSqlConnection::Answer{};
      },
      options);
  f.worker->Start();
  {
    std::unique_lock lock(m);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return asked; }));
  }
  REQUIRE(f.record.LastSample().has_value());
  // 100 ms on, still unanswered: waited for since it was asked, as a sample would be, so the
  // primary is not taken as answering. A sender that still reads as runnable has awaited nothing
  // yet (AnswerAwaited), and the sampler's thread may, for a moment after it said it was asked,
  // before it sleeps in the wait (under TSan beside the ASan suite it did, twice in clean-clone
  // runs): polled in real time until it sleeps.
  std::optional<Micros> waited;
  for (int i = 0; i < 1000; ++i) {
    waited = f.record.AnswerAwaited(f.clock.Now() + Millis(100));
    if (waited && *waited >= Millis(90)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  {
    std::lock_guard lock(m);
    released = true;
  }
  cv.notify_all();
  f.worker->Stop();
  REQUIRE(waited.has_value());
  CHECK(*waited >= Millis(90));
  // Answered: nothing is awaited any more.
  CHECK_FALSE(f.record.AnswerAwaited(f.clock.Now()).has_value());
}

TEST_CASE("sampler: an @@read_only that is not 0 or 1 is counted, and the position still stands") {
  auto read_only = std::make_shared<std::atomic<int>>(2);
  Fixture f(
      [](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
        if (IsLoad(sql)) return {Row({"a", "b", "c", "d"}, {"1", "1", "1", "1"})};
        return IsSample(sql) ? GtidSample("0-1-7") : FakeSqlConnection::Answer{};
      },
      read_only);
  f.RunFor(80);  // samples at 0 and 50 ms
  CHECK(f.history.LastSample().has_value());
  CHECK_FALSE(f.history.ReadOnlyNow().has_value());
  const auto failed = f.sink.failed.Get();
  CHECK(std::count(failed.begin(), failed.end(), "bad_data") == 2);
}

TEST_CASE("sampler backs off after failures, doubling up to a second, and recovers at once") {
  // Samples 0-3 answer, 4-9 fail (a dead primary), then it answers again.
  auto n = std::make_shared<int>(0);
  Fixture f([n](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
    if (!IsSample(sql)) return {Row({"a", "b", "c", "d"}, {"151", "12", "0", "0"}), Millis(0)};
    const int i = (*n)++;
    if (i >= 4 && i <= 9) return {Status::Unavailable("connection refused"), Millis(0)};
    return GtidSample("0-1-" + std::to_string(i));
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
    if (IsSample(sql)) return GtidSample("0-1-" + std::to_string(i));
    if (sql == kServerFlavorQuery) {
      return {Row({"VERSION()", "@@version_comment"}, {"10.11.19-MariaDB-log", "Debian 12"})};
    }
    if (IsServerId(sql)) return {Row({"@@server_id"}, {"1"})};
    // Buffer pool counters: 1000, 1600, then 200 (the server restarted).
    static const char* const reads[] = {"1000", "1600", "200"};
    const int k = std::min((*n)++, 2);
    return {Row({"a", "b", "c", "d"}, {"151", "12", reads[k], "7"}), Millis(1)};
  });
  auto times = f.RunFor(10'100, IsLoad);
  // The first sample is at 0; loads follow a successful sample once 5 s have passed.
  REQUIRE(times.size() == 3);
  CHECK(times[0] == 1);  // after the first sample, which took 1 ms (asking took none)
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

TEST_CASE("auto on a server with neither GTIDs nor a binary log status: coordinates, then none") {
  // Every statement is refused as unknown (error 1193 stands in for "the server lacks it").
  Fixture f([](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
    if (IsLoad(sql)) return {Row({"a", "b", "c", "d"}, {"1", "1", "1", "1"})};
    return {Status::ServerError("Unknown system variable"), Millis(1), 1193};
  });
  f.RunFor(12'000);
  size_t gtid = 0, coords = 0;
  for (const auto& s : f.conn->sent()) {
    gtid += IsSample(s.sql);
    coords += s.sql == "SHOW MASTER STATUS";  // an unknown server gets the oldest statement
  }
  // Each kind is tried once on the connection, then given up: no sample every 50 ms.
  CHECK(gtid == 1);
  CHECK(coords == 1);
  CHECK(f.sink.failed.Get().empty());
  CHECK(f.sink.kinds.Get() == std::vector<PositionsKind>{PositionsKind::kMariaDbGtid,
                                                         PositionsKind::kBinlog,
                                                         PositionsKind::kNone});
  CHECK(f.history.kind() == PositionsKind::kNone);
  // The primary's load is still read, every 5 s.
  CHECK(f.TimesOf(IsLoad).size() >= 2);
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
      return {Row({"VERSION()", "@@version_comment"}, {"10.6.16-MariaDB", "MariaDB Server"})};
    }
    if (!IsSample(sql)) return {Row({"a", "b", "c", "d"}, {"1", "1", "1", "1"})};
    // The third sample fails: the connection is gone.
    return (*n)++ == 2 ? FakeSqlConnection::Answer{Status::Unavailable("gone"), Millis(0)}
                       : GtidSample("0-1-1");
  });
  auto asked = f.RunFor(1000, [](const std::string& s) { return s == kServerFlavorQuery; });
  // At the start, and after the failed sample at 100 (the next round, at 200).
  CHECK(asked == std::vector<int64_t>{0, 200});
  CHECK(f.sink.flavors.Get().size() == 2);
  CHECK(f.sink.flavors.Get()[0].kind == ServerFlavor::kMariaDB);
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

constexpr char kUuid[] = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

FakeSqlConnection::Answer MySql84() {
  return {Row({"VERSION()", "@@version_comment"}, {"8.4.3", "MySQL Community Server - GPL"})};
}

// SHOW BINARY LOG STATUS as MySQL 8.4 prints it (columns from
// https://dev.mysql.com/doc/refman/8.4/en/show-binary-log-status.html).
FakeSqlConnection::Answer BinaryLogStatus(const std::string& file, uint64_t pos) {
  return {Row({"File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"},
              {file, std::to_string(pos), "", "", ""})};
}

// A MySQL 8.4 primary with server id 7 and `gtid_mode`, answering the statement `sample` with
// answer(n) the n-th time; the load query gets a fixed row.
FakeSqlConnection::Script MySqlPrimary(std::string gtid_mode, std::string sample,
                                       std::function<FakeSqlConnection::Answer(int)> answer) {
  auto n = std::make_shared<int>(0);
  return [=](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
    if (sql == kServerFlavorQuery) return MySql84();
    if (IsServerId(sql)) return {Row({"@@server_id"}, {"7"})};
    if (sql == "SELECT @@GLOBAL.gtid_mode") return {Row({"@@GLOBAL.gtid_mode"}, {gtid_mode})};
    if (sql == sample) return answer((*n)++);
    return {Row({"a", "b", "c", "d"}, {"1", "1", "1", "1"})};
  };
}

TEST_CASE("auto on MySQL with gtid_mode ON samples @@GLOBAL.gtid_executed as GTID sets") {
  Fixture f(MySqlPrimary("ON", "SELECT @@GLOBAL.gtid_executed, @@read_only", [](int n) {
    return FakeSqlConnection::Answer{
        Row({"@@GLOBAL.gtid_executed"}, {std::string(kUuid) + ":1-" + std::to_string(100 + n)})};
  }));
  f.RunFor(120);
  CHECK(f.history.kind() == PositionsKind::kMysqlGtid);
  CHECK(f.history.primary_server_id() == 7u);
  CHECK(f.sink.kinds.Get() == std::vector<PositionsKind>{PositionsKind::kMysqlGtid});
  // Samples 100, 101 and 102 were taken at 0, 50 and 100 ms.
  const Position caught_up = GtidSet::Parse(std::string(kUuid) + ":1-102").value();
  CHECK(f.clock.ElapsedMs(*f.history.Locate(caught_up).fresh_at) == 100);
  const Position behind = GtidSet::Parse(std::string(kUuid) + ":1-100").value();
  auto b = f.history.Locate(behind);
  CHECK(f.clock.ElapsedMs(*b.fresh_at) == 0);
  REQUIRE(b.missing_since);
  CHECK(f.clock.ElapsedMs(*b.missing_since) == 50);
}

TEST_CASE("auto on MySQL with gtid_mode OFF samples SHOW BINARY LOG STATUS coordinates") {
  Fixture f(MySqlPrimary("OFF", "SHOW BINARY LOG STATUS", [](int n) {
    return BinaryLogStatus("binlog.000003", 1000 + static_cast<uint64_t>(n));
  }));
  f.RunFor(120);
  CHECK(f.history.kind() == PositionsKind::kBinlog);
  CHECK(f.sink.failed.Get().empty());
  const Position at_1001 = ParseBinlogCoords("binlog.000003", 1001).value();
  CHECK(f.clock.ElapsedMs(*f.history.Locate(at_1001).fresh_at) == 50);
  // Coordinates of another binary log say nothing.
  const Position other = ParseBinlogCoords("relay.000001", 99999).value();
  CHECK(f.history.Locate(other).incomparable);
}

TEST_CASE("positions binlog without the privilege: an error naming the grant, then none") {
  SamplerOptions options = Options();
  options.positions = PositionsKind::kBinlog;
  FakePrimaryFixture<PositionSampler, PositionHistory, RecordingSamplerSink> f(
      [](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
        if (sql == kServerFlavorQuery) {
          return {Row({"VERSION()", "@@version_comment"}, {"10.11.6-MariaDB", "Debian 12"})};
        }
        if (sql == "SHOW BINLOG STATUS") {
          return {Status::ServerError("Access denied; you need the BINLOG MONITOR privilege"),
                  Millis(1), 1227};
        }
        return {Row({"a", "b", "c", "d"}, {"1", "1", "1", "1"})};
      },
      options);
  f.RunFor(500);
  size_t asked = 0;
  for (const auto& s : f.conn->sent()) asked += s.sql == "SHOW BINLOG STATUS";
  CHECK(asked == 1);
  CHECK(f.record.kind() == PositionsKind::kNone);
  CHECK(f.sink.kinds.Get() ==
        std::vector<PositionsKind>{PositionsKind::kBinlog, PositionsKind::kNone});
}

TEST_CASE("a primary position that goes backwards is counted and starts a new history") {
  // 0-1-50, 0-1-51, then 0-1-3 (the primary was restored), then 0-1-4.
  const char* const seqs[] = {"0-1-50", "0-1-51", "0-1-3", "0-1-4"};
  auto n = std::make_shared<int>(0);
  Fixture f([&seqs, n](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
    if (IsSample(sql)) return GtidSample(seqs[std::min((*n)++, 3)]);
    if (IsLoad(sql)) return {Row({"a", "b", "c", "d"}, {"1", "1", "1", "1"})};
    return {};
  });
  f.RunFor(170);
  CHECK(f.sink.failed.Get() == std::vector<std::string>{"position_backwards"});
  // Only the samples since the restore (0-1-3 at 100 ms, 0-1-4 at 150 ms) are compared.
  auto b = f.history.Locate(GtidPos::Parse("0-1-51").value());
  CHECK(f.clock.ElapsedMs(*b.fresh_at) == 150);
  auto behind = f.history.Locate(GtidPos::Parse("0-1-2").value());
  CHECK_FALSE(behind.fresh_at);
  CHECK(f.clock.ElapsedMs(*behind.missing_since) == 101);  // 0-1-3's answer came at 101 ms
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

TEST_CASE("auto's choice: MariaDB GTID on MariaDB, GTID sets only with gtid_mode ON on MySQL") {
  FakeClock clock;
  auto choose = [&](const ServerFlavor& flavor, FakeSqlConnection::Answer gtid_mode,
                    std::optional<PositionsKind> setting = std::nullopt) {
    FakeSqlConnection conn(&clock, [&](const std::string&, size_t) { return gtid_mode; });
    return ChoosePositionsKind(conn, flavor, setting, clock.Now() + Millis(100));
  };
  const ServerFlavor mysql = ParseServerFlavor("8.0.36", "MySQL Community Server - GPL");
  const ServerFlavor maria = ParseServerFlavor("10.11.6-MariaDB", "Debian 12");
  auto mode = [](const char* v) {
    return FakeSqlConnection::Answer{Row({"@@GLOBAL.gtid_mode"}, {v})};
  };
  CHECK(choose(maria, mode("ON")) == PositionsKind::kMariaDbGtid);
  CHECK(choose(mysql, mode("ON")) == PositionsKind::kMysqlGtid);
  // The values of gtid_mode
  // (https://dev.mysql.com/doc/refman/8.4/en/replication-options-gtids.html): ON_PERMISSIVE still
  // lets anonymous transactions through, which no GTID set covers.
  for (const char* v : {"OFF", "OFF_PERMISSIVE", "ON_PERMISSIVE"}) {
    CAPTURE(v);
    CHECK(choose(mysql, mode(v)) == PositionsKind::kBinlog);
  }
  // A server too old to have gtid_mode (MySQL 5.5) refuses the variable: coordinates.
  CHECK(choose(mysql, {Status::ServerError("Unknown system variable 'gtid_mode'"), Millis(0),
                       1193}) == PositionsKind::kBinlog);
  // The connection failed while asking: no choice yet.
  CHECK_FALSE(choose(mysql, {Status::Unavailable("gone"), Millis(0)}));
  // A setting is taken as it is, without asking.
  CHECK(choose(mysql, {Status::Unavailable("gone"), Millis(0)}, PositionsKind::kNone) ==
        PositionsKind::kNone);
}

TEST_CASE("sampler moves to a new primary at once, asks what it is, and samples into the reset") {
  Fixture f([](const std::string& sql, size_t i) {
    return IsSample(sql) ? GtidSample("0-1-" + std::to_string(100 + i))
                         : FakeSqlConnection::Answer{};
  });
  f.clock.HoldAfter(Millis(120));
  f.worker->Start();
  REQUIRE(f.clock.WaitUntilHeld());  // sampled at 0, 50, 100; waiting for 150
  const uint64_t before = f.history.generation();
  f.history.Reset();  // as the agent does before it moves the sampler
  CHECK(f.history.generation() == before + 1);
  CHECK_FALSE(f.history.LastSample().has_value());
  MysqlTarget next;
  next.endpoint = {"10.0.0.2", 3306};
  f.worker->SetPrimary(next);
  // The sample is added after its answer: wait for it, in real time.
  for (int i = 0; i < 1000 && !f.history.LastSample(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  f.worker->Stop();
  // Asked again which server it is (its flavor and id) and sampled at once.
  CHECK(f.TimesOf(IsServerId) == std::vector<int64_t>{0, 120});
  CHECK(f.TimesOf(IsSample) == std::vector<int64_t>{0, 50, 100, 120});
  auto last = f.history.LastSample();
  REQUIRE(last);
  CHECK(f.clock.ElapsedMs(*last) == 120);
  CHECK(f.history.kind() == PositionsKind::kMariaDbGtid);
}

TEST_CASE("sampler: every 5 ms while the stream it checks catches up, for at most a second") {
  Fixture f([](const std::string& sql, size_t) {
    return IsSample(sql) ? GtidSample("0-1-100") : FakeSqlConnection::Answer{};
  });
  StreamHistory stream;
  f.worker->CheckStream(&stream);
  // Begun at 0 and never proven caught up: no sample is delivered after the start, and no
  // heartbeat event comes.
  stream.Begin(*GtidPos::Parse("0-1-100"), f.clock.Now());
  auto times = f.RunFor(1120);
  std::vector<int64_t> want;
  for (int64_t t = 0; t <= 1000; t += 5) want.push_back(t);
  want.insert(want.end(), {1050, 1100});
  CHECK(times == want);
}

TEST_CASE("sampler: back to its interval once a sample proves the stream caught up") {
  StreamHistory stream;
  auto token = std::make_shared<uint64_t>(0);
  auto n = std::make_shared<int>(0);
  std::shared_ptr<FakeClock*> clock = std::make_shared<FakeClock*>(nullptr);
  Fixture f([&stream, clock, token, n](const std::string& sql, size_t) {
    if (!IsSample(sql)) return FakeSqlConnection::Answer{};
    if ((*n)++ < 4) return GtidSample("0-1-100");
    // The fifth sample (at 20 ms) reads a transaction the stream delivered as it was sent.
    stream.Transaction(*token, *GtidPos::Parse("0-1-101"), (*clock)->Now());
    return GtidSample("0-1-101");
  });
  *clock = &f.clock;
  *token = stream.Begin(*GtidPos::Parse("0-1-100"), f.clock.Now());
  f.worker->CheckStream(&stream);
  auto times = f.RunFor(150);
  CHECK(times == std::vector<int64_t>{0, 5, 10, 15, 20, 70, 120});
  CHECK_FALSE(stream.CatchingUpSince().has_value());
}

TEST_CASE("sampler: Urge samples at once, and the samples planned still come") {
  Fixture f([](const std::string& sql, size_t) {
    return IsSample(sql) ? GtidSample("0-1-100") : FakeSqlConnection::Answer{};
  });
  f.clock.HoldAfter(Millis(120));
  f.worker->Start();
  REQUIRE(f.clock.WaitUntilHeld());  // sampled at 0, 50, 100; waiting for 150
  f.clock.HoldAfter(Millis(200));
  f.worker->Urge();
  // Sampled at 120, and still at 150 and 200: an urged sample takes no slot.
  for (int i = 0; i < 1000 && f.TimesOf(IsSample).size() < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  f.worker->Stop();
  CHECK(f.TimesOf(IsSample) == std::vector<int64_t>{0, 50, 100, 120, 150, 200});
}

}  // namespace
}  // namespace lagwatch
