#include "client/read_your_writes.h"

namespace lagwatch::client {

const char* TokenStatement(PositionsKind kind, const ServerFlavor& flavor) {
  return kind == PositionsKind::kBinlog ? BinaryLogStatusStatement(flavor) : TokenQuery(kind);
}

const char* TokenQuery(PositionsKind kind) {
  switch (kind) {
    case PositionsKind::kMariaDbGtid:
      return "SELECT @@last_gtid";
    case PositionsKind::kMysqlGtid:
      return "SELECT @@GLOBAL.gtid_executed";
    case PositionsKind::kBinlog:
    case PositionsKind::kNone:
      break;
  }
  return nullptr;
}

Result<std::string> CatchUpQuery(const Position& token) {
  const std::string text = token.ToString();
  if (text.empty() || text.find_first_of("'\\") != std::string::npos) {
    return Status::InvalidArgument("token cannot be quoted: " + text);
  }
  switch (token.kind()) {
    case PositionsKind::kMariaDbGtid:
      return "SELECT MASTER_GTID_WAIT('" + text + "', 0)";
    case PositionsKind::kMysqlGtid:
      return "SELECT GTID_SUBSET('" + text + "', @@GLOBAL.gtid_executed)";
    case PositionsKind::kBinlog:
    case PositionsKind::kNone:
      break;
  }
  return Status::InvalidArgument(
      "binary log coordinates have no zero-timeout check (MASTER_POS_WAIT's timeout 0 waits "
      "forever): read from the primary");
}

bool CatchUpReached(PositionsKind kind, std::string_view value) {
  switch (kind) {
    case PositionsKind::kMariaDbGtid:
      return value == "0";
    case PositionsKind::kMysqlGtid:
      return value == "1";
    case PositionsKind::kBinlog:
    case PositionsKind::kNone:
      break;
  }
  return false;
}

}  // namespace lagwatch::client
