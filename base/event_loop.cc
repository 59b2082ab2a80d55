#include "base/event_loop.h"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>

#include "base/log.h"

namespace lagwatch {
namespace {

// epoll_event.data carries the fd and the watch's generation.
uint64_t Pack(int fd, uint32_t generation) {
  return (static_cast<uint64_t>(generation) << 32) | static_cast<uint32_t>(fd);
}
int FdOf(uint64_t data) { return static_cast<int>(static_cast<uint32_t>(data)); }
uint32_t GenerationOf(uint64_t data) { return static_cast<uint32_t>(data >> 32); }

void Drain(int fd) {
  uint64_t n;
  while (::read(fd, &n, sizeof n) == sizeof n) {
  }
}

}  // namespace

Status SetCurrentThreadRealtime(int priority) {
  sched_param param{};
  param.sched_priority = priority;
  if (int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param); err != 0) {
    return Status::Unavailable(std::string("SCHED_FIFO refused: ") + std::strerror(err));
  }
  return Status::Ok();
}

EventLoop::EventLoop(std::string name, bool realtime, const Clock& clock)
    : name_(std::move(name)), realtime_(realtime), clock_(clock) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || timer_fd_ < 0 || wake_fd_ < 0) {
    // Only fd exhaustion gets here; nothing can run without these.
    Log(LogLevel::kError, "event loop " + name_ + ": " + std::strerror(errno));
    std::abort();
  }
  for (int fd : {timer_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = Pack(fd, 0);
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
}

EventLoop::~EventLoop() {
  Stop();
  for (int fd : {epoll_fd_, timer_fd_, wake_fd_}) ::close(fd);
}

void EventLoop::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

void EventLoop::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  thread_ = std::jthread();
}

bool EventLoop::InLoopThread() const {
  return std::this_thread::get_id() == loop_thread_id_.load();
}

void EventLoop::Post(Task task) {
  {
    std::lock_guard lock(mu_);
    posted_.push_back(std::move(task));
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void EventLoop::RunSync(const Task& task) {
  if (InLoopThread() || !thread_.joinable()) {
    task();
    return;
  }
  std::promise<void> done;
  Post([&] {
    task();
    done.set_value();
  });
  done.get_future().wait();
}

EventLoop::TimerId EventLoop::At(MonoTime when, Task task) {
  TimerId id = next_timer_id_++;
  timer_tasks_.emplace(id, std::move(task));
  heap_.push({when, id});
  if (when < armed_for_) ArmTimerFd();
  return id;
}

void EventLoop::Cancel(TimerId id) { timer_tasks_.erase(id); }

Status EventLoop::Watch(int fd, uint32_t events, FdCallback callback) {
  auto it = watches_.find(fd);
  const bool exists = it != watches_.end();
  const uint32_t generation = exists ? it->second.generation : next_generation_++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = Pack(fd, generation);
  int rc = ::epoll_ctl(epoll_fd_, exists ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
  // A watched number closed and reopened in between (a library reconnecting) is a new descriptor.
  if (rc != 0 && exists && errno == ENOENT) rc = ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  if (rc != 0) {
    return Status::Unavailable("epoll_ctl failed for fd " + std::to_string(fd) + ": " +
                               std::strerror(errno));
  }
  watches_[fd] = Watched{generation, std::move(callback)};
  return Status::Ok();
}

void EventLoop::Unwatch(int fd) {
  if (watches_.erase(fd)) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void EventLoop::Forget(int fd) { watches_.erase(fd); }

void EventLoop::ArmTimerFd() {
  // Skip cancelled timers at the top so the timerfd is not armed for nothing.
  while (!heap_.empty() && !timer_tasks_.count(heap_.top().id)) heap_.pop();
  const MonoTime next = heap_.empty() ? MonoTime::max() : heap_.top().when;
  if (next == armed_for_) return;
  itimerspec spec{};
  armed_for_ = next;
  if (!heap_.empty()) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(armed_for_.time_since_epoch());
    // steady_clock is CLOCK_MONOTONIC on Linux; 0 would disarm, so a past deadline becomes 1 ns.
    int64_t count = std::max<int64_t>(ns.count(), 1);
    spec.it_value.tv_sec = count / 1'000'000'000;
    spec.it_value.tv_nsec = count % 1'000'000'000;
  }
  ::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

void EventLoop::FireDueTimers() {
  const MonoTime now = clock_.Now();
  while (!heap_.empty() && heap_.top().when <= now) {
    TimerId id = heap_.top().id;
    heap_.pop();
    auto it = timer_tasks_.find(id);
    if (it == timer_tasks_.end()) continue;  // cancelled
    Task task = std::move(it->second);
    timer_tasks_.erase(it);
    task();
  }
  ArmTimerFd();
}

void EventLoop::RunPosted() {
  std::vector<Task> tasks;
  {
    std::lock_guard lock(mu_);
    tasks.swap(posted_);
  }
  for (auto& t : tasks) t();
}

void EventLoop::Run(std::stop_token stop) {
  loop_thread_id_ = std::this_thread::get_id();
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  if (realtime_) realtime_active_ = SetCurrentThreadRealtime(1).ok();
  epoll_event events[kMaxEvents];
  ArmTimerFd();
  RunPosted();
  while (!stop.stop_requested()) {
    int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "event loop " + name_ + ": epoll_wait: " + std::strerror(errno));
      break;
    }
    // Due timers first: a probe's start must not wait behind a batch of replies.
    FireDueTimers();
    for (int i = 0; i < n; ++i) {
      const int fd = FdOf(events[i].data.u64);
      if (fd == timer_fd_) {
        Drain(timer_fd_);
        continue;
      }
      if (fd == wake_fd_) {
        Drain(wake_fd_);
        RunPosted();
        continue;
      }
      auto it = watches_.find(fd);
      // Gone, or a new watch on a reused fd number: this event was for the old one.
      if (it == watches_.end() || it->second.generation != GenerationOf(events[i].data.u64)) {
        continue;
      }
      const uint32_t generation = it->second.generation;
      FdCallback cb = std::move(it->second.callback);
      cb(events[i].events);
      // Put it back unless the callback unwatched the fd or replaced its callback.
      it = watches_.find(fd);
      if (it != watches_.end() && it->second.generation == generation && !it->second.callback) {
        it->second.callback = std::move(cb);
      }
    }
    FireDueTimers();
  }
  loop_thread_id_ = std::thread::id();
}

}  // namespace lagwatch
