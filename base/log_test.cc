#include "base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "base/test_values.h"

namespace lagwatch {
namespace {

// What `log` writes to stderr.
template <typename F>
std::string CaptureStderr(F log) {
  char path[] = "/tmp/lw-log-test.XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::fflush(stderr);
  int saved = dup(STDERR_FILENO);
  REQUIRE(dup2(fd, STDERR_FILENO) >= 0);
  log();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  return text.str();
}

TEST_CASE("a message is one log line whatever it holds: control bytes are escaped") {
  std::string out = CaptureStderr([] {
    Log(LogLevel::kWarn,
        "replica 127.0.0.1:3307: Error 'x\n2026-01-01T00:00:00.000Z INFO forged"
        "\x1b[2J' on query\r");
  });
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  CHECK(out.find('\x1b') == std::string::npos);
  CHECK(out.find('\r') == std::string::npos);
  CHECK(out.find(" WARN replica 127.0.0.1:3307: Error 'x\\x0a2026-01-01T00:00:00.000Z INFO "
                 "forged\\x1b[2J' on query\\x0d\n") != std::string::npos);

  out = CaptureStderr([] { LogLimited(LogLevel::kError, "log-test-key", "a\nb", 60); });
  CHECK(out.find(" ERROR a\\x0ab\n") != std::string::npos);
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

using testing::T;

TEST_CASE("log limiter passes one line per interval per key and counts what it held back") {
  LogRateLimiter lim;
  long held = -1;
  CHECK(lim.Allow("probe:a", T(0), Millis(10'000), &held));
  CHECK(held == 0);
  CHECK_FALSE(lim.Allow("probe:a", T(1), Millis(10'000), &held));
  CHECK_FALSE(lim.Allow("probe:a", T(9'999), Millis(10'000), &held));
  CHECK(lim.Allow("probe:b", T(5), Millis(10'000), &held));  // another key is not held back
  CHECK(lim.Allow("probe:a", T(10'000), Millis(10'000), &held));
  CHECK(held == 2);
  CHECK_FALSE(lim.Allow("probe:a", T(10'001), Millis(10'000), &held));
}

TEST_CASE("log limiter forgets keys that carry nothing, so many one-off keys do not pile up") {
  LogRateLimiter lim;
  long held = 0;
  // 10,000 distinct keys, one line each, a millisecond apart (e.g. error texts of a server).
  for (int i = 0; i < 10'000; ++i) {
    REQUIRE(lim.Allow("key" + std::to_string(i), T(i), Millis(100), &held));
  }
  // Only about one interval's worth of keys (100) can still matter.
  CHECK(lim.size() <= 256);
  // A key held back within its interval keeps its count through pruning.
  LogRateLimiter kept;
  REQUIRE(kept.Allow("busy", T(0), Millis(100'000), &held));
  REQUIRE_FALSE(kept.Allow("busy", T(1), Millis(100'000), &held));
  for (int i = 0; i < 1'000; ++i) {
    REQUIRE(kept.Allow("k" + std::to_string(i), T(2 + i), Millis(1), &held));
  }
  CHECK(kept.size() < 200);
  CHECK(kept.Allow("busy", T(100'000), Millis(100'000), &held));
  CHECK(held == 1);
}

}  // namespace
}  // namespace lagwatch
