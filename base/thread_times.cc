#include "base/thread_times.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace lagwatch {
namespace {

std::atomic<int64_t> resumes{0};

sigset_t ContinueSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCONT);
  return set;
}

}  // namespace

ThreadTimes::ThreadTimes()
    : fd_(::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)),
      stat_fd_(::open("/proc/thread-self/stat", O_RDONLY | O_CLOEXEC)) {}

ThreadTimes::~ThreadTimes() {
  if (fd_ >= 0) ::close(fd_);
  if (stat_fd_ >= 0) ::close(stat_fd_);
}

std::optional<std::chrono::nanoseconds> ThreadTimes::Busy() const {
  if (fd_ < 0) return std::nullopt;
  char buf[96];
  const ssize_t n = ::pread(fd_, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  // "<ns on a CPU> <ns waiting on a run queue> <time slices>\n"
  char* end = nullptr;
  const unsigned long long ran = std::strtoull(buf, &end, 10);
  if (end == buf || *end != ' ') return std::nullopt;
  const char* next = end + 1;
  const unsigned long long waited = std::strtoull(next, &end, 10);
  if (end == next) return std::nullopt;
  return std::chrono::nanoseconds(static_cast<int64_t>(ran + waited));
}

std::optional<bool> ThreadTimes::Runnable() const {
  if (stat_fd_ < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = ::pread(stat_fd_, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return std::nullopt;
  // "<tid> (<comm>) <state> ...": the name may hold spaces and parentheses, so the state follows
  // the last ')'.
  const std::string_view line(buf, static_cast<size_t>(n));
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos || close + 2 >= line.size()) return std::nullopt;
  return line[close + 2] == 'R';
}

int64_t ThreadTimes::Sleeps() const {
  rusage usage{};
  if (::getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_nvcsw;
}

void ThreadTimes::BlockContinueSignal() {
  const sigset_t set = ContinueSignal();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int64_t ThreadTimes::ResumeEpoch() const {
  sigset_t pending;
  if (sigpending(&pending) != 0 || sigismember(&pending, SIGCONT) != 1) return resumes.load();
  const int64_t epoch = resumes.fetch_add(1) + 1;
  const sigset_t set = ContinueSignal();
  const timespec now{0, 0};
  sigtimedwait(&set, nullptr, &now);  // EAGAIN if another thread consumed it first
  return epoch;
}

}  // namespace lagwatch
