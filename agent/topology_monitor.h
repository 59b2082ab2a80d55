// Follows the primary (docs/measurement.md, "Following the primary"). Every configured server has
// a prober, and each prober reports what its server said about itself (Report); the monitor
// decides the topology (agent/topology.h) whenever a report changes something. When the primary
// moves it calls `move` under its lock — the agent resets what it knew of the old primary and
// moves the heartbeat writer and the position sampler — and then advances the epoch, so a prober
// that reads its view (ViewOf) sees the new epoch only once the histories of the old primary are
// gone. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/topology.h"
#include "base/endpoint.h"

namespace lagwatch {

class TopologyMonitor {
 public:
  // What changed, for the log, the events and the metrics.
  struct Change {
    TopologyState state = TopologyState::kOk;
    Endpoint primary;                  // the primary (kOk), or the last one known
    std::optional<Endpoint> previous;  // set when the primary moved: the one before
    std::vector<Endpoint> writable;    // kAmbiguous: the writable servers
    uint64_t epoch = 0;
  };
  // Under the monitor's lock: must not block or call the monitor.
  using MoveFn = std::function<void(const Endpoint& primary)>;
  // After a change, outside the lock, on the reporting thread.
  using ChangedFn = std::function<void(const Change& change)>;
  // What the operator should hear of once per occurrence, outside the lock.
  struct Notice {
    enum class Kind {
      kWritableReplica,  // first seen writable while it replicates: never taken for the primary
      kSourceInDoubt,    // a replica's source became one that does not lead to the primary
    };
    Kind kind = Kind::kWritableReplica;
    ServerRole role;  // what the server said (its source, for kSourceInDoubt)
    Endpoint primary;
  };
  using NoticeFn = std::function<void(const Notice& notice)>;

  // `servers`: every configured server; `primary` the one the agent starts with. The topology is
  // kUnknown, with that primary, until the servers have said more.
  TopologyMonitor(std::vector<Endpoint> servers, const Endpoint& primary, MoveFn move,
                  ChangedFn changed, NoticeFn notice);

  // What the server at role.endpoint said at its latest probe; returns its View once the report
  // has been taken into account (as ViewOf would then). A server not configured is ignored.
  struct View;
  View Report(const ServerRole& role);

  // The configured servers after a reload (or discovery): what kept servers said is kept, new ones
  // are unknown until they report, and removed ones are forgotten. The current primary must be
  // among them (the agent refuses a reload that removes it).
  void SetServers(const std::vector<Endpoint>& servers);

  // What a prober needs to judge its server.
  struct View {
    uint64_t epoch = 0;  // +1 each time the primary moved
    TopologyState state = TopologyState::kUnknown;
    bool is_primary = false;  // this server is the primary
    // How this server relates to the primary (kPrimary for the primary itself). A server whose
    // replication status was never read (the probe account lacks the grant) cannot be checked,
    // and counts as replicating from the primary, as configured.
    SourceRelation relation = SourceRelation::kPrimary;
    // Two servers look writable, but this one's report may predate the other's (probes of two
    // servers are up to an interval apart): report again after the next probe, even unchanged,
    // before the ambiguity is announced.
    bool confirm = false;
  };
  View ViewOf(const std::string& id) const;

  Endpoint primary() const;
  // The state as last announced (ChangedFn): an ambiguity only once every writable server has
  // confirmed it with a report made after it appeared. ViewOf's state is the decided one, which
  // is ambiguous at once, so no replica is judged healthy meanwhile.
  // The server ids the servers among `ids` (Endpoint::Id()) last reported.
  std::set<int64_t> ServerIds(const std::set<std::string>& ids) const;
  TopologyState state() const;
  // The epoch of ViewOf, without the lock: a prober checks it before judging a probe.
  uint64_t epoch() const;

 private:
  // Recomputes the relations and the topology; fills `change` when something a caller must hear
  // about changed. REQUIRES: mu_ held.
  // `reporter`: the server whose report this is (its report is fresh).
  void Decide(std::optional<Change>* change, std::vector<Notice>* notices,
              std::optional<size_t> reporter = std::nullopt);
  View ViewLocked(const std::string& id) const;  // REQUIRES: mu_ held

  const MoveFn move_;
  const ChangedFn changed_;
  const NoticeFn notice_;

  mutable std::mutex mu_;
  std::vector<Endpoint> servers_;                  // GUARDED_BY(mu_)
  std::map<std::string, size_t> index_;            // GUARDED_BY(mu_), by Endpoint::Id()
  std::vector<ServerRole> roles_;                  // GUARDED_BY(mu_), as servers_
  std::vector<SourceRelation> relations_;          // GUARDED_BY(mu_), as servers_
  std::vector<bool> warned_;                       // GUARDED_BY(mu_): writable replica said
  std::vector<bool> doubted_;                      // GUARDED_BY(mu_): source in doubt said
  size_t primary_ = 0;                             // GUARDED_BY(mu_)
  TopologyState state_ = TopologyState::kUnknown;  // GUARDED_BY(mu_)
  std::vector<size_t> writable_;                   // GUARDED_BY(mu_)
  std::atomic<uint64_t> epoch_{0};                 // written under mu_, read by epoch() without
  // An ambiguity is announced once every writable server reported after it appeared: +1 each
  // time one appears, and per server the value at its last report.
  uint64_t confirm_gen_ = 0;            // GUARDED_BY(mu_)
  std::vector<uint64_t> reported_gen_;  // GUARDED_BY(mu_), as servers_
  bool announced_ = true;               // GUARDED_BY(mu_): state_ was announced
  TopologyState announced_state_ = TopologyState::kUnknown;  // GUARDED_BY(mu_)
};

}  // namespace lagwatch
