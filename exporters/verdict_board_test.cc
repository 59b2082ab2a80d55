#include "exporters/verdict_board.h"

#include <thread>

#include <doctest/doctest.h>

#include "base/fake_clock.h"

namespace lagwatch {
namespace {

ReplicaSnapshot Record(const std::string& id, const std::string& state, bool healthy,
                       int64_t delay_ms, int weight = 1) {
  ReplicaSnapshot r;
  r.id = id;
  r.state = state;
  r.healthy = healthy;
  r.delay_ms = delay_ms;
  r.weight = weight;
  r.tier = "tier1";
  r.max_delay_ms = 200;
  return r;
}

TEST_CASE("the board moves its version when an answer can change, not when the delay moves") {
  FakeClock clock;
  VerdictBoard board(clock);
  board.SetServers({"a:1", "b:2"});
  board.SetPrimary("a:1");
  uint64_t v = board.version().number;
  board.Put(Record("b:2", "ok", true, 10));
  CHECK(board.version().number == ++v);  // a first record
  board.Put(Record("b:2", "ok", true, 40));
  CHECK(board.version().number == v);                 // the same verdict, another delay
  CHECK(board.Facts("b:2")->record->delay_ms == 40);  // ... still the latest record
  clock.Advance(Millis(5));
  board.Put(Record("b:2", "lagging", false, 400));
  CHECK(board.version().number == ++v);
  CHECK(board.version().changed_at == clock.Now());
  board.Put(Record("b:2", "lagging", false, 400, 0));
  CHECK(board.version().number == ++v);  // a weight
  board.SetPrimary("b:2");
  CHECK(board.version().number == ++v);
  board.SetPrimary("b:2");
  CHECK(board.version().number == v);
  board.ClearRecords();
  CHECK(board.version().number == ++v);
  CHECK_FALSE(board.Facts("b:2")->record);
  CHECK(board.Facts("b:2")->is_primary);
}

TEST_CASE("the board knows only the servers it was given") {
  VerdictBoard board;
  board.SetServers({"a:1", "b:2"});
  board.Put(Record("c:3", "ok", true, 1));
  CHECK_FALSE(board.Facts("c:3"));
  CHECK(board.All().size() == 2);
  board.Put(Record("b:2", "ok", true, 1));
  const uint64_t v = board.version().number;
  board.SetServers({"a:1", "c:3"});
  CHECK(board.version().number == v + 1);
  CHECK_FALSE(board.Facts("b:2"));
  REQUIRE(board.Facts("c:3"));
  CHECK_FALSE(board.Facts("c:3")->record);
  board.SetServers({"c:3", "a:1"});
  CHECK(board.version().number == v + 1);
}

TEST_CASE("a waiter wakes at a change, at its deadline, or at a stop") {
  VerdictBoard board;
  board.SetServers({"a:1"});
  const uint64_t v = board.version().number;
  std::stop_source stop;
  std::thread writer([&] {
    std::this_thread::sleep_for(Millis(20));
    board.Put(Record("a:1", "ok", true, 1));
  });
  const auto woke =
      board.WaitForChange(v, SystemClock::Get().Now() + Millis(5000), stop.get_token());
  writer.join();
  CHECK(woke.number == v + 1);
  const MonoTime start = SystemClock::Get().Now();
  CHECK(board.WaitForChange(v + 1, start + Millis(30), stop.get_token()).number == v + 1);
  CHECK(SystemClock::Get().Now() - start >= Millis(30));
  std::thread stopper([&] {
    std::this_thread::sleep_for(Millis(20));
    stop.request_stop();
  });
  board.WaitForChange(v + 1, SystemClock::Get().Now() + Millis(10000), stop.get_token());
  stopper.join();
  CHECK(SystemClock::Get().Now() - start < Millis(5000));
}

}  // namespace
}  // namespace lagwatch
