// Fuzzes GtidSet::Parse (base/gtid_set.h). The input is one GTID set's text; with a '|' in
// it, the text on each side of the first '|' is also parsed, and the two sets are compared.
// Properties of one set: a rejection is a DataError; an accepted set prints (ToString) as text
// that parses back to the same set, and prints the same again; it contains itself and the empty
// set; it is empty exactly when it prints as "" and counts no transaction. Of two sets: each
// contains the other exactly when they are equal, and the set of both texts joined by a comma
// (the manual's GTID_UNION) contains each, and equals one that contains the other.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/gtid_set.h"
#include "fuzz/check.h"

namespace lagwatch {
namespace {

std::optional<GtidSet> Accepted(std::string_view text) {
  Result<GtidSet> set = GtidSet::Parse(text);
  if (set.ok()) return std::move(set).value();
  FUZZ_CHECK(set.status().code() == Status::Code::kDataError, set.status().ToString());
  FUZZ_CHECK(set.status().message().starts_with("malformed GTID set \""), set.status().message());
  return std::nullopt;
}

void CheckOne(const GtidSet& set) {
  const std::string text = set.ToString();
  std::optional<GtidSet> reread = Accepted(text);
  FUZZ_CHECK(reread.has_value(), "its own text is rejected: " + text);
  FUZZ_CHECK(*reread == set, "its own text is another set: " + text);
  FUZZ_CHECK(reread->ToString() == text, "printed twice differs: " + text);
  FUZZ_CHECK(set.Contains(set), "does not contain itself: " + text);
  FUZZ_CHECK(set.Contains(GtidSet()), "does not contain the empty set: " + text);
  FUZZ_CHECK(GtidSet().Contains(set) == set.empty(), text);
  FUZZ_CHECK(set.empty() == text.empty() && set.empty() == (set.Count() == 0), text);
}

void CheckTwo(const GtidSet& a, const GtidSet& b, std::string_view a_text,
              std::string_view b_text) {
  const std::string pair = a.ToString() + " | " + b.ToString();
  FUZZ_CHECK((a.Contains(b) && b.Contains(a)) == (a == b), pair);
  const std::string joined = std::string(a_text) + "," + std::string(b_text);
  Result<GtidSet> both = GtidSet::Parse(joined);
  if (!both.ok()) {
    // Two sets' texts joined by a comma are a set's text, unless there is too much of it.
    FUZZ_CHECK(
        joined.size() > GtidSet::kMaxTextBytes || both.status().message().ends_with(" intervals"),
        both.status().ToString());
    return;
  }
  FUZZ_CHECK(both->Contains(a) && both->Contains(b), pair);
  if (a.Contains(b)) FUZZ_CHECK(*both == a, pair);
  if (b.Contains(a)) FUZZ_CHECK(*both == b, pair);
}

}  // namespace
}  // namespace lagwatch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using lagwatch::GtidSet;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (std::optional<GtidSet> whole = lagwatch::Accepted(input)) lagwatch::CheckOne(*whole);
  const size_t bar = input.find('|');
  if (bar == std::string_view::npos) return 0;
  const std::string_view left = input.substr(0, bar);
  const std::string_view right = input.substr(bar + 1);
  std::optional<GtidSet> a = lagwatch::Accepted(left);
  std::optional<GtidSet> b = lagwatch::Accepted(right);
  if (!a || !b) return 0;
  lagwatch::CheckOne(*a);
  lagwatch::CheckOne(*b);
  lagwatch::CheckTwo(*a, *b, left, right);
  return 0;
}
