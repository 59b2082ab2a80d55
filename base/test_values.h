// For unit tests: moments on a fixed timeline, and positions (GTIDs, binary log coordinates)
// written as text.
#pragma once

#include <cstdint>
#include <string_view>

#include <doctest/doctest.h>

#include "base/binlog_coords.h"
#include "base/clock.h"
#include "base/gtid.h"
#include "base/position.h"

namespace lagwatch::testing {

// `ms` after a fixed monotonic origin (1,000 s, so that moments a little before it exist too).
inline MonoTime T(int ms) { return MonoTime(Millis(1'000'000 + ms)); }

// The GTID position `text` spells; the test stops there if it does not parse.
inline GtidPos P(std::string_view text) {
  auto r = GtidPos::Parse(text);
  REQUIRE(r.ok());
  return r.value();
}

// The binary log coordinates `file`:`pos` as a position; the test stops there if they do not parse.
inline Position Coords(std::string_view file, uint64_t pos) {
  auto c = ParseBinlogCoords(file, pos);
  REQUIRE(c.ok());
  return Position(*c);
}

}  // namespace lagwatch::testing
