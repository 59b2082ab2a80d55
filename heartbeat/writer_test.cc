#include "heartbeat/writer.h"

#include <doctest/doctest.h>

#include <mutex>
#include <vector>

#include "base/fake_clock.h"
#include "base/fake_sql_conn.h"

namespace lagwatch {
namespace {

// Records what the writer reports.
class RecordingSink final : public WriterSink {
 public:
  void HeartbeatWritten(uint64_t seq) override {
    std::lock_guard lock(mu_);
    written.push_back(seq);
  }
  void HeartbeatFailed(std::string_view reason) override {
    std::lock_guard lock(mu_);
    failed.emplace_back(reason);
  }
  void PrimaryState(const PrimarySnapshot& p, std::optional<Micros>) override {
    std::lock_guard lock(mu_);
    states.push_back(p);
  }
  std::vector<uint64_t> Written() {
    std::lock_guard lock(mu_);
    return written;
  }
  std::vector<std::string> Failed() {
    std::lock_guard lock(mu_);
    return failed;
  }
  std::vector<PrimarySnapshot> States() {
    std::lock_guard lock(mu_);
    return states;
  }

 private:
  std::mutex mu_;
  std::vector<uint64_t> written;
  std::vector<std::string> failed;
  std::vector<PrimarySnapshot> states;
};

bool IsUpsert(const std::string& sql) { return sql.rfind("INSERT INTO", 0) == 0; }

// The fake times (ms since the clock's start) at which statements matching `pred` were sent.
template <typename Pred>
std::vector<int64_t> TimesOf(const FakeClock& clock,
                             const std::vector<FakeSqlConnection::Sent>& sent, Pred pred) {
  std::vector<int64_t> out;
  for (const auto& s : sent) {
    if (pred(s.sql)) out.push_back(clock.ElapsedMs(s.at));
  }
  return out;
}

// A primary that has our row at seq 41 and answers every write after `write_latency(i)` (i: the
// 0-based number of the write).
FakeSqlConnection::Script Primary(std::function<FakeSqlConnection::Answer(size_t)> write) {
  auto writes = std::make_shared<size_t>(0);
  return [write, writes](const std::string& sql, size_t) -> FakeSqlConnection::Answer {
    if (sql.rfind("SELECT seq", 0) == 0) return {Row({"seq"}, {"41"})};
    if (IsUpsert(sql)) return write((*writes)++);
    return {};
  };
}

struct Fixture {
  FakeClock clock;
  HeartbeatLog log;
  RecordingSink sink;
  std::shared_ptr<FakeSqlConnection> conn;
  std::unique_ptr<HeartbeatWriter> writer;

  explicit Fixture(FakeSqlConnection::Script script)
      : conn(std::make_shared<FakeSqlConnection>(&clock, std::move(script))) {
    WriterOptions options;
    options.primary.endpoint = {"127.0.0.1", 3306};
    options.primary.label = "primary test";
    options.heartbeat.interval_ms = 500;
    options.agent_id = 7;
    writer = std::make_unique<HeartbeatWriter>(options, &log, &sink, clock, FakeConnector(conn));
  }
  // Runs the writer through the first `ms` of fake time, then stops it.
  void RunFor(int ms) {
    clock.HoldAfter(Millis(ms));
    writer->Start();
    REQUIRE(clock.WaitUntilHeld());
    writer->Stop();
  }
};

TEST_CASE("writer upserts every 500 ms on a fake clock, continuing from the seq on the primary") {
  Fixture f(Primary([](size_t) { return FakeSqlConnection::Answer{QueryResult{}, Millis(3)}; }));
  f.RunFor(2100);
  auto sent = f.conn->sent();
  CHECK(TimesOf(f.clock, sent, IsUpsert) == std::vector<int64_t>{0, 500, 1000, 1500, 2000});
  CHECK(f.sink.Written() == std::vector<uint64_t>{42, 43, 44, 45, 46});
  // Sent when the write left, acknowledged 3 ms later, on the writer's clock.
  auto rec = f.log.Find(43);
  REQUIRE(rec);
  CHECK(f.clock.ElapsedMs(rec->sent) == 500);
  REQUIRE(rec->acked);
  CHECK(f.clock.ElapsedMs(*rec->acked) == 503);
  CHECK(f.sink.States().front().state == "up");
}

TEST_CASE("writer keeps a fixed rate: a slow write does not shift the writes after it") {
  Fixture f(Primary([](size_t i) {
    return FakeSqlConnection::Answer{QueryResult{}, Millis(i == 1 ? 400 : 2)};
  }));
  f.RunFor(1600);
  CHECK(TimesOf(f.clock, f.conn->sent(), IsUpsert) == std::vector<int64_t>{0, 500, 1000, 1500});
}

TEST_CASE("writer abandons a write at its interval's deadline and writes again at once") {
  Fixture f(Primary([](size_t i) {
    return FakeSqlConnection::Answer{QueryResult{}, Millis(i == 1 ? 10'000 : 2)};
  }));
  f.RunFor(1600);
  auto times = TimesOf(f.clock, f.conn->sent(), IsUpsert);
  // The second write hangs: abandoned at 1000 (its deadline, one interval after it was sent);
  // the third was due then and goes at once, the fourth keeps the original cadence.
  CHECK(times == std::vector<int64_t>{0, 500, 1000, 1500});
  CHECK(f.sink.Failed() == std::vector<std::string>{"timeout"});
  auto rec = f.log.Find(43);
  REQUIRE(rec);
  CHECK_FALSE(rec->acked);
}

TEST_CASE("writer pauses on a read-only primary, asks every interval, and resumes when writable") {
  auto asks = std::make_shared<int>(0);
  auto writes = std::make_shared<int>(0);
  FakeSqlConnection::Script script = [asks, writes](const std::string& sql,
                                                    size_t) -> FakeSqlConnection::Answer {
    if (sql.rfind("SELECT seq", 0) == 0) return {Row({"seq"}, {"41"})};
    if (sql == "SELECT @@read_only") {
      return {Row({"@@read_only"}, {++*asks < 3 ? "1" : "0"})};
    }
    if (IsUpsert(sql) && (*writes)++ == 1) {
      return {Status::ServerError("The MariaDB server is running with the --read-only option"),
              Millis(1), 1290};
    }
    return {};
  };
  Fixture f(script);
  f.RunFor(3100);
  auto sent = f.conn->sent();
  auto upserts = TimesOf(f.clock, sent, IsUpsert);
  auto asked =
      TimesOf(f.clock, sent, [](const std::string& s) { return s == "SELECT @@read_only"; });
  // Refused at 500; asked at 1000, 1500 (still read-only) and 2000 (writable); written at 2500.
  CHECK(upserts == std::vector<int64_t>{0, 500, 2500, 3000});
  CHECK(asked == std::vector<int64_t>{1000, 1500, 2000});
  // Read-only is not a failure of the primary: no error counted, and the state says read_only.
  CHECK(f.sink.Failed().empty());
  bool saw_read_only = false;
  for (const auto& s : f.sink.States()) saw_read_only |= s.read_only;
  CHECK(saw_read_only);
  CHECK_FALSE(f.sink.States().back().read_only);
}

}  // namespace
}  // namespace lagwatch
