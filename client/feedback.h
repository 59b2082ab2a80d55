// Router feedback (docs/redis.md#router-feedback-rwsr--dsr): the `HINCRBY rw_stats:<app> ...`
// commands that report what a router did with a Decision, from which lagwatch computes RWSR and
// DSR. Send them with ContractReader::Send, or on any Redis connection.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "client/route.h"

namespace lagwatch::client {

// One Redis command, as its arguments.
using RedisCommand = std::vector<std::string>;

// 1..64 characters of [A-Za-z0-9_.:-], the contract's rule for `<app>`.
bool IsValidAppName(std::string_view app);

// The counters for one statement routed by `decision` and then run (`served`: it succeeded
// where it was sent). Reads only; writes count nothing:
//   a read on a replica      reads_replica, reads_replica:<host:port>
//   a read on the primary    reads_master
//   a degraded read          degrade_attempts, and degrade_successes when served
//   kAskReplica              pass the decision as it was finally carried out (target kReplica
//                            or the fallback), not the question
// InvalidArgument for an invalid app name.
Result<std::vector<RedisCommand>> FeedbackCommands(std::string_view app, const Decision& decision,
                                                   bool served);

}  // namespace lagwatch::client
