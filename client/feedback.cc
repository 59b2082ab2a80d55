#include "client/feedback.h"

#include "base/contract.h"
#include "base/strings.h"

namespace lagwatch::client {

bool IsValidAppName(std::string_view app) { return IsToken(app, "_.:-", 1, 64); }

Result<std::vector<RedisCommand>> FeedbackCommands(std::string_view app, const Decision& decision,
                                                   bool served) {
  if (!IsValidAppName(app)) {
    return Status::InvalidArgument("app name: not 1..64 of [A-Za-z0-9_.:-]: " + EscapeControl(app));
  }
  namespace f = contract::rw_stats;
  const std::string key = std::string(contract::kRwStatsPrefix) + std::string(app);
  std::vector<RedisCommand> out;
  auto incr = [&](std::string field) { out.push_back({"HINCRBY", key, std::move(field), "1"}); };
  const bool read = decision.reason == Reason::kReplica ||
                    decision.reason == Reason::kDrainedReplica ||
                    decision.reason == Reason::kNoUsableReplica ||
                    decision.reason == Reason::kNotCaughtUp || decision.degraded;
  if (!read) return out;
  if (decision.degraded) {
    incr(f::kDegradeAttempts);
    if (served && decision.target != Target::kFailFast) incr(f::kDegradeSuccesses);
  }
  if (served && decision.target == Target::kReplica) {
    incr(f::kReadsReplica);
    incr(std::string(f::kReplicaReadsPrefix) + decision.replica);
  } else if (served && decision.target == Target::kPrimary) {
    incr(f::kReadsMaster);
  }
  return out;
}

}  // namespace lagwatch::client
