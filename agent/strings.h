// Small, non-throwing parsers for text that comes from servers and routers.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lagwatch {

// The whole of `s` as a base-10 integer of type T, or nullopt (empty, junk, sign, overflow).
template <typename T>
std::optional<T> ParseInt(std::string_view s) {
  T v{};
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace lagwatch
