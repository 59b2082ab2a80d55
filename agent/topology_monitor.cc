#include "agent/topology_monitor.h"

namespace lagwatch {

TopologyMonitor::TopologyMonitor(std::vector<Endpoint> servers, const Endpoint& primary,
                                 MoveFn move, ChangedFn changed, WarnFn warn)
    : servers_(std::move(servers)),
      move_(std::move(move)),
      changed_(std::move(changed)),
      warn_(std::move(warn)),
      roles_(servers_.size()),
      relations_(servers_.size(), SourceRelation::kPrimary),
      warned_(servers_.size(), false) {
  for (size_t i = 0; i < servers_.size(); ++i) {
    index_[servers_[i].Id()] = i;
    roles_[i].endpoint = servers_[i];
    if (servers_[i] == primary) primary_ = i;
  }
  relations_[primary_] = SourceRelation::kPrimary;
}

void TopologyMonitor::Report(const ServerRole& role) {
  auto it = index_.find(role.endpoint.Id());
  if (it == index_.end()) return;
  std::optional<Change> change;
  std::vector<Endpoint> warn;
  {
    std::lock_guard lock(mu_);
    roles_[it->second] = role;
    Decide(&change, &warn);
  }
  for (const Endpoint& w : warn) warn_(w);
  if (change) changed_(*change);
}

void TopologyMonitor::Decide(std::optional<Change>* change, std::vector<Endpoint>* warn) {
  const Topology t = DecideTopology(roles_);
  for (size_t i : t.writable_replicas) {
    if (!warned_[i]) warn->push_back(servers_[i]);
    warned_[i] = true;
  }
  std::optional<Endpoint> previous;
  if (t.state == TopologyState::kOk && *t.primary != primary_) {
    previous = servers_[primary_];
    primary_ = *t.primary;
    move_(servers_[primary_]);
    ++epoch_;
  }
  for (size_t i = 0; i < servers_.size(); ++i) {
    relations_[i] = i == primary_ || !roles_[i].replicates ? SourceRelation::kPrimary
                                                           : RelationTo(roles_, i, primary_);
  }
  if (!previous && t.state == state_ && t.writable == writable_) return;
  state_ = t.state;
  writable_ = t.writable;
  Change c;
  c.state = state_;
  c.primary = servers_[primary_];
  c.previous = previous;
  for (size_t i : writable_) c.writable.push_back(servers_[i]);
  c.epoch = epoch_;
  *change = std::move(c);
}

TopologyMonitor::View TopologyMonitor::ViewOf(const std::string& id) const {
  View v;
  auto it = index_.find(id);
  std::lock_guard lock(mu_);
  v.epoch = epoch_;
  v.state = state_;
  if (it != index_.end()) {
    v.is_primary = it->second == primary_;
    v.relation = relations_[it->second];
  } else {
    v.relation = SourceRelation::kUnknown;
  }
  return v;
}

Endpoint TopologyMonitor::primary() const {
  std::lock_guard lock(mu_);
  return servers_[primary_];
}

TopologyState TopologyMonitor::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

uint64_t TopologyMonitor::epoch() const {
  std::lock_guard lock(mu_);
  return epoch_;
}

}  // namespace lagwatch
