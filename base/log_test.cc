#include "base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

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
