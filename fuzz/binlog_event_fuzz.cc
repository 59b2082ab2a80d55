// Fuzzes the binary log stream's reader (base/binlog_event.h). The input's first byte chooses the
// positions kind and whether events carry a checksum; the rest is a run of events, each preceded
// by a 2-byte little-endian length, fed to one BinlogDecoder as a dump would. Also decodes the
// whole rest as a binary GTID set. Properties: a rejection is a DataError and breaks the decoder
// for good (every later event is refused); a step's position is the decoder's and includes the
// one before it; an accepted GTID set encodes back to bytes that decode to the same set.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/binlog_event.h"
#include "base/gtid.h"
#include "base/gtid_set.h"
#include "fuzz/check.h"

namespace lagwatch {
namespace {

Position StartOf(PositionsKind kind) {
  switch (kind) {
    case PositionsKind::kMysqlGtid:
      return Position(GtidSet::Parse("aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-5").value());
    case PositionsKind::kBinlog:
      return Position(BinlogCoords{"mysql-bin", 3, 400});
    default:
      return Position(GtidPos::Parse("0-1-4").value());
  }
}

void Run(std::string_view in) {
  if (in.empty()) return;
  const uint8_t mode = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  auto set = GtidSet::DecodeBinary(in);
  if (set.ok()) {
    auto bytes = set->EncodeBinary();
    FUZZ_CHECK(bytes.ok(), bytes.status().ToString());
    auto again = GtidSet::DecodeBinary(*bytes);
    FUZZ_CHECK(again.ok() && *again == *set, "a decoded set does not survive its encoding");
  } else {
    FUZZ_CHECK(set.status().code() == Status::Code::kDataError, set.status().ToString());
  }
  const PositionsKind kinds[] = {PositionsKind::kMariaDbGtid, PositionsKind::kBinlog,
                                 PositionsKind::kMysqlGtid};
  const PositionsKind kind = kinds[mode % 3];
  BinlogDecoder decoder(kind, StartOf(kind), (mode & 0x10) != 0);
  bool broken = false;
  int t = 0;
  while (in.size() >= 2) {
    const size_t len =
        static_cast<uint8_t>(in[0]) | static_cast<size_t>(static_cast<uint8_t>(in[1])) << 8;
    in.remove_prefix(2);
    const std::string_view ev = in.substr(0, len);
    in.remove_prefix(ev.size());
    const Position before = decoder.position();
    auto step = decoder.Feed(ev, MonoTime(Millis(++t)));
    if (!step.ok()) {
      FUZZ_CHECK(step.status().code() == Status::Code::kDataError, step.status().ToString());
      FUZZ_CHECK(decoder.position() == before, "a refused event moved the position");
      broken = true;
      continue;
    }
    FUZZ_CHECK(!broken, "an event was read after the decoder broke");
    if (step->position) {
      FUZZ_CHECK(*step->position == decoder.position(), "a step's position is not the decoder's");
      FUZZ_CHECK(step->position->Includes(before),
                 before.ToString() + " -> " + step->position->ToString());
    }
  }
}

}  // namespace
}  // namespace lagwatch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lagwatch::Run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
