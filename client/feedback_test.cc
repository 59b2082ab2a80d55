#include "client/feedback.h"

#include <doctest/doctest.h>

namespace lagwatch::client {
namespace {

using Commands = std::vector<RedisCommand>;

TEST_CASE("a read on a replica counts reads_replica and the replica's own field") {
  Decision d;
  d.target = Target::kReplica;
  d.reason = Reason::kReplica;
  d.replica = "10.0.0.12:3306";
  CHECK(FeedbackCommands("shop", d, true).value() ==
        Commands{{"HINCRBY", "rw_stats:shop", "reads_replica", "1"},
                 {"HINCRBY", "rw_stats:shop", "reads_replica:10.0.0.12:3306", "1"}});
  CHECK(FeedbackCommands("shop", d, false).value().empty());
}

TEST_CASE("a degraded read counts an attempt, and a success when the primary served it") {
  Decision d;
  d.target = Target::kPrimary;
  d.reason = Reason::kNoUsableReplica;
  d.degraded = true;
  CHECK(FeedbackCommands("shop", d, true).value() ==
        Commands{{"HINCRBY", "rw_stats:shop", "degrade_attempts", "1"},
                 {"HINCRBY", "rw_stats:shop", "degrade_successes", "1"},
                 {"HINCRBY", "rw_stats:shop", "reads_master", "1"}});
  CHECK(FeedbackCommands("shop", d, false).value() ==
        Commands{{"HINCRBY", "rw_stats:shop", "degrade_attempts", "1"}});

  Decision failed = d;
  failed.target = Target::kFailFast;
  failed.reason = Reason::kPrimaryDown;
  CHECK(FeedbackCommands("shop", failed, false).value() ==
        Commands{{"HINCRBY", "rw_stats:shop", "degrade_attempts", "1"}});
}

TEST_CASE("read-your-writes reads on the primary count as primary reads, writes not at all") {
  Decision ryw;
  ryw.target = Target::kPrimary;
  ryw.reason = Reason::kNotCaughtUp;
  CHECK(FeedbackCommands("shop", ryw, true).value() ==
        Commands{{"HINCRBY", "rw_stats:shop", "reads_master", "1"}});
  Decision write;
  write.reason = Reason::kWrite;
  CHECK(FeedbackCommands("shop", write, true).value().empty());
}

TEST_CASE("app names follow the contract's rule") {
  Decision d;
  CHECK(FeedbackCommands("shop-eu.1:web_2", d, true).ok());
  CHECK_FALSE(FeedbackCommands("", d, true).ok());
  CHECK_FALSE(FeedbackCommands(std::string(65, 'a'), d, true).ok());
  CHECK_FALSE(FeedbackCommands("shop stats", d, true).ok());
  CHECK_FALSE(FeedbackCommands("shop\r\nFLUSHALL", d, true).ok());
  CHECK_FALSE(FeedbackCommands("shop*", d, true).ok());
}

}  // namespace
}  // namespace lagwatch::client
