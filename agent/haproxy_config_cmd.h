// `lagwatch haproxy-config --config FILE [--mode push|http|agent] [--backend NAME]
// [--check-address HOST] [--max-delay-ms N] [--ca-file FILE] [--user NAME --password-file FILE]`:
// prints the HAProxy backend for the configured
// cluster, so that HAProxy's server names cannot drift from lagwatch's (docs/operations.md,
// "HAProxy"). Every configured server is listed twice (exporters/haproxy_verdict.h): as a normal
// server named by its id and as the backup "<id>_primary".
//
//   push   no checks: lagwatch sets each server's state through the runtime API
//          (haproxy.instances). Every server starts in maintenance (`disabled`) but the configured
//          primary's backup entry, so a restarted HAProxy serves nothing lagwatch has not
//          judged, and reads the primary until it has.
//   agent  HAProxy's agent check against haproxy.agent_check.listen, each server sending its
//          name; the same start in maintenance (the agent check runs in maintenance and its
//          answer ends it).
//   http   an HTTP check of GET /check/<name> on http.listen, over TLS when the web config has
//          it (verified with --ca-file, else the certificate itself) and with basic auth when it
//          has users (--user and --password-file, a 0600 file, write the header: the output then
//          holds the password, as HAProxy's configuration must); servers start as HAProxy starts
//          them (up until the first check), since HAProxy does not check a server in maintenance.
//
// Checks run every 100 ms with `fall 1 rise 1` (lagwatch's verdict has its own hysteresis), and a
// server marked down has its sessions cut (`on-marked-down shutdown-sessions`): a pooled
// connection would otherwise keep reading from a lagging replica.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/config.h"
#include "base/status.h"

namespace lagwatch {

enum class HaproxyMode { kPush, kHttp, kAgent };

struct HaproxyConfigOptions {
  HaproxyMode mode = HaproxyMode::kPush;
  std::string backend;                  // empty: haproxy.backend
  std::string check_address;            // http, agent: where HAProxy reaches lagwatch; empty: the
                                        // listener's address (127.0.0.1 for a wildcard)
  std::optional<int64_t> max_delay_ms;  // http, agent: a pool's own limit
  std::string source;                   // the config file, named in the header comment
  // http with the web config's TLS: the CA HAProxy verifies lagwatch's certificate with; empty:
  // the certificate itself (right for a self-signed one).
  std::string ca_file;
  // http with basic auth: the Authorization header's value ("Basic ..."); empty: a CHANGE-ME
  // placeholder to fill in.
  std::string authorization;
};

// The backend section (with a comment saying what it needs elsewhere). InvalidArgument when the
// mode needs what the configuration lacks (agent: haproxy.agent_check.listen), or the backend or
// check address is not usable.
Result<std::string> HaproxyBackendConfig(const Config& config, const HaproxyConfigOptions& options);

// args: what follows "haproxy-config" on the command line. Exit 0 (printed), 2 (bad command line
// or config).
int RunHaproxyConfigCommand(const std::vector<std::string>& args);

}  // namespace lagwatch
