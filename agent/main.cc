// lagwatch: measures how stale each MySQL/MariaDB replica is and publishes it to Redis and
// Prometheus. See README.md and docs/.
#include <systemd/sd-daemon.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>

#include "agent/agent.h"
#include "agent/check_cmd.h"
#include "agent/config.h"
#include "agent/haproxy_config_cmd.h"
#include "base/exit_code.h"
#include "base/log.h"
#include "base/thread_times.h"
#include "cli/status_cmd.h"
#include "version.h"

namespace {

using lagwatch::Log;
using lagwatch::LogLevel;

// Every replica holds a connection, so a large fleet needs more descriptors than the common soft
// limit of 1024: raise the soft limit to the hard one (always permitted; systemd's default hard
// limit is 524288). Says so if even that is too low for the configured replicas.
void RaiseFdLimit(size_t replicas) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  // One socket per replica plus Redis, the primary, HTTP and the agent's own descriptors.
  const rlim_t needed = static_cast<rlim_t>(replicas) + 64;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < needed) {
    Log(LogLevel::kWarn, "open file limit " + std::to_string(lim.rlim_cur) + " is below the " +
                             std::to_string(needed) + " that " + std::to_string(replicas) +
                             " replicas need (raise LimitNOFILE / ulimit -n)");
  }
}

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: lagwatch --config FILE        run in the foreground (logs to stderr)\n"
               "       lagwatch --check-config FILE  validate FILE and exit (0 ok, 2 invalid)\n"
               "       lagwatch status [--url http[s]://HOST:PORT | --config FILE |\n"
               "                        --all [--dir /etc/lagwatch]]\n"
               "                       [--cacert FILE] [--user NAME --password-file FILE]\n"
               "                                     a running agent's cluster and replicas\n"
               "                                     (--all: every agent configured in DIR);\n"
               "                                     exit 1 if any is unhealthy, 3 if an agent\n"
               "                                     is unreachable or refuses us\n"
               "       lagwatch check --config FILE  connect to every configured server and print\n"
               "                                     what lagwatch will use and any problem\n"
               "                                     (0 all can be monitored, 1 some cannot)\n"
               "       lagwatch haproxy-config --config FILE [--mode push|http|agent]\n"
               "                       [--backend NAME] [--check-address HOST] [--max-delay-ms N]\n"
               "                                     print the HAProxy backend for the configured\n"
               "                                     servers (docs/operations.md, HAProxy)\n"
               "       lagwatch --version\n"
               "       lagwatch --help\n"
               "Signals: SIGTERM/SIGINT stop, SIGHUP reloads FILE.\n"
               "MySQL credentials are read only from the option files the config names.\n");
}

// Blocks the signals the main loop handles, before any thread starts, so they all inherit the
// mask and only sigtimedwait() in Run sees them.
sigset_t BlockSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // Left pending for the binary log listener, which tells a stop from a sleep by it.
  lagwatch::ThreadTimes::BlockContinueSignal();
  std::signal(SIGPIPE, SIG_IGN);
  return set;
}

// systemd: READY=1 once every replica has been probed, STATUS= with a summary, and WATCHDOG=1 at
// half the watchdog interval while the probers are making progress (a wedged agent stops pinging
// and gets restarted). All of this is a no-op without NOTIFY_SOCKET.
class SystemdNotifier {
 public:
  SystemdNotifier(const lagwatch::Agent& agent, int probe_interval_ms, const lagwatch::Clock& clock)
      : agent_(agent),
        clock_(clock),
        alive_within_(std::max(2000, 10 * probe_interval_ms)),
        next_watchdog_(clock.Now()),
        next_status_(clock.Now()) {
    uint64_t usec = 0;
    watchdog_ = sd_watchdog_enabled(0, &usec) > 0 && usec > 0;
    watchdog_every_ = std::chrono::microseconds(usec / 2);
  }

  // Called about every 100 ms from the main loop.
  void Tick() {
    const lagwatch::MonoTime now = clock_.Now();
    if (!ready_ && agent_.FirstRoundDone()) {
      ready_ = true;
      last_status_ = agent_.Summary();
      sd_notify(0, ("READY=1\nSTATUS=" + last_status_).c_str());
      Log(LogLevel::kInfo, "first probe round done: " + last_status_);
    }
    if (ready_ && now >= next_status_) {
      next_status_ = now + std::chrono::seconds(1);
      std::string status = agent_.Summary();
      if (status != last_status_) {
        last_status_ = status;
        sd_notify(0, ("STATUS=" + status).c_str());
      }
    }
    if (watchdog_ && now >= next_watchdog_ && agent_.ProbersAlive(alive_within_)) {
      next_watchdog_ = now + watchdog_every_;
      sd_notify(0, "WATCHDOG=1");
    }
  }

 private:
  const lagwatch::Agent& agent_;
  const lagwatch::Clock& clock_;
  const lagwatch::Millis alive_within_;
  bool watchdog_ = false;
  std::chrono::microseconds watchdog_every_{0};
  lagwatch::MonoTime next_watchdog_;
  lagwatch::MonoTime next_status_;
  bool ready_ = false;
  std::string last_status_;
};

// Runs the agent with the configuration at `path` until SIGINT or SIGTERM; SIGHUP reloads it.
int Run(const std::string& path) {
  auto config = lagwatch::LoadConfig(path);
  if (!config.ok()) {
    std::fprintf(stderr, "lagwatch: invalid config %s: %s\n", path.c_str(),
                 config.status().message().c_str());
    return lagwatch::kExitUsage;
  }
  const sigset_t signals = BlockSignals();
  RaiseFdLimit(config->replicas.size());
  // Buffers of 1 MB and more (a large fleet's /metrics body) come from mmap and go back to the
  // system when freed. Without a fixed threshold glibc raises it after the first such free, and
  // every HTTP worker's arena then keeps a scrape's worth of pages for good.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  const int probe_interval_ms = config->probe.interval_ms;
  const lagwatch::Clock& clock = lagwatch::SystemClock::Get();
  lagwatch::Agent agent(std::move(config).value(), clock);
  if (auto st = agent.Start(); !st.ok()) {
    Log(LogLevel::kError, "cannot start: " + st.ToString());
    return 1;
  }

  SystemdNotifier notifier(agent, probe_interval_ms, clock);
  lagwatch::MonoTime next_tick = clock.Now();
  for (;;) {
    timespec wait = {0, 100'000'000};  // 100 ms
    const int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGHUP) {
      agent.ReloadFile(path);
      continue;
    }
    if (sig == SIGINT || sig == SIGTERM) {
      sd_notify(0, "STOPPING=1");
      Log(LogLevel::kInfo, std::string("stopping on ") + strsignal(sig));
      break;
    }
    notifier.Tick();
    if (clock.Now() >= next_tick) {
      next_tick = clock.Now() + std::chrono::seconds(1);
      agent.Tick();
    }
  }
  agent.Stop();
  Log(LogLevel::kInfo, "stopped");
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
      return lagwatch::kExitUsage;
    }
    std::printf("%s: ok (%zu replicas)\n", argv[2], config->replicas.size());
    return 0;
  }
  if (argc == 3 && !std::strcmp(argv[1], "--config")) return Run(argv[2]);
  if (argc >= 2 && !std::strcmp(argv[1], "haproxy-config")) {
    return lagwatch::RunHaproxyConfigCommand(std::vector<std::string>(argv + 2, argv + argc));
  }
  if (argc >= 2 && !std::strcmp(argv[1], "check")) {
    return lagwatch::RunCheckCommand(std::vector<std::string>(argv + 2, argv + argc));
  }
  if (argc >= 2 && !std::strcmp(argv[1], "status")) {
    return lagwatch::RunStatusCommand(
        std::vector<std::string>(argv + 2, argv + argc),
        [](const std::string& path, const std::optional<std::string>& instance)
            -> lagwatch::Result<lagwatch::AgentListener> {
          // The listener and the cluster, not the agent's secrets: no need to be able to read
          // the MySQL option files to ask the agent.
          auto config = lagwatch::ReadConfigFile(path, instance);
          if (!config.ok()) return config.status();
          const lagwatch::WebConfig& web = config->http.web;
          return lagwatch::AgentListener{(web.tls() ? "https://" : "http://") + config->http_listen,
                                         web.tls() ? web.cert_file : "", config->cluster};
        });
  }
  Usage(stderr);
  return lagwatch::kExitUsage;
}
