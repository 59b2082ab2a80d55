// Shared by the fuzz targets: property checks and the splitting of an input into lines and cells.
// A failed check prints what broke and aborts, which libFuzzer reports as a crash (and saves the
// input) and the replay tests (replay_main.cc) as a failed test.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace lagwatch::fuzz {

[[noreturn]] inline void Fail(const char* file, int line, const char* expr,
                              const std::string& detail) {
  std::fprintf(stderr, "%s:%d: property failed: %s\n  %s\n", file, line, expr, detail.c_str());
  std::abort();
}

// `s` split at every `sep`: n separators give n + 1 parts (an empty input gives one empty part).
inline std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    size_t at = s.find(sep);
    parts.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + 1);
  }
}

// The lines of a text input; one final newline ends the last line rather than starting another.
inline std::vector<std::string_view> Lines(std::string_view s) {
  if (s.ends_with('\n')) s.remove_suffix(1);
  return Split(s, '\n');
}

}  // namespace lagwatch::fuzz

// FUZZ_CHECK(condition, detail): `detail` (a std::string expression) is only evaluated on failure.
#define FUZZ_CHECK(cond, detail)                                              \
  do {                                                                        \
    if (!(cond)) ::lagwatch::fuzz::Fail(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)
