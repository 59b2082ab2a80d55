// A statement's result set as text, as MysqlConn returns it, and lookups into it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lagwatch {

struct QueryResult {
  std::vector<std::string> columns;
  // NULL cells are nullopt.
  std::vector<std::vector<std::optional<std::string>>> rows;
  uint64_t affected_rows = 0;

  // Index of a column by name, or -1.
  int Column(std::string_view name) const;
};

// The first row's cell in `column`: nullptr when there is no such column, no row, or the row is
// short of that cell; otherwise the cell, which is nullopt for SQL NULL.
const std::optional<std::string>* Cell(const QueryResult& r, std::string_view column);

// The first row's cell in `column` as text; "" when missing or NULL.
std::string CellText(const QueryResult& r, std::string_view column);

}  // namespace lagwatch
