#include "base/position.h"

#include <cstdio>

namespace lagwatch {
namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

Inclusion FromBool(bool includes) { return includes ? Inclusion::kIncludes : Inclusion::kLacks; }

}  // namespace

const char* PositionsKindName(PositionsKind kind) {
  switch (kind) {
    case PositionsKind::kMariaDbGtid:
      return kPositionsMariaDbGtid;
    case PositionsKind::kMysqlGtid:
      return kPositionsMysqlGtid;
    case PositionsKind::kBinlog:
      return kPositionsBinlog;
    case PositionsKind::kNone:
      break;
  }
  return kPositionsNone;
}

std::optional<PositionsKind> ParsePositionsKind(std::string_view name) {
  for (PositionsKind k : {PositionsKind::kNone, PositionsKind::kMariaDbGtid,
                          PositionsKind::kMysqlGtid, PositionsKind::kBinlog}) {
    if (name == PositionsKindName(k)) return k;
  }
  return std::nullopt;
}

const char* PrimaryPositionVariable(PositionsKind kind) {
  switch (kind) {
    case PositionsKind::kMariaDbGtid:
      return "@@gtid_binlog_pos";
    case PositionsKind::kMysqlGtid:
      return "@@GLOBAL.gtid_executed";
    case PositionsKind::kBinlog:
    case PositionsKind::kNone:
      break;
  }
  return nullptr;
}

const char* ReplicaPositionVariable(PositionsKind kind) {
  return kind == PositionsKind::kMariaDbGtid ? "@@gtid_slave_pos" : PrimaryPositionVariable(kind);
}

PositionsKind Position::kind() const {
  return std::visit(Overloaded{[](const GtidPos&) { return PositionsKind::kMariaDbGtid; },
                               [](const GtidSet&) { return PositionsKind::kMysqlGtid; },
                               [](const BinlogCoords&) { return PositionsKind::kBinlog; }},
                    v_);
}

Inclusion Position::Compare(const Position& other) const {
  if (v_.index() != other.v_.index()) return Inclusion::kIncomparable;
  if (const auto* p = std::get_if<GtidPos>(&v_)) {
    return FromBool(p->Reaches(std::get<GtidPos>(other.v_)));
  }
  if (const auto* s = std::get_if<GtidSet>(&v_)) {
    return FromBool(s->Contains(std::get<GtidSet>(other.v_)));
  }
  switch (lagwatch::Compare(std::get<BinlogCoords>(v_), std::get<BinlogCoords>(other.v_))) {
    case CoordsOrder::kBefore:
      return Inclusion::kLacks;
    case CoordsOrder::kSame:
    case CoordsOrder::kAfter:
      return Inclusion::kIncludes;
    case CoordsOrder::kIncomparable:
      break;
  }
  return Inclusion::kIncomparable;
}

bool Position::BehindProvesMissing(const Position& other) const {
  const auto* mine = std::get_if<BinlogCoords>(&v_);
  const auto* theirs = std::get_if<BinlogCoords>(&other.v_);
  if (!mine || !theirs) return true;
  return mine->base == theirs->base && mine->seq == theirs->seq;
}

std::string Position::ToString() const {
  return std::visit(Overloaded{[](const GtidPos& p) { return p.ToString(); },
                               [](const GtidSet& s) { return s.ToString(); },
                               [](const BinlogCoords& c) {
                                 char seq[32];
                                 std::snprintf(seq, sizeof seq, "%06llu",
                                               static_cast<unsigned long long>(c.seq));
                                 return c.base + "." + seq + ":" + std::to_string(c.pos);
                               }},
                    v_);
}

}  // namespace lagwatch
