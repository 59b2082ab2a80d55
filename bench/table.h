// A small table renderer shared by the benchmarks' reports: aligned text for the terminal and
// Markdown for the results files.
#pragma once

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace lagwatch::bench {

// Columns of a terminal table line up by characters, not bytes ("≤" is three bytes).
inline size_t DisplayWidth(const std::string& s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// A table as rows of cells; the first row is the header. Columns after the first `left_cols`
// are right-aligned in text.
struct Table {
  std::vector<std::vector<std::string>> rows;
  size_t left_cols = 2;

  std::string Text(const std::string& indent = "") const {
    std::vector<size_t> width;
    for (const auto& r : rows) {
      width.resize(std::max(width.size(), r.size()), 0);
      for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], DisplayWidth(r[c]));
    }
    std::ostringstream out;
    for (const auto& r : rows) {
      std::string line = indent;
      for (size_t c = 0; c < r.size(); ++c) {
        const std::string pad(width[c] - DisplayWidth(r[c]), ' ');
        if (c) line += "  ";
        line += c < left_cols ? r[c] + pad : pad + r[c];
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
    }
    return out.str();
  }

  std::string Markdown() const {
    std::ostringstream out;
    for (size_t i = 0; i < rows.size(); ++i) {
      out << "|";
      for (const auto& cell : rows[i]) out << " " << cell << " |";
      out << "\n";
      if (i == 0) {
        out << "|";
        for (size_t c = 0; c < rows[i].size(); ++c) out << (c < left_cols ? "---|" : "---:|");
        out << "\n";
      }
    }
    return out.str();
  }
};

// `v` with `decimals` decimals; a value that rounds to zero never shows as "-0" or "-0.0".
inline std::string Num(double v, int decimals = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

}  // namespace lagwatch::bench
