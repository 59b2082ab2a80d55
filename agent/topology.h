// Which configured server is the primary, and how each replica relates to it (docs/measurement.md,
// "Following the primary"). lagwatch does not trust its configuration for this: the configured
// servers are a set, and the primary is the one writable server that replicates from nobody,
// cross-checked against what the replicas replicate from. Pure functions of what the servers said
// about themselves; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/endpoint.h"

namespace lagwatch {

// What one configured server said about itself, as of its latest probe or sample.
struct ServerRole {
  Endpoint endpoint;                 // as configured: the server's identity
  bool answered = false;             // its latest probe or sample answered
  std::optional<int64_t> server_id;  // @@server_id
  std::optional<bool> read_only;     // @@read_only (on MySQL, super_read_only implies it)
  // From its replication status; unknown until a status poll answered.
  std::optional<bool> replicates;  // replication is configured (a status row)
  std::string source_host;         // Master_Host / Source_Host
  std::optional<int64_t> source_port;
  std::optional<int64_t> source_server_id;  // 0 or nullopt before the first connect
  // The IO thread is connected (Slave_IO_Running: Yes): only then is source_server_id the id of
  // the server it names. After CHANGE MASTER it keeps the old source's id until it connects.
  bool source_connected = false;
  // No answer, but writable and replicating from nobody at an answer shortly before, and the
  // silence began with a probe that timed out (hung, or cut off from lagwatch while clients may
  // still reach it: agent/role_report.h). It may still be taking writes: it keeps another
  // writable server from being taken for the primary (ambiguous), but is never taken itself.
  bool held_writable = false;

  bool operator==(const ServerRole&) const = default;
};

enum class TopologyState {
  kOk,         // exactly one writable server that replicates from nobody: the primary
  kUnknown,    // none (the primary is down, hung, or read-only, and no other is writable)
  kAmbiguous,  // two or more: a split brain, or a switchover half done
};

const char* TopologyStateName(TopologyState s);

struct Topology {
  TopologyState state = TopologyState::kUnknown;
  // kOk: the primary, an index into the roles given.
  std::optional<size_t> primary;
  // Writable servers that replicate from nobody: the candidates (one when kOk, two or more when
  // kAmbiguous).
  std::vector<size_t> writable;
  // Writable servers that replicate from another: a misconfigured replica (read_only forgotten),
  // never taken for the primary.
  std::vector<size_t> writable_replicas;
};

// Decides from every configured server's role. A server counts only once it has answered, said
// whether it is read-only and whether it replicates; one held writable (ServerRole) counts only
// beside another writable server, against it.
Topology DecideTopology(const std::vector<ServerRole>& roles);

// How a replica's data relates to the primary's.
enum class SourceRelation {
  kPrimary,  // it replicates from the primary itself (positions compare)
  kChained,  // from another configured replica that leads to the primary (heartbeats only)
  kUnknown,  // from a server outside the configuration, another writable one, one that does not
             // lead to the primary, or one it does not name: its data is in doubt
};

// `replica`'s relation to `primary` (indexes into `roles`). The source is matched by server id
// while the replica's IO thread is connected (the id is then fresh, and names the server whatever
// it is called), else by host and port as the replica names them against the configured
// endpoints (exactly: names are not resolved). A chain is followed through configured replicas.
SourceRelation RelationTo(const std::vector<ServerRole>& roles, size_t replica, size_t primary);

// The servers of `roles` by server id and by endpoint (host lowercased, port), the first of each,
// so that every replica's relation is found without a scan of every server per hop: the monitor
// decides for all of them at each report (1,000 replicas: a million looks a report otherwise).
struct RoleIndex {
  explicit RoleIndex(const std::vector<ServerRole>& roles);
  std::unordered_map<int64_t, size_t> by_id;
  std::unordered_map<std::string, size_t> by_endpoint;
};
SourceRelation RelationTo(const std::vector<ServerRole>& roles, const RoleIndex& index,
                          size_t replica, size_t primary);

}  // namespace lagwatch
