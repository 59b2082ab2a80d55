#include "base/strings.h"

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

TEST_CASE("IsToken: length bounds and the allowed characters, nothing else") {
  CHECK(IsToken("abc_XYZ-09", "_-", 1, 10));
  CHECK_FALSE(IsToken("abc_XYZ-09", "_-", 1, 9));  // too long
  CHECK_FALSE(IsToken("", "_", 1, 5));
  CHECK(IsToken("", "_", 0, 5));
  CHECK_FALSE(IsToken("a.b", "_", 1, 5));
  for (const std::string_view bad : {"a b", "a`b", "a'b", "a;b", "a\nb", "a/b", "é"}) {
    CAPTURE(bad);
    CHECK_FALSE(IsToken(bad, "_.:-", 1, 64));
  }
  CHECK_FALSE(IsToken(std::string_view("a\0b", 3), "_", 1, 5));
}

TEST_CASE("EscapeControl: control bytes as \\xNN, everything else kept") {
  CHECK(EscapeControl("plain text: 100% ok") == "plain text: 100% ok");
  CHECK(EscapeControl("a\nb\r\tc") == "a\\x0ab\\x0d\\x09c");
  CHECK(EscapeControl("\x1b[31mred\x7f") == "\\x1b[31mred\\x7f");
  CHECK(EscapeControl(std::string_view("nul\0end", 7)) == "nul\\x00end");
  CHECK(EscapeControl("caf\xc3\xa9 \\x41") == "caf\xc3\xa9 \\x41");  // UTF-8 and backslashes kept
}

TEST_CASE("ParseListenAddress: names, IPv4 and bracketed IPv6 with a port up to 65535") {
  auto v4 = ParseListenAddress("127.0.0.1:9877");
  REQUIRE(v4.has_value());
  CHECK(v4->host == "127.0.0.1");
  CHECK(v4->port == 9877);
  auto v6 = ParseListenAddress("[::1]:80");
  REQUIRE(v6.has_value());
  CHECK(v6->host == "::1");
  CHECK(v6->port == 80);
  CHECK(ParseListenAddress("db-mon1.example.com:65535").has_value());
  CHECK(ParseListenAddress("0.0.0.0:0").has_value());
  for (const std::string_view bad :
       {"9877", ":9877", "host:", "host:65536", "host:123456", "host:-1", "host:+80", "::1:80",
        "[::1]", "[::g]:80", "[]:80", "[::1:80", "a b:80", "a/b:80", "host:80/", "host: 80"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseListenAddress(bad).has_value());
  }
  CHECK_FALSE(ParseListenAddress(std::string(254, 'a') + ":80").has_value());
  CHECK(ParseListenAddress(std::string(253, 'a') + ":80").has_value());
  // Long input is rejected in one pass (std::regex overflowed the stack on ~40 KB).
  CHECK_FALSE(ParseListenAddress(std::string(1 << 20, 'a') + ":80").has_value());
}

}  // namespace
}  // namespace lagwatch
