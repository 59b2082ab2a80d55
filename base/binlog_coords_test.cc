#include "base/binlog_coords.h"

#include <doctest/doctest.h>

#include <string>

#include "base/vertical_result.h"

namespace lagwatch {
namespace {

BinlogCoords ParsedCoords(const char* file, uint64_t pos) {
  auto c = ParseBinlogCoords(file, pos);
  REQUIRE(c.ok());
  return *c;
}

TEST_CASE("ParseBinlogCoords splits BASE.NUMBER at the last dot") {
  CHECK(ParsedCoords("mysql-bin.000123", 4) == BinlogCoords{"mysql-bin", 123, 4});
  CHECK(ParsedCoords("source-bin.000002", 1307) == BinlogCoords{"source-bin", 2, 1307});
  CHECK(ParsedCoords("my.host-bin.1", 0) == BinlogCoords{"my.host-bin", 1, 0});
  CHECK(ParsedCoords("mysql-bin.1000000", 4).seq == 1000000);  // past 999999 the number is wider
  CHECK(ParsedCoords("b.18446744073709551615", 18446744073709551615u).seq == 18446744073709551615u);

  auto text = ParseBinlogCoords("mariadb-bin.000016", std::string_view("475"));
  REQUIRE(text.ok());
  CHECK(*text == BinlogCoords{"mariadb-bin", 16, 475});
}

TEST_CASE("ParseBinlogCoords: a name without a numeric extension or a bad position is bad data") {
  for (const char* file :
       {"", "mysql-bin", "mysql-bin.", ".000001", "mysql-bin.00001a", "mysql-bin.-1",
        "mysql-bin.+1", "INVALID", "mysql-bin.0 ", "mysql-bin.18446744073709551616"}) {
    CAPTURE(file);
    CHECK(ParseBinlogCoords(file, 4).status().code() == Status::Code::kDataError);
  }
  for (const char* pos : {"", "-4", "+4", "4 ", "0x10", "four", "18446744073709551616"}) {
    CAPTURE(pos);
    auto c = ParseBinlogCoords("mysql-bin.000001", std::string_view(pos));
    CHECK(c.status().code() == Status::Code::kDataError);
  }
  auto named = ParseBinlogCoords("mysql-bin", 4);
  CHECK(named.status().message().find("'mysql-bin' has no numeric extension") != std::string::npos);
  auto escaped = ParseBinlogCoords("a\nb", 4);
  CHECK(escaped.status().message().find("a\\x0ab") != std::string::npos);
}

TEST_CASE("Compare: file sequence first, then position; other base names are incomparable") {
  const BinlogCoords a = ParsedCoords("mysql-bin.000009", 900);
  CHECK(Compare(a, a) == CoordsOrder::kSame);
  CHECK(Compare(a, ParsedCoords("mysql-bin.000009", 901)) == CoordsOrder::kBefore);
  CHECK(Compare(ParsedCoords("mysql-bin.000009", 901), a) == CoordsOrder::kAfter);
  // A rotation: the new file starts at 4, and is after every position of the old one.
  CHECK(Compare(ParsedCoords("mysql-bin.000010", 4), a) == CoordsOrder::kAfter);
  CHECK(Compare(a, ParsedCoords("mysql-bin.000010", 4)) == CoordsOrder::kBefore);
  // 999999 is followed by 1000000: a number, not text ("1000000" < "999999" as strings).
  CHECK(Compare(ParsedCoords("mysql-bin.999999", 5000), ParsedCoords("mysql-bin.1000000", 4)) ==
        CoordsOrder::kBefore);
  // The width of the extension does not matter.
  CHECK(Compare(ParsedCoords("mysql-bin.000123", 4), ParsedCoords("mysql-bin.123", 4)) ==
        CoordsOrder::kSame);
  CHECK(Compare(a, ParsedCoords("other-bin.000009", 900)) == CoordsOrder::kIncomparable);
  CHECK(Compare(ParsedCoords("mysql-bin.000010", 4), a) == CoordsOrder::kAfter);
}

const std::string kTestdata = LAGWATCH_TESTDATA_DIR;

TEST_CASE("ParseBinaryLogStatus reads the MySQL manuals' and the MariaDB KB's examples") {
  struct Case {
    const char* file;
    size_t columns;
    BinlogCoords coords;
    const char* do_db;
    std::optional<std::string> executed_gtid_set;
  };
  const Case cases[] = {
      // https://dev.mysql.com/doc/refman/8.4/en/show-binary-log-status.html (the same row as
      // https://dev.mysql.com/doc/refman/5.7/en/show-master-status.html and 8.0's and 9.x's)
      {"mysql-show-binary-log-status.txt",
       5,
       {"source-bin", 2, 1307},
       "test",
       "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"},
      // https://mariadb.com/kb/en/show-binlog-status/: no GTID set
      {"mariadb-kb-show-binlog-status.txt", 4, {"mariadb-bin", 16, 475}, "", std::nullopt},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    const QueryResult r = LoadVerticalResult(kTestdata + "/" + c.file);
    REQUIRE(r.columns.size() == c.columns);
    auto st = ParseBinaryLogStatus(r);
    REQUIRE(st.ok());
    CHECK(st->coords == c.coords);
    CHECK(st->do_db == c.do_db);
    CHECK(st->executed_gtid_set == c.executed_gtid_set);
  }
  auto mysql = ParseBinaryLogStatus(LoadVerticalResult(kTestdata + "/" + cases[0].file));
  CHECK(mysql->ignore_db == "manual, mysql");
}

TEST_CASE("ParseBinaryLogStatus: no row, missing columns, junk cells are data errors") {
  QueryResult r;
  r.columns = {"File", "Position"};
  CHECK(ParseBinaryLogStatus(r).status().code() == Status::Code::kDataError);  // binlog off
  for (auto [file, pos] : {std::pair<const char*, const char*>{"mysql-bin", "4"},
                           {"mysql-bin.000001", "lots"},
                           {"", ""},
                           {"mysql-bin.000001", "99999999999999999999999"}}) {
    r.rows = {{file, pos}};
    CHECK(ParseBinaryLogStatus(r).status().code() == Status::Code::kDataError);
  }
  r.rows = {{std::nullopt, std::nullopt}};
  CHECK(ParseBinaryLogStatus(r).status().code() == Status::Code::kDataError);
  r.rows = {{"mysql-bin.000001"}};  // a short row: no Position cell
  CHECK(ParseBinaryLogStatus(r).status().code() == Status::Code::kDataError);
  r.columns = {"File"};
  CHECK(ParseBinaryLogStatus(r).status().message().find("no File/Position") != std::string::npos);
}

}  // namespace
}  // namespace lagwatch
