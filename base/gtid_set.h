// MySQL GTID sets: the text of @@GLOBAL.gtid_executed and SHOW MASTER STATUS's Executed_Gtid_Set,
// e.g. "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,\n2174b383-5441-11e8-b90a-c80aa9429562:1-3",
// and the inclusion "the replica has every transaction the primary had". Values;
// thread-compatible.
//
// The format, as MySQL 8.4 reads it (GTID Format and Storage, "GTID Sets":
// https://dev.mysql.com/doc/refman/8.4/en/replication-gtids-concepts.html; and the parser itself,
// Gtid_set::add_gtid_text in sql/rpl_gtid_set.cc of github.com/mysql/mysql-server, with
// Tsid::from_cstring in libs/mysql/gtid/tsid.cpp, Tag::from_cstring in libs/mysql/gtid/tag.cpp,
// Uuid::parse in libs/mysql/gtid/uuid.cpp and tag_max_length in libs/mysql/gtid/gtid_constants.h):
//
//   set      := member? (',' member?)*          empty members (",,", a trailing ',') are allowed
//   member   := uuid (':' item)*                a uuid with no interval adds nothing
//   item     := tag | interval                  a tag applies to the intervals after it, up to the
//                                               next tag; the intervals before any tag are untagged
//   uuid     := 8-4-4-4-12 hex digits, either case
//   tag      := [A-Za-z_][A-Za-z0-9_]{0,31}     case-insensitive
//   interval := n | n '-' m                     1 <= n <= m <= 2^63 - 2 (MySQL's GNO_END,
//   INT64_MAX,
//                                               is one past the largest transaction number)
//
// ASCII whitespace (newlines included: MySQL prints ",\n" between uuids) may stand between any
// two tokens. The same uuid (and tag) may appear more than once, and intervals may come in any
// order, overlap or touch: the set is their union. Where MySQL is laxer than this parser it is
// about text no server prints, and lagwatch rejects it: numbers are decimal digits with no
// leading zero or sign (MySQL's strtoll with base 0 would read "010" as 8 and "0x1f" as 31), an
// interval "n-m" with m < n (MySQL skips it silently), and an item that is only whitespace.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace lagwatch {

class GtidSet {
 public:
  // Bounds on hostile input: text longer than this is rejected before it is read...
  static constexpr size_t kMaxTextBytes = size_t{1} << 20;
  // ...and so is text with more intervals than this (counted as written, before merging).
  static constexpr size_t kMaxIntervals = size_t{1} << 16;
  // The largest transaction number MySQL accepts.
  static constexpr uint64_t kMaxGno = 9223372036854775806u;

  // The empty set.
  GtidSet() = default;

  // Parses a GTID set's text as above; empty (or blank) text is the empty set. A DataError names
  // what is wrong and where, with the text quoted (control bytes escaped, cut at 80 bytes).
  // Never throws; time linear in the text but for sorting its intervals.
  static Result<GtidSet> Parse(std::string_view text);

  // True when every transaction of `other` is in this set: the replica whose set this is has
  // applied everything `other` (a primary's sample) had. O(size of both).
  bool Contains(const GtidSet& other) const;

  bool empty() const { return sources_.empty(); }
  // The number of transactions in the set, saturating at UINT64_MAX.
  uint64_t Count() const;
  bool operator==(const GtidSet& other) const = default;

  // Adds the transactions first..last (inclusive) of the untagged source `uuid`, as a GTID event
  // of the binary log stream does (base/binlog_event.h). InvalidArgument for numbers outside
  // 1..kMaxGno or last < first; the set is then unchanged.
  Status Add(const std::array<uint8_t, 16>& uuid, uint64_t first, uint64_t last);

  // The set in MySQL's binary encoding (Gtid_set::encode in sql/rpl_gtid_set.cc of
  // github.com/mysql/mysql-server): the number of uuids, then each uuid's 16 bytes, its number
  // of intervals and each interval as its first and one-past-last number, every number 8 bytes
  // little-endian. It is what COM_BINLOG_DUMP_GTID carries and PREVIOUS_GTIDS_LOG_EVENT holds.
  // InvalidArgument for a set with tags (MySQL 8.4's tagged encoding is not written here).
  Result<std::string> EncodeBinary() const;
  // The reverse. DataError on anything malformed (short, counts past the bytes, an interval
  // that is empty or out of 1..kMaxGno, uuids out of order) or in the tagged encoding.
  static Result<GtidSet> DecodeBinary(std::string_view bytes);

  // MySQL's own text for the set (Gtid_set::to_string's default format): uuids ascending in lower
  // case, each once, separated by ",\n"; its untagged intervals first, then each tag in ascending
  // order (lower case) followed by its intervals; intervals ascending, "n" or "n-m". Empty set: "".
  std::string ToString() const;

 private:
  static constexpr size_t kMaxTagLength = 32;
  struct Interval {
    uint64_t first;
    uint64_t last;  // inclusive
    bool operator==(const Interval&) const = default;
  };
  // A transaction source: a uuid and a tag (empty: untagged), and where its intervals end.
  struct Source {
    std::array<uint8_t, 16> uuid{};
    uint8_t tag_length = 0;
    std::array<char, kMaxTagLength> tag{};  // lower case, zero-filled after tag_length
    uint32_t end = 0;  // its intervals are intervals_[previous source's end, end)
    std::string_view Tag() const { return {tag.data(), tag_length}; }
    // By uuid, then by tag, untagged first: MySQL's order (its Tsid::operator<, cited above).
    bool Before(const Source& o) const { return uuid != o.uuid ? uuid < o.uuid : Tag() < o.Tag(); }
    bool SameAs(const Source& o) const { return uuid == o.uuid && Tag() == o.Tag(); }
    bool operator==(const Source&) const = default;
  };
  class Parser;  // base/gtid_set.cc

  // Sorted by (uuid, tag), each with at least one interval. Two flat vectors rather than a vector
  // per source: with the mysql_gtid positions kind, sets are sampled every 50 ms and kept by the
  // thousand in a history.
  std::vector<Source> sources_;
  // Per source sorted, disjoint and not adjacent (n-m and m+1-k are merged).
  std::vector<Interval> intervals_;
};

}  // namespace lagwatch
