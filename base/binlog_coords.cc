#include "base/binlog_coords.h"

#include "base/strings.h"

namespace lagwatch {

Result<BinlogCoords> ParseBinlogCoords(std::string_view file, uint64_t pos) {
  // ParseInt on an unsigned type takes digits only (std::from_chars: no sign, no space).
  const size_t dot = file.rfind('.');
  const auto seq = dot != std::string_view::npos && dot > 0
                       ? ParseInt<uint64_t>(file.substr(dot + 1))
                       : std::nullopt;
  if (!seq) {
    return Status::DataError("binary log file '" + EscapeControl(file) +
                             "' has no numeric extension (BASE.NUMBER)");
  }
  return BinlogCoords{std::string(file.substr(0, dot)), *seq, pos};
}

Result<BinlogCoords> ParseBinlogCoords(std::string_view file, std::string_view pos) {
  const auto p = ParseInt<uint64_t>(pos);
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
  st.file = CellText(result, "File");
  st.do_db = CellText(result, "Binlog_Do_DB");
  st.ignore_db = CellText(result, "Binlog_Ignore_DB");
  if (auto v = Cell(result, "Executed_Gtid_Set"); v && *v) st.executed_gtid_set = **v;
  return st;
}

}  // namespace lagwatch
