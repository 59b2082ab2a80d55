// The exit status that every lagwatch command shares.
#pragma once

namespace lagwatch {

// A bad command line or a bad config (the message names the key): the daemon and every
// subcommand (check, haproxy-config, status) exit with it.
inline constexpr int kExitUsage = 2;

}  // namespace lagwatch
