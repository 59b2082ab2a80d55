// A statement's result set as text, as MysqlConn returns it, and lookups into it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/strings.h"

namespace lagwatch {

struct QueryResult {
  std::vector<std::string> columns;
  // NULL cells are nullopt.
  std::vector<std::vector<std::optional<std::string>>> rows;
  uint64_t affected_rows = 0;

  // Index of a column by name, or -1.
  int Column(std::string_view name) const;
};

// One row of a result, its cells looked up by column name (the servers' status rows: never by
// position, their columns differ by version). `r` must outlive it.
struct RowCells {
  const QueryResult& r;
  size_t row;

  // nullptr when there is no such column or the row is short of it; nullopt for SQL NULL.
  const std::optional<std::string>* Cell(std::string_view column) const {
    const int c = r.Column(column);
    const auto& cells = r.rows[row];
    return c < 0 || static_cast<size_t>(c) >= cells.size() ? nullptr : &cells[c];
  }
  // "" when missing or NULL.
  std::string Text(std::string_view column) const {
    auto v = Cell(column);
    return v && *v ? **v : std::string();
  }
  // nullopt when missing, NULL or not a number of type T.
  template <typename T>
  std::optional<T> Number(std::string_view column) const {
    auto v = Cell(column);
    return v && *v ? ParseInt<T>(**v) : std::nullopt;
  }
};

// The first row's cell in `column`: nullptr when there is no such column, no row, or the row is
// short of that cell; otherwise the cell, which is nullopt for SQL NULL.
const std::optional<std::string>* Cell(const QueryResult& r, std::string_view column);

// The first row's cell in `column` as text; "" when missing or NULL.
std::string CellText(const QueryResult& r, std::string_view column);

}  // namespace lagwatch
