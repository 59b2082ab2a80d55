// `lagwatch status`: asks a running agent's HTTP API for its replicas and prints its cluster, its
// primary and a table for people and scripts. Exit code: 0 every replica healthy, 1 some replica
// unhealthy, 2 bad command line or config, 3 the agent could not be reached, refused us or
// answered nonsense.
//
// `lagwatch status --all` does it for every agent on the host: one block per configuration file
// in /etc/lagwatch (--dir), each agent asked at its own listener. Exit code: 3 if any agent did
// not answer or any configuration did not load, else 1 if any replica is unhealthy, else 0; 2
// for a bad command line or a directory without any configuration.
//
// It speaks what the agent serves (http.web_config_file): https (TLS 1.2+, the certificate
// verified) and basic auth, with the password read from a file, never from the command line.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace lagwatch {

// What an agent's configuration file says about its HTTP listener, and its cluster's name.
struct AgentListener {
  std::string url;        // "http://HOST:PORT" or "https://HOST:PORT"
  std::string cert_file;  // https: the certificate the agent presents (pinned without --cacert)
  std::string cluster;    // the agent's cluster, as an agent with that configuration names it
};
// Reads the listener from the configuration file at `path`, for an agent whose LAGWATCH_INSTANCE
// is `instance` (nullopt: unset); InvalidArgument, naming the key, if the file is not a valid
// configuration. The agent gives this (agent/main.cc), so the status client does not depend on the
// agent's configuration code.
using ListenerFromConfig = std::function<Result<AgentListener>(
    const std::string& path, const std::optional<std::string>& instance)>;

// Where the unit template's instances keep their configurations (lagwatch@NAME reads NAME.json).
inline constexpr char kDefaultConfigDir[] = "/etc/lagwatch";

// args: what follows "status" on the command line:
//   [--url http[s]://HOST:PORT | --config FILE | --all [--dir DIR]] [--cacert FILE]
//   [--user NAME --password-file FILE]
// With --config the scheme follows the agent's web config, and without --cacert an https agent
// must present exactly the certificate its web config names (it is pinned, so a certificate
// issued for another name works when the agent listens on 0.0.0.0).
// --all: every DIR/*.json, in name order, that is a lagwatch configuration (a JSON object with
// "primary" and "replicas"; other files are passed over without a word), each asked as --config
// asks its file. NAME.json is read as lagwatch@NAME reads it (LAGWATCH_INSTANCE=NAME), except
// lagwatch.json, the single unit's. An agent that does not answer is shown as such, and the others
// are still asked; --cacert and the credentials go to every agent.
int RunStatusCommand(const std::vector<std::string>& args, const ListenerFromConfig& from_config);

// "Basic base64(user:password)", an Authorization header's value; the password is wiped from the
// buffers it passed through. `lagwatch haproxy-config` writes HAProxy's check header with it.
std::string BasicAuthorization(const std::string& user, std::string password);

// Renders GET /api/v1/replicas's JSON as the status table; sets *unhealthy to the number of
// replicas whose "healthy" is not the number 1, or to -1 (and returns "") when the text is not
// that JSON (not JSON, no "replicas" array, an entry that is not an object). Fields of the wrong
// type show as "-". Never throws. Exposed for tests.
std::string RenderStatusTable(const std::string& replicas_json, int* unhealthy);

// The line that names the cluster, "cluster NAME\n" (escaped), from the "cluster" of GET
// /api/v1/replicas's JSON; "" when it has none (an agent too old to say, or nonsense). Never
// throws. For tests.
std::string RenderClusterLine(const std::string& replicas_json);

// Renders GET /api/v1/primary's JSON as the line above the table: "primary HOST:PORT (state;
// topology STATE; N moves since start, configured HOST:PORT)". "" when the text is not that JSON
// (an agent too old to say, or nonsense): the table still prints. Never throws. For tests.
std::string RenderPrimaryLine(const std::string& primary_json);

}  // namespace lagwatch
