#include "base/gtid.h"

#include <doctest/doctest.h>

#include "base/test_values.h"

namespace lagwatch {
namespace {

using testing::P;

TEST_CASE("GTID positions parse and print back") {
  CHECK(P("0-1-120").ToString() == "0-1-120");
  CHECK(P("1-2-7,0-1-120").ToString() == "0-1-120,1-2-7");
  CHECK(P("").empty());
  CHECK(P(" 0-1-5 ").ToString() == "0-1-5");
}

TEST_CASE("malformed GTID positions are data errors") {
  for (const char* bad :
       {"0-1", "x-1-2", "0-1-2,", "0-1-2,0-3-4", "0--2", "0-1-99999999999999999999", "-1-1-1"}) {
    INFO(std::string(bad));
    auto r = GtidPos::Parse(bad);
    CHECK_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kDataError);
  }
}

TEST_CASE("a malformed position's message quotes the whole text, control bytes escaped") {
  auto r = GtidPos::Parse("0-1-2,0-2-x\n1");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("\"0-1-2,0-2-x\\x0a1\"") != std::string::npos);
}

TEST_CASE("a position reaches another when every domain's seq is at least as high") {
  CHECK(P("0-1-10").Reaches(P("0-1-10")));
  CHECK(P("0-1-11").Reaches(P("0-1-10")));
  CHECK_FALSE(P("0-1-9").Reaches(P("0-1-10")));
  // Server ids do not order transactions; seq numbers within a domain do.
  CHECK(P("0-2-10").Reaches(P("0-1-10")));
  // Every domain of the target must be covered.
  CHECK_FALSE(P("0-1-10").Reaches(P("0-1-10,1-1-3")));
  CHECK(P("0-1-10,1-1-3").Reaches(P("0-1-10")));
  CHECK_FALSE(P("0-1-10,1-1-2").Reaches(P("0-1-9,1-1-3")));
  CHECK(P("").Reaches(P("")));
  CHECK_FALSE(P("").Reaches(P("0-1-1")));
}

}  // namespace
}  // namespace lagwatch
