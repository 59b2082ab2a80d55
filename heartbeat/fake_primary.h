// Test doubles for the writer's and the sampler's unit tests: sinks that record every report
// (heartbeat/sink.h) and a fixture that runs a worker on a FakeClock against a
// FakeSqlConnection. Thread-safe: the worker under test reports while the test reads.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "base/fake_clock.h"
#include "base/fake_sql_conn.h"
#include "heartbeat/sink.h"

namespace lagwatch {

// A list one thread appends to while another reads copies of it.
template <typename T>
class Recorded {
 public:
  void Add(T v) {
    std::lock_guard lock(mu_);
    items_.push_back(std::move(v));
  }
  std::vector<T> Get() const {
    std::lock_guard lock(mu_);
    return items_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<T> items_;
};

class RecordingWriterSink final : public WriterSink {
 public:
  void HeartbeatWritten(uint64_t seq) override { written.Add(seq); }
  void HeartbeatFailed(const Status& why) override { failed.Add(why.reason()); }
  void PrimaryState(const PrimarySnapshot& p, std::optional<Micros>) override { states.Add(p); }

  Recorded<uint64_t> written;
  Recorded<std::string> failed;
  Recorded<PrimarySnapshot> states;
};

class RecordingSamplerSink final : public SamplerSink {
 public:
  void PositionSampled() override { sampled.Add(true); }
  void SampleFailed(std::string_view reason, const Status&) override {
    failed.Add(std::string(reason));
  }
  void PrimaryLoadRead(const PrimaryLoad& load) override { loads.Add(load); }
  void PrimaryFlavorRead(const ServerFlavor& flavor, PositionsKind positions) override {
    flavors.Add(flavor);
    kinds.Add(positions);
  }

  Recorded<bool> sampled;
  Recorded<std::string> failed;
  Recorded<PrimaryLoad> loads;
  Recorded<ServerFlavor> flavors;
  Recorded<PositionsKind> kinds;
};

// A worker (HeartbeatWriter or PositionSampler) with its record (HeartbeatLog or PositionHistory)
// and a recording sink, talking to a scripted fake primary on a fake clock.
template <typename Worker, typename Record, typename Sink>
struct FakePrimaryFixture {
  FakeClock clock;
  Record record;
  Sink sink;
  std::shared_ptr<FakeSqlConnection> conn;
  std::unique_ptr<Worker> worker;

  template <typename Options>
  FakePrimaryFixture(FakeSqlConnection::Script script, Options options)
      : conn(std::make_shared<FakeSqlConnection>(&clock, std::move(script))) {
    options.primary.endpoint = {"127.0.0.1", 3306};
    options.primary.label = "primary 127.0.0.1:3306";
    worker = std::make_unique<Worker>(options, &record, &sink, clock, FakeConnector(conn));
  }
  // Runs the worker through the first `ms` of fake time, then stops it.
  void RunFor(int ms) {
    clock.HoldAfter(Millis(ms));
    worker->Start();
    REQUIRE(clock.WaitUntilHeld());
    worker->Stop();
  }
  // The fake times (ms since the clock's start) of the statements sent that match `pred`.
  template <typename Pred>
  std::vector<int64_t> TimesOf(Pred pred) const {
    std::vector<int64_t> times;
    for (const auto& s : conn->sent()) {
      if (pred(s.sql)) times.push_back(clock.ElapsedMs(s.at));
    }
    return times;
  }
};

}  // namespace lagwatch
