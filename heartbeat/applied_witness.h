// What the replicas' own binary logs prove they applied (binlog_stream.watch_writes;
// docs/measurement.md, "A replica that does not answer"). The watch on a replica follows its
// binary log (heartbeat/binlog_listener.h, ListenerOptions::applied) and leaves here, per
// server, the newest position it is sure the replica had applied. A prober whose replica does
// not answer bounds it from that position when it is further than its last answer's, so a hung
// replica is bounded from the moment it stopped, not from when it was last asked.
// Thread-safe: the watches write, the probers read.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "base/position.h"

namespace lagwatch {

// A server's proof: its @@server_id as the watch's connection read it (so a probe's connection
// that reached another server is never bounded by it), and the position it had applied.
struct AppliedProof {
  uint32_t server_id = 0;
  Position applied;
};

class AppliedWitnesses {
 public:
  // The server's newest proof, or nullopt: it has none now (ListenerOptions::applied's calls).
  void Set(const std::string& server, std::optional<AppliedProof> proof) {
    std::lock_guard lock(mu_);
    if (proof) {
      proofs_.insert_or_assign(server, std::move(*proof));
    } else {
      proofs_.erase(server);
    }
  }
  // The server's proof, if its watch has one.
  std::optional<AppliedProof> Of(const std::string& server) const {
    std::lock_guard lock(mu_);
    auto it = proofs_.find(server);
    if (it == proofs_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, AppliedProof> proofs_;  // GUARDED_BY(mu_), by endpoint id
};

}  // namespace lagwatch
