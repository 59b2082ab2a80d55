// A worker thread its owner can always stop: no thread in lagwatch is detached. The body runs
// with a stop_token and waits with Clock::SleepUntil, which returns as soon as a stop is
// requested; Stop() (and the destructor) requests the stop and joins.
// Start/Stop are for the owner's thread.
#pragma once

#include <functional>
#include <stop_token>
#include <thread>

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

 private:
  std::jthread thread_;
};

}  // namespace lagwatch
