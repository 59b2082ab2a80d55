// Small, non-throwing parsers for text that comes from servers and routers.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
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

// True when `s` has `min`..`max` characters, each an ASCII letter or digit or one of `extra`.
// (A loop, not std::regex: that recurses once per character and so can overflow the stack.)
inline bool IsToken(std::string_view s, std::string_view extra, size_t min, size_t max) {
  if (s.size() < min || s.size() > max) return false;
  for (char c : s) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && extra.find(c) == std::string_view::npos) return false;
  }
  return true;
}

// Appends byte `c` as the four characters \xNN (lower-case hex).
inline void AppendHexEscape(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

// `s` with every ASCII control byte (below 0x20, and 0x7f) written as \xNN, so text from a
// server or a router can neither break a log line in two nor send escape sequences to a
// terminal. Other bytes, UTF-8 included, are kept.
inline std::string EscapeControl(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out += ch;
    } else {
      AppendHexEscape(out, c);
    }
  }
  return out;
}

struct ListenAddress {
  std::string host;  // without the brackets of an IPv6 address
  int port = 0;      // 0..65535
};

// "HOST:PORT": HOST an IPv6 address in brackets ("[::1]") or a name or IPv4 address
// ([A-Za-z0-9.-], at most 253 characters); PORT 1 to 5 digits, at most 65535. nullopt otherwise.
inline std::optional<ListenAddress> ParseListenAddress(std::string_view s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == s.size() || s.size() - colon - 1 > 5) {
    return std::nullopt;
  }
  auto port = ParseInt<uint32_t>(s.substr(colon + 1));  // unsigned: no sign
  if (!port || *port > 65535) return std::nullopt;
  std::string_view host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (!IsToken(host, ":", 1, 253)) return std::nullopt;  // hex digits and ':' only
    for (char c : host) {
      if ((c >= 'g' && c <= 'z') || (c >= 'G' && c <= 'Z')) return std::nullopt;
    }
  } else if (!IsToken(host, ".-", 1, 253)) {
    return std::nullopt;
  }
  return ListenAddress{std::string(host), static_cast<int>(*port)};
}

// `s` without leading and trailing spaces, tabs and newlines.
inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// ASCII lower case (identifiers, keywords, hex digits; other bytes are left as they are, unlike
// std::tolower, which depends on the locale).
inline char AsciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = AsciiLower(c);
  return out;
}

}  // namespace lagwatch
