#include "client/feedback.h"

#include "base/strings.h"

namespace lagwatch::client {

bool IsValidAppName(std::string_view app) { return IsToken(app, "_.:-", 1, 64); }

Result<std::vector<RedisCommand>> FeedbackCommands(std::string_view app, const Decision& decision,
                                                   bool served) {
  if (!IsValidAppName(app)) {
    return Status::InvalidArgument("app name: not 1..64 of [A-Za-z0-9_.:-]: " + EscapeControl(app));
  }
  const std::string key = "rw_stats:" + std::string(app);
  std::vector<RedisCommand> out;
  auto incr = [&](std::string field) { out.push_back({"HINCRBY", key, std::move(field), "1"}); };
  const bool read = decision.reason == Reason::kReplica ||
                    decision.reason == Reason::kDrainedReplica ||
                    decision.reason == Reason::kNoUsableReplica ||
                    decision.reason == Reason::kNotCaughtUp || decision.degraded;
  if (!read) return out;
  if (decision.degraded) {
    incr("degrade_attempts");
    if (served && decision.target != Target::kFailFast) incr("degrade_successes");
  }
  if (served && decision.target == Target::kReplica) {
    incr("reads_replica");
    incr("reads_replica:" + decision.replica);
  } else if (served && decision.target == Target::kPrimary) {
    incr("reads_master");
  }
  return out;
}

}  // namespace lagwatch::client
