#include "base/thread_times.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>

namespace lagwatch {

ThreadTimes::ThreadTimes() : fd_(::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}

ThreadTimes::~ThreadTimes() {
  if (fd_ >= 0) ::close(fd_);
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

int64_t ThreadTimes::Sleeps() {
  rusage usage{};
  if (::getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_nvcsw;
}

}  // namespace lagwatch
