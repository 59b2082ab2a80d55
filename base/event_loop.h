// A single-threaded event loop: file-descriptor readiness (epoll), timers (a heap on the
// monotonic clock, fired through a timerfd so they are not rounded to whole milliseconds) and
// tasks posted from other threads (an eventfd).
//
// Many replicas share one loop: their probes are state machines driven by its callbacks
// (base/async_mysql.h), so a thousand replicas cost a few threads, not a thousand. Each turn
// fires the due timers before handling ready descriptors, and handles at most kMaxEvents of
// those, so a burst of replies delays a due probe by at most one such batch.
//
// Threading: Start/Stop/Post/RunSync from any thread; everything else (At, Cancel, Watch,
// Unwatch) only on the loop's thread, i.e. from its callbacks, or before Start / after Stop.
// Callbacks run on the loop's thread, one at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <stop_token>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace lagwatch {

// Moves the calling thread to SCHED_FIFO at `priority` (1 is the lowest real-time priority, above
// every normal thread). Needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= priority (systemd:
// LimitRTPRIO=); the kernel's real-time throttling still leaves 5 % of each second to normal
// threads. A thread that wakes to start probes on time must not wait behind the servers it just
// woke: on a busy host that is what makes probe starts late.
Status SetCurrentThreadRealtime(int priority);

class EventLoop {
 public:
  using TimerId = uint64_t;
  using Task = std::function<void()>;
  // Called with the epoll events (EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLERR, EPOLLHUP) that happened.
  using FdCallback = std::function<void(uint32_t events)>;

  // `name` labels the thread in logs and /proc ("lw-probe-0"). With `realtime`, the thread asks
  // for SCHED_FIFO priority 1 (see SetCurrentThreadRealtime) and runs normally if refused.
  // `clock` (which must outlive the loop) decides which timers are due; the timerfd that wakes
  // the loop is on CLOCK_MONOTONIC, which is SystemClock's.
  explicit EventLoop(std::string name, bool realtime = false,
                     const Clock& clock = SystemClock::Get());
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs the loop on its own thread. REQUIRES: not running.
  void Start();
  // Stops and joins the thread; pending timers and watches stay registered (they fire again after
  // a later Start). Harmless when not running.
  void Stop();

  // Runs `task` on the loop's thread soon, in posting order. Thread-safe. Tasks posted while the
  // loop is stopped run at the next Start.
  void Post(Task task);
  // Runs `task` on the loop's thread and waits for it: inline when called on that thread or when
  // the loop is not running (nothing else runs callbacks then).
  void RunSync(const Task& task);
  // True on the loop's own thread.
  bool InLoopThread() const;

  // Calls `task` once at `when` (or at once, on the next turn, if `when` has passed).
  TimerId At(MonoTime when, Task task);
  // Forgets a timer that has not fired; harmless for one that fired or was cancelled.
  void Cancel(TimerId id);

  // Calls `callback` whenever `fd` is ready for `events` (level-triggered) until Unwatch. Watching
  // an fd again replaces its events and callback. REQUIRES: fd stays open until Unwatch or Forget.
  Status Watch(int fd, uint32_t events, FdCallback callback);
  void Unwatch(int fd);
  // Drops the watch of an fd that was closed without Unwatch (a library closed its own socket):
  // the close already took it out of the epoll set, and its number may be another thread's by
  // now, so the descriptor is not touched.
  void Forget(int fd);

  // The clock timers are measured on (for callers computing deadlines).
  const Clock& clock() const { return clock_; }

  // True once the running thread got the real-time priority it asked for.
  bool realtime_active() const { return realtime_active_; }

  // How many timers and watched descriptors are registered (for tests).
  size_t timers() const { return timer_tasks_.size(); }
  size_t watched() const { return watches_.size(); }

  static constexpr int kMaxEvents = 64;

 private:
  void Run(std::stop_token stop);
  void FireDueTimers();
  void RunPosted();
  void ArmTimerFd();

  const std::string name_;
  const bool realtime_;
  const Clock& clock_;
  std::atomic<bool> realtime_active_ = false;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Post and Stop wake the loop through it

  // Loop thread only.
  struct Due {
    MonoTime when;
    TimerId id;
    bool operator>(const Due& o) const { return when != o.when ? when > o.when : id > o.id; }
  };
  std::priority_queue<Due, std::vector<Due>, std::greater<>> heap_;
  std::unordered_map<TimerId, Task> timer_tasks_;  // cancelled timers are erased here only
  TimerId next_timer_id_ = 1;
  MonoTime armed_for_ = MonoTime::max();  // what the timerfd is set to
  struct Watched {
    uint32_t generation;  // tells a stale event for a closed and reused fd from a new one's
    FdCallback callback;  // empty while it runs (moved out, so it may Unwatch itself)
  };
  std::unordered_map<int, Watched> watches_;
  uint32_t next_generation_ = 1;

  std::mutex mu_;
  std::vector<Task> posted_;  // GUARDED_BY(mu_)
  std::jthread thread_;
  std::atomic<std::thread::id> loop_thread_id_;  // set while running; InLoopThread reads it
};

}  // namespace lagwatch
