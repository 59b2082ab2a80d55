// A QueryResult from the vertical layout the mysql client prints for a statement ended with \G,
// as the MySQL manual and the MariaDB KB print their examples. For tests and fixtures
// (base/testdata/): server answers are never text like this.
//
//   # a comment line (a '#' first)
//   mysql> SHOW REPLICA STATUS\G            (a prompt line: skipped)
//   *************************** 1. row ***************************   (starts a row)
//                Replica_IO_State: Waiting for source to send event
//               Replicate_Do_DB:            ("Name: value": the value after ": ", "" if none)
//           SQL_Remaining_Delay: NULL       (NULL is SQL NULL)
//   1 row in set (0.00 sec)                 (skipped)
//
// Column names come from the first row; a later row's cells are matched to them by name, and a
// cell a row lacks is NULL. Lines that are none of the above are skipped.
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "base/query_result.h"

namespace lagwatch {

inline QueryResult ParseVerticalResult(std::string_view text) {
  QueryResult r;
  bool in_row = false;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    const size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos || line[start] == '#') continue;
    line.remove_prefix(start);
    if (line.starts_with("****") && line.find(". row") != std::string_view::npos) {
      in_row = true;
      r.rows.emplace_back(r.columns.size());
      continue;
    }
    const size_t colon = line.find(':');
    if (!in_row || line.starts_with("mysql>") || colon == std::string_view::npos) continue;
    const std::string name(line.substr(0, colon));
    std::string_view value = line.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
    int col = r.Column(name);
    if (col < 0) {
      if (r.rows.size() > 1) continue;  // columns are the first row's
      r.columns.push_back(name);
      r.rows.back().emplace_back();
      col = static_cast<int>(r.columns.size()) - 1;
    }
    r.rows.back()[col] =
        value == "NULL" ? std::nullopt : std::optional<std::string>(std::string(value));
  }
  return r;
}

// ParseVerticalResult of a whole file; an empty result when it cannot be read.
inline QueryResult LoadVerticalResult(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseVerticalResult(text.str());
}

}  // namespace lagwatch
