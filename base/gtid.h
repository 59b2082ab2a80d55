// MariaDB GTID positions ("domain-server-seq" lists, e.g. "0-1-120,1-2-7") and their order.
// Values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace lagwatch {

class GtidPos {
 public:
  struct Gtid {
    uint32_t domain = 0;
    uint32_t server = 0;
    uint64_t seq = 0;
  };

  // Parses @@gtid_binlog_pos / @@gtid_slave_pos text. Empty text is the empty position.
  // DataError on anything malformed (the text is quoted in the message, truncated).
  static Result<GtidPos> Parse(std::string_view text);

  // True when this position includes every transaction of `other`: for each replication domain in
  // `other`, this position's sequence number in that domain is at least as high. Server ids are
  // ignored: sequence numbers are ordered within a domain whichever server wrote them.
  bool Reaches(const GtidPos& other) const;

  bool empty() const { return gtids_.empty(); }
  // The domain's GTID, if the position has the domain.
  std::optional<Gtid> Find(uint32_t domain) const;
  // Makes `g` the domain's GTID, as a transaction of the binary log stream does (the caller
  // checks that it moves forward).
  void Set(const Gtid& g);
  // Equal when every domain's sequence number is (server ids do not order anything).
  bool operator==(const GtidPos& o) const;
  std::string ToString() const;

 private:
  // Sorted by domain, one entry per domain. A vector, not a map: positions are kept by the
  // thousand in the sampler's history and usually hold one or two domains.
  std::vector<Gtid> gtids_;
};

}  // namespace lagwatch
