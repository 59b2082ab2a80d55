#include "base/event_loop.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

MonoTime Now() { return std::chrono::steady_clock::now(); }

TEST_CASE("timers fire in time order, not in the order they were set") {
  EventLoop loop("test-loop");
  std::vector<int> order;
  std::promise<void> done;
  const MonoTime t0 = Now();
  loop.At(t0 + Millis(30), [&] {
    order.push_back(3);
    done.set_value();
  });
  loop.At(t0 + Millis(10), [&] { order.push_back(1); });
  loop.At(t0 + Millis(20), [&] { order.push_back(2); });
  loop.Start();
  REQUIRE(done.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  loop.Stop();
  CHECK(order == std::vector<int>{1, 2, 3});
  CHECK(Now() - t0 >= Millis(30));
}

TEST_CASE("timers 3.3 ms apart each fire, never early") {
  EventLoop loop("test-loop");
  loop.Start();
  std::vector<Micros> late;
  std::promise<void> done;
  loop.Post([&] {
    // 20 timers 3.3 ms apart; each records how late it ran.
    for (int i = 1; i <= 20; ++i) {
      const MonoTime when = Now() + Micros(3300 * i);
      loop.At(when, [&, when, i] {
        late.push_back(std::chrono::duration_cast<Micros>(Now() - when));
        if (i == 20) done.set_value();
      });
    }
  });
  REQUIRE(done.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  loop.Stop();
  REQUIRE(late.size() == 20);
  for (Micros l : late) {
    CHECK(l >= Micros(0));
    CHECK(l < Millis(50));  // generous: a loaded CI machine may deschedule us
  }
}

TEST_CASE("a cancelled timer does not fire, cancelling twice or after firing is harmless") {
  EventLoop loop("test-loop");
  std::atomic<int> fired = 0;
  std::promise<void> done;
  const MonoTime t0 = Now();
  auto a = loop.At(t0 + Millis(5), [&] { fired += 1; });
  loop.At(t0 + Millis(10), [&] { fired += 10; });
  loop.At(t0 + Millis(20), [&] { done.set_value(); });
  loop.Cancel(a);
  loop.Cancel(a);
  loop.Start();
  REQUIRE(done.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  loop.RunSync([&] { loop.Cancel(a); });
  loop.Stop();
  CHECK(fired == 10);
  CHECK(loop.timers() == 0);
}

TEST_CASE("a callback can set, cancel and re-arm timers from inside the loop") {
  EventLoop loop("test-loop");
  std::promise<void> done;
  int ticks = 0;
  std::function<void()> tick = [&] {
    if (++ticks == 5) {
      done.set_value();
      return;
    }
    loop.At(Now() + Millis(2), tick);
  };
  loop.At(Now(), tick);
  loop.Start();
  REQUIRE(done.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  loop.Stop();
  CHECK(ticks == 5);
}

TEST_CASE("posted tasks run on the loop's thread in posting order, RunSync waits") {
  EventLoop loop("test-loop");
  loop.Start();
  std::vector<int> seen;
  std::atomic<bool> on_loop = true;
  for (int i = 0; i < 100; ++i) {
    loop.Post([&, i] {
      if (!loop.InLoopThread()) on_loop = false;
      seen.push_back(i);
    });
  }
  size_t count = 0;
  loop.RunSync([&] { count = seen.size(); });
  CHECK(count == 100);
  CHECK(on_loop);
  CHECK_FALSE(loop.InLoopThread());
  loop.Stop();
  for (int i = 0; i < 100; ++i) CHECK(seen[static_cast<size_t>(i)] == i);
}

TEST_CASE("RunSync runs inline while the loop is stopped, posts wait for the next Start") {
  EventLoop loop("test-loop");
  bool ran = false;
  loop.RunSync([&] { ran = true; });
  CHECK(ran);
  std::promise<void> posted;
  loop.Post([&] { posted.set_value(); });
  auto f = posted.get_future();
  CHECK(f.wait_for(Millis(20)) == std::future_status::timeout);
  loop.Start();
  CHECK(f.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
}

TEST_CASE("a watched fd calls back while readable, and not after Unwatch") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  EventLoop loop("test-loop");
  std::promise<std::string> got;
  std::string buf;
  REQUIRE(loop.Watch(p[0], EPOLLIN,
                     [&](uint32_t events) {
                       CHECK((events & EPOLLIN) != 0);
                       char c;
                       while (::read(p[0], &c, 1) == 1 && c != '\n') buf += c;
                       if (c == '\n') {
                         loop.Unwatch(p[0]);  // from inside its own callback
                         got.set_value(buf);
                       }
                     })
              .ok());
  loop.Start();
  REQUIRE(::write(p[1], "hello\n", 6) == 6);
  auto f = got.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(f.get() == "hello");
  // Unwatched: more data must not reach the (now dangling) promise.
  REQUIRE(::write(p[1], "x\n", 2) == 2);
  size_t watched = 1;
  loop.RunSync([&] { watched = loop.watched(); });
  CHECK(watched == 0);
  loop.Stop();
  ::close(p[0]);
  ::close(p[1]);
}

TEST_CASE("an fd closed under its watch: forgotten, or its number reopened, is watched afresh") {
  // Connector/C closes its own socket on a failed connect; the next socket often gets its number.
  int a[2];
  REQUIRE(::pipe(a) == 0);
  EventLoop loop("test-loop");
  REQUIRE(loop.Watch(a[0], EPOLLIN, [](uint32_t) {}).ok());
  ::close(a[0]);
  ::close(a[1]);
  int b[2];
  REQUIRE(::pipe(b) == 0);
  REQUIRE(b[0] == a[0]);  // the lowest free numbers: the closed pipe's
  std::promise<void> fired;
  // Still registered under that number, but the epoll set lost the closed descriptor: watching
  // the new one must add it, not fail modifying what is no longer there.
  REQUIRE(loop.Watch(b[0], EPOLLIN,
                     [&](uint32_t) {
                       char c;
                       CHECK(::read(b[0], &c, 1) == 1);
                       loop.Unwatch(b[0]);
                       fired.set_value();
                     })
              .ok());
  loop.Start();
  REQUIRE(::write(b[1], "x", 1) == 1);
  auto f = fired.get_future();
  CHECK(f.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  loop.Stop();

  REQUIRE(loop.Watch(b[0], EPOLLIN, [](uint32_t) {}).ok());
  ::close(b[0]);
  loop.Forget(b[0]);
  CHECK(loop.watched() == 0);
  ::close(b[1]);
}

TEST_CASE("watching a bad fd fails with a status, not a crash") {
  EventLoop loop("test-loop");
  CHECK_FALSE(loop.Watch(-1, EPOLLIN, [](uint32_t) {}).ok());
  CHECK(loop.watched() == 0);
}

TEST_CASE("due timers run before a flood of ready descriptors") {
  // 200 readable pipes keep every turn busy; a timer due meanwhile must still fire promptly.
  EventLoop loop("test-loop");
  std::vector<std::array<int, 2>> pipes(200);
  std::atomic<int64_t> callbacks = 0;
  for (auto& p : pipes) {
    REQUIRE(::pipe(p.data()) == 0);
    REQUIRE(::write(p[1], "x", 1) == 1);  // stays readable: never drained
    REQUIRE(loop.Watch(p[0], EPOLLIN, [&](uint32_t) { callbacks += 1; }).ok());
  }
  loop.Start();
  std::promise<Micros> late;
  loop.Post([&] {
    const MonoTime when = Now() + Millis(20);
    loop.At(when, [&, when] { late.set_value(std::chrono::duration_cast<Micros>(Now() - when)); });
  });
  auto f = late.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  // Generous for a loaded CI host: what it catches is a loop starving timers behind ready fds.
  CHECK(f.get() < Millis(500));
  loop.Stop();
  CHECK(callbacks > 200);
  for (auto& p : pipes) {
    ::close(p[0]);
    ::close(p[1]);
  }
}

}  // namespace
}  // namespace lagwatch
