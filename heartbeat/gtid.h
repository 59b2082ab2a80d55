// MariaDB GTID positions ("domain-server-seq" lists, e.g. "0-1-120,1-2-7") and their order.
// Values; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "agent/status.h"

namespace lagwatch {

class GtidPos {
 public:
  // Parses @@gtid_binlog_pos / @@gtid_slave_pos text. Empty text is the empty position.
  // DataError on anything malformed (the text is quoted in the message, truncated).
  static Result<GtidPos> Parse(std::string_view text);

  // True when this position includes every transaction of `other`: for each replication domain in
  // `other`, this position's sequence number in that domain is at least as high. Server ids are
  // ignored: sequence numbers are ordered within a domain whichever server wrote them.
  bool Reaches(const GtidPos& other) const;

  bool empty() const { return seq_by_domain_.empty(); }
  bool operator==(const GtidPos& o) const { return seq_by_domain_ == o.seq_by_domain_; }
  std::string ToString() const;

 private:
  std::map<uint32_t, uint64_t> seq_by_domain_;
  std::map<uint32_t, uint32_t> server_by_domain_;
};

}  // namespace lagwatch
