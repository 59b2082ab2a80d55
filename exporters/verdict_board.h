// The agent's verdicts in memory, for HAProxy (docs/operations.md, "HAProxy"): which servers
// lagwatch knows, which one is the primary, and each replica's latest record. The probers write a
// record after every probe; the HTTP check, the agent-check port and the runtime API pusher read
// it, so hundreds of checks a second cost no query on any server and no Redis read.
//
// Readers that follow changes (the pusher) wait for the version to move. It moves when an answer
// could change other than by the passing of time: a server added or removed, the primary moved,
// a record appeared or was cleared, or a record's state, health, weight or tier changed. A delay
// that moves within the verdict does not move it. Expiry is judged on read
// (exporters/haproxy_verdict.h), so a record nobody refreshes stops counting by itself.
//
// Thread-safe: one mutex around a map; writers hold it for one map update.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/snapshot.h"
#include "exporters/haproxy_verdict.h"

namespace lagwatch {

class VerdictBoard {
 public:
  // `clock` (which must outlive the board) stamps each change, for the pusher's latency.
  explicit VerdictBoard(const Clock& clock = SystemClock::Get()) : clock_(clock) {}

  // The servers lagwatch knows ("host:port": configured and discovered), the primary among them.
  // Records of servers no longer in the set are dropped.
  void SetServers(const std::vector<std::string>& ids);
  // The server lagwatch takes for the primary now.
  void SetPrimary(const std::string& id);
  // `record` is the latest of its replica (record.id); ignored for a server not in the set.
  void Put(const ReplicaSnapshot& record);
  // Forgets every record: the primary moved and each replica is judged again against the new
  // one (as its Redis key is retired).
  void ClearRecords();

  // The facts of server `id`; nullopt when lagwatch does not know it.
  std::optional<HaproxyFacts> Facts(const std::string& id) const;
  // Every known server's facts, by id.
  std::map<std::string, HaproxyFacts> All() const;

  // The version and when the change that made it happened.
  struct Version {
    uint64_t number = 0;
    MonoTime changed_at;
  };
  Version version() const;
  // Waits until the version differs from `seen`, `deadline` passes or `stop` is requested; the
  // version then. The deadline is on the steady clock (a real wait).
  Version WaitForChange(uint64_t seen, MonoTime deadline, const std::stop_token& stop) const;

 private:
  // A change: the version moves and waiters wake. REQUIRES: mu_ held.
  void Changed();

  const Clock& clock_;
  mutable std::mutex mu_;
  mutable std::condition_variable_any changed_;
  std::map<std::string, std::optional<ReplicaSnapshot>> servers_;  // GUARDED_BY(mu_)
  std::string primary_;                                            // GUARDED_BY(mu_)
  Version version_;                                                // GUARDED_BY(mu_)
};

}  // namespace lagwatch
