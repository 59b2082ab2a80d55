// Fixtures: the examples of MySQL 8.4's "GTID Format and Storage" and its "GTID Sets"
// (https://dev.mysql.com/doc/refman/8.4/en/replication-gtids-concepts.html), and what MySQL's
// parser and printer do (Gtid_set::add_gtid_text and Gtid_set::to_string in sql/rpl_gtid_set.cc,
// Tag::from_cstring in libs/mysql/gtid/tag.cpp, of github.com/mysql/mysql-server).
#include "base/gtid_set.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace lagwatch {
namespace {

// The manual's uuid, as it prints it and as MySQL prints it back.
constexpr const char* kManualUuid = "3E11FA47-71CA-11E1-9E33-C80AA9429562";
constexpr const char* kManual = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
constexpr const char* kOther = "2174b383-5441-11e8-b90a-c80aa9429562";
constexpr const char* kThird = "ffffffff-0000-0000-0000-000000000001";

std::string U(const char* uuid, const char* rest) { return std::string(uuid) + rest; }

GtidSet Set(const std::string& text) {
  Result<GtidSet> parsed = GtidSet::Parse(text);
  INFO(std::string(text + " -> " + parsed.status().ToString()));
  REQUIRE(parsed.ok());
  return *parsed;
}

std::string Canonical(const std::string& text) { return Set(text).ToString(); }

TEST_CASE("the manual's GTIDs and GTID sets parse and print as MySQL prints them") {
  CHECK(Canonical(U(kManualUuid, ":23")) == U(kManual, ":23"));
  CHECK(Canonical(U(kManualUuid, ":1-5")) == U(kManual, ":1-5"));
  CHECK(Canonical(U(kManualUuid, ":1-3:11:47-49")) == U(kManual, ":1-3:11:47-49"));
  // Tagged GTIDs (8.3+): the untagged intervals, then each tag with its own.
  CHECK(Canonical(U(kManualUuid, ":1-5:domain_1:1-3:7")) == U(kManual, ":1-5:domain_1:1-3:7"));
  CHECK(Set(U(kManualUuid, ":1-5:domain_1:1-3:7")).Count() == 9);
}

TEST_CASE("MySQL's own multi-line text round-trips byte for byte") {
  // @@GLOBAL.gtid_executed puts ",\n" between uuids.
  const std::string printed = U(kOther, ":1-3,\n") + U(kManual, ":1-5:7-10:x:1");
  CHECK(Canonical(printed) == printed);
  CHECK(Canonical(U(kManual, ":1-5:7-10:x:1,") + U(kOther, ":1-3")) == printed);
}

TEST_CASE("a GTID set is normalised: uuids sorted and merged, intervals sorted and merged") {
  // Gaps stay; single transactions print as one number.
  CHECK(Canonical(U(kManual, ":1-5:7-10")) == U(kManual, ":1-5:7-10"));
  CHECK(Canonical(U(kManual, ":5-5")) == U(kManual, ":5"));
  // Unsorted, overlapping and adjacent intervals.
  CHECK(Canonical(U(kManual, ":7-10:1-5:6")) == U(kManual, ":1-10"));
  CHECK(Canonical(U(kManual, ":1-3:5-8:2-4")) == U(kManual, ":1-8"));
  CHECK(Canonical(U(kManual, ":3:1:2:9")) == U(kManual, ":1-3:9"));
  CHECK(Canonical(U(kManual, ":1-100:20-30")) == U(kManual, ":1-100"));
  // The same uuid twice, and uuids out of order.
  CHECK(Canonical(U(kThird, ":4,") + U(kManual, ":1-2,") + U(kThird, ":1-3")) ==
        U(kManual, ":1-2,\n") + U(kThird, ":1-4"));
  // Tags: case-insensitive, printed after the untagged intervals in ascending order, merged.
  CHECK(Canonical(U(kManual, ":3:Zeta:1:ALPHA:2:alpha:3")) == U(kManual, ":3:alpha:2-3:zeta:1"));
  CHECK(Canonical(U(kManual, ":t_9:4,") + U(kManual, ":T_9:5")) == U(kManual, ":t_9:4-5"));
  // A uuid with only tagged transactions.
  CHECK(Canonical(U(kManual, ":_a:1-2")) == U(kManual, ":_a:1-2"));
}

TEST_CASE("upper and lower case, whitespace and newlines do not change a GTID set") {
  const GtidSet lower = Set(U(kManual, ":1-5,") + U(kOther, ":1-3:tag:4"));
  CHECK(Set(U(kManualUuid, ":1-5,") + U("2174B383-5441-11E8-B90A-C80AA9429562", ":1-3:TAG:4")) ==
        lower);
  CHECK(Set(" \n" + U(kManual, ":1-5 ,\n\t") + U(kOther, " : 1 - 3 :\ttag\n: 4") + "\n") == lower);
  CHECK_FALSE(Set(U(kManual, ":1-5")) == lower);
}

TEST_CASE("empty GTID sets and empty members, as MySQL accepts them") {
  for (const std::string text : {"", "   ", "\n", ",", ", ,\n,", "  ,  "}) {
    INFO(text);
    CHECK(Set(text).empty());
    CHECK(Set(text).ToString().empty());
    CHECK(Set(text).Count() == 0);
  }
  // MySQL skips empty members: before, between and after.
  const std::string one = U(kManual, ":1-5");
  CHECK(Canonical(one + ",") == one);
  CHECK(Canonical("," + one) == one);
  CHECK(Canonical(one + ",,\n," + U(kOther, ":2")) == U(kOther, ":2,\n") + one);
  // A uuid, or a uuid and tag, with no interval adds nothing.
  CHECK(Set(kManual).empty());
  CHECK(Set(U(kManual, ":tag")).empty());
  CHECK(Canonical(U(kOther, ",") + one) == one);
}

TEST_CASE("transaction numbers go up to MySQL's largest, 2^63 - 2") {
  CHECK(Canonical(U(kManual, ":9223372036854775806")) == U(kManual, ":9223372036854775806"));
  const GtidSet all = Set(U(kManual, ":1-9223372036854775806"));
  CHECK(all.Count() == GtidSet::kMaxGno);
  // Counts saturate rather than wrap.
  CHECK(Set(U(kManual, ":1-9223372036854775806:a:1-9223372036854775806:b:1-3")).Count() ==
        UINT64_MAX);
}

TEST_CASE("a set contains another when it has every one of its transactions") {
  const GtidSet gaps = Set(U(kManual, ":1-5:7-10"));
  const GtidSet full = Set(U(kManual, ":1-10"));
  // A replica with a gap has not everything; once the gap is filled it has.
  CHECK_FALSE(gaps.Contains(full));
  CHECK(full.Contains(gaps));
  CHECK(Set(U(kManual, ":1-12")).Contains(gaps));
  CHECK(gaps.Contains(Set(U(kManual, ":2-4:8:10"))));
  // An interval of the other across our gap.
  CHECK_FALSE(gaps.Contains(Set(U(kManual, ":4-8"))));
  CHECK_FALSE(gaps.Contains(Set(U(kManual, ":6"))));
  CHECK_FALSE(gaps.Contains(Set(U(kManual, ":10-11"))));
  // Other uuids.
  CHECK_FALSE(full.Contains(Set(U(kOther, ":1"))));
  CHECK_FALSE(full.Contains(Set(U(kManual, ":1-10,") + U(kThird, ":1"))));
  CHECK(Set(U(kOther, ":1-3,") + U(kManual, ":1-10,") + U(kThird, ":1")).Contains(full));
  // Tags are sources of their own.
  const GtidSet tagged = Set(U(kManual, ":1-5:t:1-3"));
  CHECK(tagged.Contains(Set(U(kManual, ":T:2"))));
  CHECK_FALSE(tagged.Contains(Set(U(kManual, ":t:4"))));
  CHECK_FALSE(tagged.Contains(Set(U(kManual, ":u:1"))));
  CHECK_FALSE(full.Contains(Set(U(kManual, ":t:1"))));
  CHECK_FALSE(Set(U(kManual, ":t:1")).Contains(Set(U(kManual, ":1"))));
  // Empty sets, both ways.
  const GtidSet empty;
  CHECK(full.Contains(empty));
  CHECK(empty.Contains(empty));
  CHECK_FALSE(empty.Contains(full));
  CHECK(full.Contains(full));
}

TEST_CASE("malformed GTID sets are data errors") {
  const std::string u = kManual;
  const std::vector<std::string> malformed = {
      // uuids: length, hex digits, dashes
      "3e11fa47-71ca-11e1-9e33-c80aa942956:1", "3e11fa47-71ca-11e1-9e33-c80aa94295620:1",
      "24da167-0c0c-11e8-8442-00059a3c7b00:1-19", "3e11fa47-71ca-11e1-9e33-c80aa942956g:1",
      "3e11fa4771ca11e19e33c80aa9429562:1", "3e11fa47-71ca-11e1-9e33c-80aa9429562:1",
      "{3e11fa47-71ca-11e1-9e33-c80aa9429562}:1", "3e11fa47:1",
      // intervals
      u + ":", u + ":0", u + ":0-5", u + ":5-3", u + ":1-", u + ":1-:2", u + ":-1", u + ":+1",
      u + ":01", u + ":0x10", u + ":1.5", u + ":1 2", u + ":1-2-3", u + "::1",
      u + ":1:", u + ":1-5:", u + ": :1",
      // over 2^63 - 2
      u + ":9223372036854775807", u + ":1-9223372036854775807", u + ":9223372036854775808",
      u + ":99999999999999999999",
      // tags: a digit first, other characters, longer than 32
      u + ":1tag:1", u + ":tag-1:1", u + ":t\xc3\xa4g:1", u + ":" + std::string(33, 'a') + ":1",
      // separators and garbage
      u + ":1;" + u + ":2", u + ":1 " + u + ":2", u + "x:1", "x", "\xff\xfe", u + ":1,garbage",
      std::string("\0", 1), u + std::string(":1\0", 3)};
  for (const std::string& bad : malformed) {
    INFO(bad);
    Result<GtidSet> r = GtidSet::Parse(bad);
    CHECK_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kDataError);
  }
  // The longest tag there is is fine.
  CHECK(Canonical(u + ":" + std::string(32, 'Z') + ":1") == u + ":" + std::string(32, 'z') + ":1");
}

TEST_CASE("a GTID set's error says what and where, and quotes the text cut and escaped") {
  Result<GtidSet> r = GtidSet::Parse(U(kManual, ":1-5,\n") + U(kOther, ":5-3"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "malformed GTID set \"" + U(kManual, ":1-5,\\x0a") +
                                    U(kOther, ":5") + "\": at byte 81: an interval that ends " +
                                    "before it starts");
  r = GtidSet::Parse(U(kManual, ":1-5:") + std::string(200, '7') + "x");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find(std::string(39, '7') + "\": at byte 41: ") != std::string::npos);
  CHECK(r.status().message().find("over 2^63 - 2") != std::string::npos);
}

TEST_CASE("hostile GTID sets are rejected within bounds") {
  // Commas alone are an empty set (MySQL's rule), up to the size limit; past it, an error.
  CHECK(Set(std::string(GtidSet::kMaxTextBytes, ',')).empty());
  Result<GtidSet> r = GtidSet::Parse(std::string(GtidSet::kMaxTextBytes + 1, ','));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kDataError);
  CHECK(r.status().message().find("longer than 1048576 bytes") != std::string::npos);
  // Too many intervals, even ones that would merge.
  std::string many = kManual;
  for (size_t i = 0; i < GtidSet::kMaxIntervals; ++i) many += ":" + std::to_string(2 * i + 1);
  CHECK(Set(many).Count() == GtidSet::kMaxIntervals);
  r = GtidSet::Parse(many + ":1");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("more than 65536 intervals") != std::string::npos);
}

}  // namespace
}  // namespace lagwatch
