#include "heartbeat/writer.h"

#include <doctest/doctest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "heartbeat/fake_primary.h"

namespace lagwatch {
namespace {

bool IsUpsert(const std::string& sql) { return sql.rfind("INSERT INTO", 0) == 0; }

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

WriterOptions WriterTestOptions() {
  WriterOptions options;
  options.heartbeat.interval_ms = 500;
  options.agent_id = 7;
  return options;
}

struct WriterFixture : FakePrimaryFixture<HeartbeatWriter, HeartbeatLog, RecordingWriterSink> {
  explicit WriterFixture(FakeSqlConnection::Script script)
      : FakePrimaryFixture(std::move(script), WriterTestOptions()) {}
  HeartbeatLog& log = record;
};

TEST_CASE("writer upserts every 500 ms on a fake clock, continuing from the seq on the primary") {
  WriterFixture f(Primary([](size_t) {
    return FakeSqlConnection::Answer{QueryResult{}, Millis(3)};
  }));
  f.RunFor(2100);
  CHECK(f.TimesOf(IsUpsert) == std::vector<int64_t>{0, 500, 1000, 1500, 2000});
  CHECK(f.sink.written.Get() == std::vector<uint64_t>{42, 43, 44, 45, 46});
  // Sent when the write left, acknowledged 3 ms later, on the writer's clock.
  auto rec = f.log.Find(43);
  REQUIRE(rec);
  CHECK(f.clock.ElapsedMs(rec->sent) == 500);
  REQUIRE(rec->acked);
  CHECK(f.clock.ElapsedMs(*rec->acked) == 503);
  CHECK(f.sink.states.Get().front().state == "up");
}

TEST_CASE("writer keeps a fixed rate: a slow write does not shift the writes after it") {
  WriterFixture f(Primary([](size_t i) {
    return FakeSqlConnection::Answer{QueryResult{}, Millis(i == 1 ? 400 : 2)};
  }));
  f.RunFor(1600);
  CHECK(f.TimesOf(IsUpsert) == std::vector<int64_t>{0, 500, 1000, 1500});
}

TEST_CASE("writer abandons a write at its interval's deadline and writes again at once") {
  WriterFixture f(Primary([](size_t i) {
    return FakeSqlConnection::Answer{QueryResult{}, Millis(i == 1 ? 10'000 : 2)};
  }));
  f.RunFor(1600);
  auto times = f.TimesOf(IsUpsert);
  // The second write hangs: abandoned at 1000 (its deadline, one interval after it was sent);
  // the third was due then and goes at once, the fourth keeps the original cadence.
  CHECK(times == std::vector<int64_t>{0, 500, 1000, 1500});
  CHECK(f.sink.failed.Get() == std::vector<std::string>{"timeout"});
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
  WriterFixture f(script);
  f.RunFor(3100);
  auto upserts = f.TimesOf(IsUpsert);
  auto asked = f.TimesOf([](const std::string& s) { return s == "SELECT @@read_only"; });
  // Refused at 500; asked at 1000, 1500 (still read-only) and 2000 (writable); written at 2500.
  CHECK(upserts == std::vector<int64_t>{0, 500, 2500, 3000});
  CHECK(asked == std::vector<int64_t>{1000, 1500, 2000});
  // Read-only is not a failure of the primary: no error counted, and the state says read_only.
  CHECK(f.sink.failed.Get().empty());
  bool saw_read_only = false;
  for (const auto& s : f.sink.states.Get()) saw_read_only |= s.read_only;
  CHECK(saw_read_only);
  CHECK_FALSE(f.sink.states.Get().back().read_only);
}

TEST_CASE("writer moves to a new primary at once, checks its table and keeps its seqs growing") {
  WriterFixture f(Primary([](size_t) {
    return FakeSqlConnection::Answer{QueryResult{}, Millis(2)};
  }));
  f.clock.HoldAfter(Millis(1100));
  f.worker->Start();
  REQUIRE(f.clock.WaitUntilHeld());  // written at 0, 500, 1000; waiting for 1500
  MysqlTarget next;
  next.endpoint = {"10.0.0.2", 3306};
  next.label = "primary 10.0.0.2:3306";
  f.worker->SetPrimary(next);
  // The round's report comes after its write: wait for it, in real time.
  for (int i = 0; i < 1000 && f.sink.states.Get().back().id != "10.0.0.2:3306"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  f.worker->Stop();
  // The wait was cut short: the new primary's own seq is read again (41 there too) and the next
  // write goes out at once, with the next seq, not 42 again.
  CHECK(f.TimesOf(IsUpsert) == std::vector<int64_t>{0, 500, 1000, 1100});
  CHECK(f.TimesOf([](const std::string& s) { return s.rfind("SELECT seq", 0) == 0; }) ==
        std::vector<int64_t>{0, 1100});
  CHECK(f.sink.written.Get() == std::vector<uint64_t>{42, 43, 44, 45});
  CHECK(f.sink.states.Get().front().id == "127.0.0.1:3306");
  CHECK(f.sink.states.Get().back().id == "10.0.0.2:3306");
}

}  // namespace
}  // namespace lagwatch
