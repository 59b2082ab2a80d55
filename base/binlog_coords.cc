#include "base/binlog_coords.h"

#include "base/strings.h"

namespace lagwatch {

Result<BinlogCoords> ParseBinlogCoords(std::string_view file, uint64_t pos) {
  const size_t dot = file.rfind('.');
  const std::string_view digits =
      dot == std::string_view::npos ? std::string_view() : file.substr(dot + 1);
  const bool all_digits =
      !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
  const auto seq = all_digits && dot > 0 ? ParseInt<uint64_t>(digits) : std::nullopt;
  if (!seq) {
    return Status::DataError("binary log file '" + EscapeControl(file) +
                             "' has no numeric extension (BASE.NUMBER)");
  }
  return BinlogCoords{std::string(file.substr(0, dot)), *seq, pos};
}

Result<BinlogCoords> ParseBinlogCoords(std::string_view file, std::string_view pos) {
  const auto p = pos.find_first_not_of("0123456789") == std::string_view::npos
                     ? ParseInt<uint64_t>(pos)
                     : std::nullopt;
  if (!p) {
    return Status::DataError("binary log position '" + EscapeControl(pos) + "' is not a number");
  }
  return ParseBinlogCoords(file, *p);
}

CoordsOrder Compare(const BinlogCoords& a, const BinlogCoords& b) {
  if (a.base != b.base) return CoordsOrder::kIncomparable;
  if (a.seq != b.seq) return a.seq < b.seq ? CoordsOrder::kBefore : CoordsOrder::kAfter;
  if (a.pos != b.pos) return a.pos < b.pos ? CoordsOrder::kBefore : CoordsOrder::kAfter;
  return CoordsOrder::kSame;
}

bool ReachedOrPassed(const BinlogCoords& executed, const BinlogCoords& target) {
  const CoordsOrder order = Compare(executed, target);
  return order == CoordsOrder::kSame || order == CoordsOrder::kAfter;
}

Result<BinaryLogStatus> ParseBinaryLogStatus(const QueryResult& result) {
  if (result.rows.empty()) {
    return Status::DataError("binary log status has no row: binary logging is off");
  }
  if (result.Column("File") < 0 || result.Column("Position") < 0) {
    return Status::DataError("binary log status has no File/Position");
  }
  auto coords = ParseBinlogCoords(CellText(result, "File"), CellText(result, "Position"));
  if (!coords.ok()) return coords.status();
  BinaryLogStatus st;
  st.coords = std::move(*coords);
  st.do_db = CellText(result, "Binlog_Do_DB");
  st.ignore_db = CellText(result, "Binlog_Ignore_DB");
  if (auto v = Cell(result, "Executed_Gtid_Set"); v && *v) st.executed_gtid_set = **v;
  return st;
}

}  // namespace lagwatch
