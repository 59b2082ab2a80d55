#include "base/query_result.h"

namespace lagwatch {

int QueryResult::Column(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return static_cast<int>(i);
  }
  return -1;
}

const std::optional<std::string>* Cell(const QueryResult& r, std::string_view column) {
  int i = r.Column(column);
  if (i < 0 || r.rows.empty() || static_cast<size_t>(i) >= r.rows[0].size()) return nullptr;
  return &r.rows[0][static_cast<size_t>(i)];
}

std::string CellText(const QueryResult& r, std::string_view column) {
  auto* c = Cell(r, column);
  return c && *c ? **c : std::string();
}

}  // namespace lagwatch
