// Fuzzes GtidPos::Parse (base/gtid.h). The input is one position's text; if it contains '|',
// the parts before and after the first '|' are also parsed as two positions to compare.
// Properties: a rejection is DataError; an accepted position prints (ToString) as text that
// parses back to the same position and prints the same again; Reaches is reflexive, everything
// reaches the empty position, and two positions reach each other exactly when they are equal.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/gtid.h"
#include "fuzz/check.h"

namespace lagwatch {
namespace {

// Parses `text` and checks what holds for any single position.
Result<GtidPos> ParseChecked(std::string_view text) {
  Result<GtidPos> pos = GtidPos::Parse(text);
  if (!pos.ok()) {
    FUZZ_CHECK(pos.status().code() == Status::Code::kDataError, pos.status().ToString());
    return pos;
  }
  const std::string printed = pos->ToString();
  Result<GtidPos> again = GtidPos::Parse(printed);
  FUZZ_CHECK(again.ok(), "\"" + printed + "\" does not parse: " + again.status().ToString());
  FUZZ_CHECK(*again == *pos, "\"" + printed + "\" parses to another position");
  FUZZ_CHECK(again->ToString() == printed, again->ToString() + " != " + printed);
  FUZZ_CHECK(pos->empty() == printed.empty(), printed);
  FUZZ_CHECK(pos->Reaches(*pos), printed);
  FUZZ_CHECK(pos->Reaches(GtidPos()), printed);
  FUZZ_CHECK(GtidPos().Reaches(*pos) == pos->empty(), printed);
  return pos;
}

}  // namespace
}  // namespace lagwatch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  lagwatch::ParseChecked(text);
  size_t bar = text.find('|');
  if (bar == std::string_view::npos) return 0;
  auto a = lagwatch::ParseChecked(text.substr(0, bar));
  auto b = lagwatch::ParseChecked(text.substr(bar + 1));
  if (!a.ok() || !b.ok()) return 0;
  const std::string both = a->ToString() + " | " + b->ToString();
  FUZZ_CHECK((*a == *b) == (*b == *a), both);
  FUZZ_CHECK((*a == *b) == (a->Reaches(*b) && b->Reaches(*a)), both);
  return 0;
}
