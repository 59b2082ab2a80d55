// A worker thread its owner can always stop (STYLE.md: owned threads, no bare sleeps). The body
// runs with a stop_token and waits with SleepUntil, which returns as soon as a stop is requested;
// Stop() (and the destructor) requests the stop and joins.
// Start/Stop are for the owner's thread; SleepUntil is for the body.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>

#include "agent/clock.h"

namespace lagwatch {

class Worker {
 public:
  Worker() = default;
  ~Worker() { Stop(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // REQUIRES: not running.
  void Start(std::function<void(std::stop_token)> body) { thread_ = std::jthread(std::move(body)); }

  // Requests a stop and joins; harmless when not running.
  void Stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
  }

  // Sleeps until `deadline` or a stop request, whichever is first; false when stopping.
  static bool SleepUntil(const std::stop_token& stop, MonoTime deadline) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait_until(lock, stop, deadline, [] { return false; });
    return !stop.stop_requested();
  }

 private:
  std::jthread thread_;
};

}  // namespace lagwatch
