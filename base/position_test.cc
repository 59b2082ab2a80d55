#include "base/position.h"

#include <doctest/doctest.h>

#include "base/test_values.h"

namespace lagwatch {
namespace {

using testing::Coords;
Position Mariadb(const char* s) { return GtidPos::Parse(s).value(); }
Position Mysql(const char* s) { return GtidSet::Parse(s).value(); }

constexpr char kUuidA[] = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

TEST_CASE("positions of each kind compare as 'has everything the other had'") {
  CHECK(Mariadb("0-1-10,1-2-5").Compare(Mariadb("0-1-9,1-2-5")) == Inclusion::kIncludes);
  CHECK(Mariadb("0-1-10").Compare(Mariadb("0-1-10,1-2-1")) == Inclusion::kLacks);

  const std::string a = kUuidA;
  CHECK(Mysql((a + ":1-10").c_str()).Compare(Mysql((a + ":1-5:7").c_str())) ==
        Inclusion::kIncludes);
  // A gap: 6 is missing, though the highest number is reached.
  CHECK(Mysql((a + ":1-5:7-10").c_str()).Compare(Mysql((a + ":1-6").c_str())) == Inclusion::kLacks);

  // Coordinates: file sequence first, then the offset; rotation orders by the number.
  CHECK(Coords("bin.000002", 4).Compare(Coords("bin.000001", 9000)) == Inclusion::kIncludes);
  CHECK(Coords("bin.000001", 9000).Compare(Coords("bin.000001", 9000)) == Inclusion::kIncludes);
  CHECK(Coords("bin.000001", 8999).Compare(Coords("bin.000001", 9000)) == Inclusion::kLacks);
  CHECK(Coords("bin.999999", 9000).Compare(Coords("bin.1000000", 4)) == Inclusion::kLacks);
  CHECK(Coords("other.000009", 9000).Compare(Coords("bin.000001", 4)) == Inclusion::kIncomparable);
}

TEST_CASE("positions of different kinds are never comparable") {
  const Position m = Mariadb("0-1-10");
  const Position y = Mysql((std::string(kUuidA) + ":1-10").c_str());
  const Position c = Coords("bin.000001", 4);
  CHECK(m.Compare(y) == Inclusion::kIncomparable);
  CHECK(y.Compare(c) == Inclusion::kIncomparable);
  CHECK(c.Compare(m) == Inclusion::kIncomparable);
  CHECK_FALSE(m.Includes(c));
  CHECK(m.kind() == PositionsKind::kMariaDbGtid);
  CHECK(y.kind() == PositionsKind::kMysqlGtid);
  CHECK(c.kind() == PositionsKind::kBinlog);
}

TEST_CASE("behind in an older binary log proves nothing missing; within one file it does") {
  // The first events of a new file and the Rotate event at the end of the old one are no
  // transactions: a replica at the end of file 1 may lack nothing while the primary is in file 2.
  CHECK_FALSE(Coords("bin.000001", 9000).BehindProvesMissing(Coords("bin.000002", 385)));
  CHECK(Coords("bin.000002", 385).BehindProvesMissing(Coords("bin.000002", 700)));
  CHECK(Mariadb("0-1-1").BehindProvesMissing(Mariadb("0-1-2")));
}

TEST_CASE("positions print as the server does, and kind names round-trip") {
  CHECK(Coords("mysql-bin.000012", 4567).ToString() == "mysql-bin.000012:4567");
  CHECK(Coords("mysql-bin.1000000", 4).ToString() == "mysql-bin.1000000:4");
  CHECK(Mariadb("0-1-7").ToString() == "0-1-7");
  for (PositionsKind k : {PositionsKind::kNone, PositionsKind::kMariaDbGtid,
                          PositionsKind::kMysqlGtid, PositionsKind::kBinlog}) {
    CHECK(ParsePositionsKind(PositionsKindName(k)) == k);
  }
  CHECK_FALSE(ParsePositionsKind("auto"));
  CHECK_FALSE(ParsePositionsKind("MARIADB_GTID"));
}

}  // namespace
}  // namespace lagwatch
