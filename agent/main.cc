// lagwatch: measures how stale each MySQL/MariaDB replica is and publishes it to Redis and
// Prometheus. See README.md and DESIGN.md.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include <pthread.h>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/log.h"
#include "version.h"

namespace {

constexpr int kExitUsage = 2;  // bad command line or bad config

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: lagwatch --config FILE        run in the foreground (logs to stderr)\n"
               "       lagwatch --check-config FILE  validate FILE and exit (0 ok, 2 invalid)\n"
               "       lagwatch --version\n"
               "       lagwatch --help\n"
               "MySQL credentials are read only from the option files the config names.\n");
}

int Run(const std::string& path) {
  auto config = lagwatch::LoadConfig(path);
  if (!config.ok()) {
    std::fprintf(stderr, "lagwatch: invalid config %s: %s\n", path.c_str(),
                 config.status().message().c_str());
    return kExitUsage;
  }
  // Block the signals we handle before any thread starts, so they all inherit the mask and only
  // sigwait() below sees them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  lagwatch::Agent agent(std::move(config).value());
  if (auto st = agent.Start(); !st.ok()) {
    lagwatch::Log(lagwatch::LogLevel::kError, "cannot start: " + st.ToString());
    return 1;
  }
  for (;;) {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGHUP) {
      lagwatch::Log(
          lagwatch::LogLevel::kWarn,
          "SIGHUP: configuration reload is not implemented yet; restart to apply changes");
      continue;
    }
    lagwatch::Log(lagwatch::LogLevel::kInfo, std::string("stopping on ") + strsignal(sig));
    break;
  }
  agent.Stop();
  lagwatch::Log(lagwatch::LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    Usage(stdout);
    return 0;
  }
  if (argc == 2 && !std::strcmp(argv[1], "--version")) {
    std::printf("lagwatch %s\n", LAGWATCH_VERSION);
    return 0;
  }
  if (argc == 3 && !std::strcmp(argv[1], "--check-config")) {
    auto config = lagwatch::LoadConfig(argv[2]);
    if (!config.ok()) {
      std::fprintf(stderr, "lagwatch: invalid config %s: %s\n", argv[2],
                   config.status().message().c_str());
      return kExitUsage;
    }
    std::printf("%s: ok (%zu replicas)\n", argv[2], config->replicas.size());
    return 0;
  }
  if (argc == 3 && !std::strcmp(argv[1], "--config")) return Run(argv[2]);
  Usage(stderr);
  return kExitUsage;
}
