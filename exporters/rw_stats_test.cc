#include "exporters/rw_stats.h"

#include <string>

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

TEST_CASE("a well-formed rw_stats hash parses every field of the contract") {
  auto out = ParseRwStats("shop", {{"reads_replica", "85"},
                                   {"reads_master", "15"},
                                   {"reads_replica:db1:3306", "50"},
                                   {"reads_replica:10.0.0.2:3307", "35"},
                                   {"degrade_attempts", "100"},
                                   {"degrade_successes", "98"}});
  CHECK(out.malformed == 0);
  CHECK(out.unknown_fields == 0);
  CHECK_FALSE(out.bad_app);
  CHECK(out.problems.empty());
  CHECK(out.stats.app == "shop");
  CHECK(out.stats.reads_replica == 85);
  CHECK(out.stats.reads_master == 15);
  CHECK(out.stats.degrade_attempts == 100);
  CHECK(out.stats.degrade_successes == 98);
  CHECK(out.stats.reads_by_replica ==
        std::map<std::string, double>{{"db1:3306", 50}, {"10.0.0.2:3307", 35}});
  CHECK(out.stats.unreadable.empty());
}

TEST_CASE("absent fields of the contract read as zero and are not problems") {
  auto out = ParseRwStats("shop", {{"reads_master", "7"}});
  CHECK(out.malformed == 0);
  CHECK(out.stats.reads_replica == 0);
  CHECK(out.stats.reads_master == 7);
  CHECK(out.stats.reads_by_replica.empty());
}

TEST_CASE("values that are not non-negative base-10 integers are counted and skipped") {
  for (const char* bad : {"", "abc", "-1", "99999999999999999999", "1.5", "+3", " 4", "4 ", "1e3",
                          "0x10", "\xff\xfe"}) {
    CAPTURE(bad);
    auto out = ParseRwStats("shop", {{"reads_master", bad}, {"reads_replica", "9"}});
    CHECK(out.malformed == 1);
    CHECK(out.unknown_fields == 0);
    CHECK(out.problems.size() == 1);
    CHECK(out.stats.reads_master == 0);
    CHECK(out.stats.unreadable == std::set<std::string>{"reads_master"});
    CHECK(out.stats.reads_replica == 9);  // the rest of the hash still counts
  }
}

TEST_CASE("the largest value HINCRBY can write is accepted") {
  auto out = ParseRwStats("shop", {{"reads_replica", "9223372036854775807"}});
  CHECK(out.malformed == 0);
  CHECK(out.stats.reads_replica == doctest::Approx(9.223372036854775807e18));
}

TEST_CASE("unknown fields are counted apart from malformed ones and skipped") {
  auto out =
      ParseRwStats("shop", {{"reads_slave", "3"}, {"READS_MASTER", "1"}, {"reads_master", "2"}});
  CHECK(out.unknown_fields == 2);
  CHECK(out.malformed == 0);
  CHECK(out.problems.size() == 2);
  CHECK(out.stats.reads_master == 2);
  CHECK(out.stats.unreadable.empty());
}

TEST_CASE("a reads_replica field whose suffix is not host:port is malformed") {
  for (const char* field :
       {"reads_replica:", "reads_replica:db1", "reads_replica:db1:", "reads_replica::3306",
        "reads_replica:db1:0", "reads_replica:db1:65536", "reads_replica:db1:03306",
        "reads_replica:db1:port", "reads_replica:db 1:3306", "reads_replica:db1:3306 ",
        "reads_replica:db/1:3306"}) {
    CAPTURE(field);
    auto out = ParseRwStats("shop", {{field, "5"}});
    CHECK(out.malformed == 1);
    CHECK(out.unknown_fields == 0);
    CHECK(out.stats.reads_by_replica.empty());
  }
  auto ok = ParseRwStats("shop", {{"reads_replica:db1:1", "1"}, {"reads_replica:db2:65535", "2"}});
  CHECK(ok.malformed == 0);
  CHECK(ok.stats.reads_by_replica.size() == 2);
}

TEST_CASE("a per-replica field with a bad value is marked unreadable under its field name") {
  auto out =
      ParseRwStats("shop", {{"reads_replica:db1:3306", "x"}, {"reads_replica:db2:3306", "4"}});
  CHECK(out.malformed == 1);
  CHECK(out.stats.unreadable == std::set<std::string>{"reads_replica:db1:3306"});
  CHECK(out.stats.reads_by_replica == std::map<std::string, double>{{"db2:3306", 4}});
}

TEST_CASE("a repeated field is malformed and only its first value counts") {
  auto out = ParseRwStats("shop", {{"reads_master", "2"}, {"reads_master", "5"}});
  CHECK(out.malformed == 1);
  CHECK(out.stats.reads_master == 2);
}

TEST_CASE("app names unusable as label values are refused before any field is read") {
  for (std::string bad :
       {std::string(), std::string(65, 'a'), std::string("a b"), std::string("a/b"),
        std::string("app\"x"), std::string("a\0b", 3), std::string("caf\xc3\xa9")}) {
    CAPTURE(bad);
    CHECK_FALSE(IsValidAppName(bad));
    auto out = ParseRwStats(bad, {{"reads_master", "2"}});
    CHECK(out.bad_app);
    CHECK(out.stats.reads_master == 0);
    CHECK(out.problems.size() == 1);
  }
  CHECK(IsValidAppName(std::string(64, 'a')));
  CHECK(IsValidAppName("shop-eu.v2:canary_1"));
}

TEST_CASE("the app comes from the key suffix after rw_stats:") {
  CHECK(AppFromKey("rw_stats:shop") == "shop");
  CHECK(AppFromKey("rw_stats:a:b") == "a:b");
  CHECK_FALSE(AppFromKey("rw_stats:").has_value());
  CHECK_FALSE(AppFromKey("rw_stats:bad app").has_value());
  CHECK_FALSE(AppFromKey("rw_stat:shop").has_value());
  CHECK_FALSE(AppFromKey("slave_delay:db1:3306").has_value());
}

TEST_CASE("problems kept for the log are bounded and escape binary junk") {
  HashFields fields;
  for (int i = 0; i < 100; ++i) fields.emplace_back("junk\x01" + std::to_string(i), "1");
  auto out = ParseRwStats("shop", fields);
  CHECK(out.unknown_fields == 100);
  CHECK(out.problems.size() == ParseOutcome::kMaxProblems);
  CHECK(out.problems[0].find('\x01') == std::string::npos);
  CHECK(out.problems[0].find("\\x01") != std::string::npos);
}

}  // namespace
}  // namespace lagwatch
