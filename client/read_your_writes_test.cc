#include "client/read_your_writes.h"

#include <doctest/doctest.h>

#include <string>

#include "client/record.h"

namespace lagwatch::client {
namespace {

TEST_CASE("the catch-up question embeds the parsed token and never waits") {
  auto mariadb = ParsePosition(PositionsKind::kMariaDbGtid, "0-1-120,1-2-7");
  REQUIRE(mariadb.ok());
  CHECK(CatchUpQuery(*mariadb).value() == "SELECT MASTER_GTID_WAIT('0-1-120,1-2-7', 0)");

  auto mysql = ParsePosition(PositionsKind::kMysqlGtid,
                             "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7,\n"
                             "2174b383-5441-11e8-b90a-c80aa9429562:1-3");
  REQUIRE(mysql.ok());
  // MySQL's own spelling: lower case, sorted; compared without waiting.
  CHECK(CatchUpQuery(*mysql).value() ==
        "SELECT GTID_SUBSET('2174b383-5441-11e8-b90a-c80aa9429562:1-3,\n"
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7', @@GLOBAL.gtid_executed)");

  // MASTER_POS_WAIT(file, pos, 0) would wait forever: no question for coordinates.
  auto coords = ParsePosition(PositionsKind::kBinlog, "mysql-bin.000012:4567");
  REQUIRE(coords.ok());
  auto refused = CatchUpQuery(*coords);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("a token that would break out of the quotes never becomes a Position") {
  CHECK_FALSE(ParsePosition(PositionsKind::kMariaDbGtid, "0-1-1', 0); DROP TABLE t; --").ok());
  CHECK_FALSE(ParsePosition(PositionsKind::kMysqlGtid, "x' OR '1'='1").ok());
  CHECK_FALSE(ParsePosition(PositionsKind::kBinlog, "bin'.000001:4").ok());
  CHECK_FALSE(ParsePosition(PositionsKind::kMariaDbGtid, "").ok());
  CHECK_FALSE(ParsePosition(PositionsKind::kNone, "0-1-1").ok());
}

TEST_CASE("the answers: 0 from MASTER_GTID_WAIT, 1 from GTID_SUBSET; anything else is not") {
  CHECK(CatchUpReached(PositionsKind::kMariaDbGtid, "0"));
  CHECK_FALSE(CatchUpReached(PositionsKind::kMariaDbGtid, "-1"));
  CHECK_FALSE(CatchUpReached(PositionsKind::kMariaDbGtid, ""));
  CHECK(CatchUpReached(PositionsKind::kMysqlGtid, "1"));
  CHECK_FALSE(CatchUpReached(PositionsKind::kMysqlGtid, "0"));
  CHECK_FALSE(CatchUpReached(PositionsKind::kBinlog, "0"));
}

TEST_CASE("tokens are taken with the statements routing.md names") {
  CHECK(std::string(TokenQuery(PositionsKind::kMariaDbGtid)) == "SELECT @@last_gtid");
  CHECK(std::string(TokenQuery(PositionsKind::kMysqlGtid)) == "SELECT @@GLOBAL.gtid_executed");
  CHECK(TokenQuery(PositionsKind::kBinlog) == nullptr);
  CHECK(TokenQuery(PositionsKind::kNone) == nullptr);
}

}  // namespace
}  // namespace lagwatch::client
