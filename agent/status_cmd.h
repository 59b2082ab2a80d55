// `lagwatch status`: asks a running agent's HTTP API for its replicas and prints a table for
// people and scripts. Exit code: 0 every replica healthy, 1 some replica unhealthy, 2 bad command
// line or config, 3 the agent could not be reached or answered nonsense.
#pragma once

#include <string>
#include <vector>

namespace lagwatch {

// args: what follows "status" on the command line: [--url http://HOST:PORT] | [--config FILE].
int RunStatusCommand(const std::vector<std::string>& args);

// Renders GET /api/v1/replicas's JSON as the status table; sets *unhealthy to the number of
// replicas with healthy != 1. Exposed for tests.
std::string RenderStatusTable(const std::string& replicas_json, int* unhealthy);

}  // namespace lagwatch
