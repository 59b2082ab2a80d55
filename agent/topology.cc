#include "agent/topology.h"

#include <algorithm>

#include "base/strings.h"

namespace lagwatch {
namespace {

std::string EndpointKey(std::string_view host, int64_t port) {
  return AsciiLower(host) + ":" + std::to_string(port);
}

// The configured server `r` names as its source, if any.
std::optional<size_t> SourceOf(const std::vector<ServerRole>& roles, const RoleIndex& index,
                               const ServerRole& r) {
  const bool id_fresh = r.source_connected && r.source_server_id && *r.source_server_id != 0;
  if (id_fresh) {
    if (auto it = index.by_id.find(*r.source_server_id); it != index.by_id.end()) return it->second;
  }
  if (r.source_host.empty() || !r.source_port) return std::nullopt;
  auto it = index.by_endpoint.find(EndpointKey(r.source_host, *r.source_port));
  if (it == index.by_endpoint.end()) return std::nullopt;
  // Connected to a server whose id is not this one's: the name points elsewhere now.
  if (id_fresh && roles[it->second].server_id) return std::nullopt;
  return it->second;
}

}  // namespace

const char* TopologyStateName(TopologyState s) {
  switch (s) {
    case TopologyState::kOk:
      return "ok";
    case TopologyState::kUnknown:
      return "unknown";
    case TopologyState::kAmbiguous:
      return "ambiguous";
  }
  return "unknown";
}

Topology DecideTopology(const std::vector<ServerRole>& roles) {
  Topology t;
  for (size_t i = 0; i < roles.size(); ++i) {
    const ServerRole& r = roles[i];
    if (!r.answered || !r.read_only || *r.read_only || !r.replicates) continue;
    (*r.replicates ? t.writable_replicas : t.writable).push_back(i);
  }
  // A split brain is not resolved by one server going quiet: the other may still take writes.
  if (!t.writable.empty()) {
    for (size_t i = 0; i < roles.size(); ++i) {
      if (!roles[i].answered && roles[i].held_writable) t.writable.push_back(i);
    }
    std::sort(t.writable.begin(), t.writable.end());
  }
  if (t.writable.size() == 1) {
    t.state = TopologyState::kOk;
    t.primary = t.writable.front();
  } else if (t.writable.size() > 1) {
    t.state = TopologyState::kAmbiguous;
  }
  return t;
}

RoleIndex::RoleIndex(const std::vector<ServerRole>& roles) {
  for (size_t i = 0; i < roles.size(); ++i) {
    if (roles[i].server_id) by_id.try_emplace(*roles[i].server_id, i);
    by_endpoint.try_emplace(EndpointKey(roles[i].endpoint.host, roles[i].endpoint.port), i);
  }
}

SourceRelation RelationTo(const std::vector<ServerRole>& roles, size_t replica, size_t primary) {
  return RelationTo(roles, RoleIndex(roles), replica, primary);
}

SourceRelation RelationTo(const std::vector<ServerRole>& roles, const RoleIndex& index,
                          size_t replica, size_t primary) {
  size_t at = replica;
  // Each hop moves to another configured server; more hops than servers is a cycle.
  for (size_t hops = 0; hops < roles.size(); ++hops) {
    const std::optional<size_t> source = SourceOf(roles, index, roles[at]);
    if (!source || *source == at) return SourceRelation::kUnknown;
    if (*source == primary) return hops == 0 ? SourceRelation::kPrimary : SourceRelation::kChained;
    // Only through a server that is itself a replica: a writable or unknown one breaks the chain.
    const ServerRole& next = roles[*source];
    if (!next.replicates || !*next.replicates) return SourceRelation::kUnknown;
    at = *source;
  }
  return SourceRelation::kUnknown;
}

}  // namespace lagwatch
