// What a reload (SIGHUP) may change at run time, and what makes every prober start again: the
// rules of Agent::Reload (docs/operations.md, "Running lagwatch"). Pure functions.
#pragma once

#include <string>

#include "agent/config.h"

namespace lagwatch {

// The first top-level key (or "replicas" etc.) whose change Reload cannot apply, or "".
std::string FirstUnreloadableChange(const Config& running, const Config& next);

// Whether a setting every prober shares changed (tiers, health, slo): then every prober restarts.
bool ProberSettingsChanged(const Config& running, const Config& next);

}  // namespace lagwatch
