// Replica discovery (docs/configuration.md, "Discovery"; off by default): the current primary's
// list of registered replicas — SHOW SLAVE HOSTS (MariaDB; MySQL before 8.0.22) or SHOW REPLICAS
// (MySQL 8.0.22 and later, the only one MySQL 8.4 has) — read every discovery.interval_ms on its
// own connection. A replica is listed only when it sets report_host (and report_port when it does
// not listen on its own port).
//
// ParseReplicaHosts and DiscoveredSet are pure and thread-compatible; ReplicaDiscovery owns one
// thread (Start/Stop; the destructor stops) and is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/endpoint.h"
#include "base/mysql_conn.h"
#include "base/query_result.h"
#include "base/worker.h"

namespace lagwatch {

// One listed replica.
struct ListedReplica {
  Endpoint endpoint;
  int64_t server_id = 0;
};

// The rows of SHOW SLAVE HOSTS / SHOW REPLICAS (columns Host, Port, Server_id or Server_Id; others
// ignored). A row without a usable host (report_host unset: empty; or not a plain host name or
// address) or port (not 1..65535) is skipped and counted in *skipped. At most `max` are returned.
std::vector<ListedReplica> ParseReplicaHosts(const QueryResult& result, size_t max, int* skipped);

// Which discovered replicas to probe: every one listed within the grace period, except those the
// configuration names (by host and port, or by the server id a configured server reported).
// Thread-compatible.
class DiscoveredSet {
 public:
  DiscoveredSet(Millis grace, size_t max) : grace_(grace), max_(max) {}
  // A listing at `now`. `configured`: the configured servers' Ids; `configured_ids`: the server
  // ids they reported. Returns whether the set changed.
  bool Update(const std::vector<ListedReplica>& listed, MonoTime now,
              const std::set<std::string>& configured, const std::set<int64_t>& configured_ids);
  // The replicas to probe, by Endpoint::Id().
  std::vector<Endpoint> replicas() const;
  // What the last Update added and dropped (for the log).
  const std::vector<Endpoint>& added() const { return added_; }
  const std::vector<Endpoint>& dropped() const { return dropped_; }

 private:
  const Millis grace_;
  const size_t max_;
  std::map<std::string, std::pair<Endpoint, MonoTime>> seen_;  // by Id: when last listed
  std::vector<Endpoint> added_, dropped_;
};

// Reads the primary's listing every `interval` and hands it to `listed` (on its thread); a failed
// read is counted by `failed` (reason) and logged, rate-limited, and the listing is not handed on
// (a replica is dropped only after its grace period, so a flapping primary drops nothing).
class ReplicaDiscovery {
 public:
  using ListedFn = std::function<void(const std::vector<ListedReplica>& listed, int skipped)>;
  using FailedFn = std::function<void(const std::string& reason)>;
  ReplicaDiscovery(MysqlTarget primary, Millis interval, size_t max, ListedFn listed,
                   FailedFn failed, const Clock& clock, SqlConnector connect = nullptr);
  ~ReplicaDiscovery() { Stop(); }
  void Start();
  void Stop() { worker_.Stop(); }
  // Lists `primary`'s replicas from now on (the wait under way is cut short).
  void SetPrimary(MysqlTarget primary);

 private:
  void Run(std::stop_token stop);

  const Millis interval_;
  const size_t max_;
  const ListedFn listed_;
  const FailedFn failed_;
  const Clock& clock_;
  const SqlConnector connect_;
  std::mutex mu_;
  MysqlTarget target_;       // GUARDED_BY(mu_)
  uint64_t generation_ = 0;  // GUARDED_BY(mu_): +1 on every SetPrimary
  std::stop_source wake_;    // GUARDED_BY(mu_)
  Worker worker_;            // last: stopped before the members it uses go away
};

}  // namespace lagwatch
