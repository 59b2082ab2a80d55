#include "agent/topology_monitor.h"

#include <algorithm>

namespace lagwatch {

TopologyMonitor::TopologyMonitor(std::vector<Endpoint> servers, const Endpoint& primary,
                                 MoveFn move, ChangedFn changed, NoticeFn notice)
    : move_(std::move(move)),
      changed_(std::move(changed)),
      notice_(std::move(notice)),
      servers_(std::move(servers)),
      roles_(servers_.size()),
      relations_(servers_.size(), SourceRelation::kPrimary),
      warned_(servers_.size(), false),
      doubted_(servers_.size(), false),
      reported_gen_(servers_.size(), 0) {
  for (size_t i = 0; i < servers_.size(); ++i) {
    index_[servers_[i].Id()] = i;
    roles_[i].endpoint = servers_[i];
    if (servers_[i] == primary) primary_ = i;
  }
  relations_[primary_] = SourceRelation::kPrimary;
}

TopologyMonitor::View TopologyMonitor::Report(const ServerRole& role) {
  std::optional<Change> change;
  std::vector<Notice> notices;
  View view;
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(role.endpoint.Id());
    if (it == index_.end()) return ViewLocked(role.endpoint.Id());
    roles_[it->second] = role;
    Decide(&change, &notices, it->second);
    view = ViewLocked(role.endpoint.Id());
  }
  for (const Notice& n : notices) notice_(n);
  if (change) changed_(*change);
  return view;
}

void TopologyMonitor::SetServers(const std::vector<Endpoint>& servers) {
  std::optional<Change> change;
  std::vector<Notice> notices;
  {
    std::lock_guard lock(mu_);
    const Endpoint primary = servers_[primary_];
    std::vector<ServerRole> roles(servers.size());
    std::vector<bool> warned(servers.size(), false), doubted(servers.size(), false);
    std::vector<uint64_t> reported(servers.size(), 0);
    std::map<std::string, size_t> index;
    size_t primary_at = 0;
    bool found = false;
    for (size_t i = 0; i < servers.size(); ++i) {
      index[servers[i].Id()] = i;
      roles[i].endpoint = servers[i];
      if (auto it = index_.find(servers[i].Id()); it != index_.end()) {
        roles[i] = roles_[it->second];
        warned[i] = warned_[it->second];
        doubted[i] = doubted_[it->second];
        reported[i] = reported_gen_[it->second];
      }
      if (servers[i] == primary) {
        primary_at = i;
        found = true;
      }
    }
    if (!found) return;            // refused by the agent before it gets here
    std::vector<size_t> writable;  // as indexes into the new list, so a reload is no change
    for (size_t w : writable_) {
      if (auto it = index.find(servers_[w].Id()); it != index.end()) writable.push_back(it->second);
    }
    std::sort(writable.begin(), writable.end());
    writable_ = std::move(writable);
    servers_ = servers;
    index_ = std::move(index);
    roles_ = std::move(roles);
    warned_ = std::move(warned);
    doubted_ = std::move(doubted);
    reported_gen_ = std::move(reported);
    relations_.assign(servers_.size(), SourceRelation::kPrimary);
    primary_ = primary_at;
    Decide(&change, &notices);
  }
  for (const Notice& n : notices) notice_(n);
  if (change) changed_(*change);
}

void TopologyMonitor::Decide(std::optional<Change>* change, std::vector<Notice>* notices,
                             std::optional<size_t> reporter) {
  const Topology t = DecideTopology(roles_);
  for (size_t i : t.writable_replicas) {
    if (!warned_[i]) notices->push_back({Notice::Kind::kWritableReplica, roles_[i], {}});
    warned_[i] = true;
  }
  std::optional<Endpoint> previous;
  if (t.state == TopologyState::kOk && *t.primary != primary_) {
    previous = servers_[primary_];
    primary_ = *t.primary;
    move_(servers_[primary_]);
    ++epoch_;
  }
  const RoleIndex index(roles_);
  for (size_t i = 0; i < servers_.size(); ++i) {
    relations_[i] = i == primary_ || !roles_[i].replicates ? SourceRelation::kPrimary
                                                           : RelationTo(roles_, index, i, primary_);
    // Said once each time a replica's source goes into doubt (while it answers and replicates).
    const bool doubt = relations_[i] == SourceRelation::kUnknown && roles_[i].answered;
    if (doubt && !doubted_[i]) {
      notices->push_back({Notice::Kind::kSourceInDoubt, roles_[i], servers_[primary_]});
    }
    doubted_[i] = doubt;
  }
  if (t.state == TopologyState::kAmbiguous && (state_ != t.state || writable_ != t.writable)) {
    // Decided at once (views are ambiguous: no replica healthy), announced once confirmed.
    state_ = t.state;
    writable_ = t.writable;
    announced_ = false;
    ++confirm_gen_;
  }
  if (reporter) reported_gen_[*reporter] = confirm_gen_;
  if (state_ == TopologyState::kAmbiguous && t.state == state_ && !announced_) {
    for (size_t i : writable_) {
      if (reported_gen_[i] != confirm_gen_) return;  // not confirmed yet
    }
  } else if (!previous && t.state == state_ && t.writable == writable_) {
    return;
  }
  if (!previous && t.state == announced_state_ && t.state != TopologyState::kAmbiguous &&
      !announced_) {
    // An ambiguity that was never confirmed went away: nothing to announce.
    state_ = t.state;
    writable_ = t.writable;
    announced_ = true;
    return;
  }
  state_ = t.state;
  writable_ = t.writable;
  announced_ = true;
  announced_state_ = state_;
  Change c;
  c.state = state_;
  c.primary = servers_[primary_];
  c.previous = previous;
  for (size_t i : writable_) c.writable.push_back(servers_[i]);
  c.epoch = epoch_;
  *change = std::move(c);
}

TopologyMonitor::View TopologyMonitor::ViewOf(const std::string& id) const {
  std::lock_guard lock(mu_);
  return ViewLocked(id);
}

TopologyMonitor::View TopologyMonitor::ViewLocked(const std::string& id) const {
  View v;
  auto it = index_.find(id);
  v.epoch = epoch_;
  v.state = state_;
  if (it != index_.end()) {
    v.is_primary = it->second == primary_;
    v.relation = relations_[it->second];
    v.confirm = state_ == TopologyState::kAmbiguous && !announced_ &&
                std::find(writable_.begin(), writable_.end(), it->second) != writable_.end() &&
                reported_gen_[it->second] != confirm_gen_;
  } else {
    v.relation = SourceRelation::kUnknown;
  }
  return v;
}

Endpoint TopologyMonitor::primary() const {
  std::lock_guard lock(mu_);
  return servers_[primary_];
}

std::set<int64_t> TopologyMonitor::ServerIds(const std::set<std::string>& ids) const {
  std::set<int64_t> out;
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < servers_.size(); ++i) {
    if (roles_[i].server_id && ids.count(servers_[i].Id())) out.insert(*roles_[i].server_id);
  }
  return out;
}

TopologyState TopologyMonitor::state() const {
  std::lock_guard lock(mu_);
  return announced_state_;
}

uint64_t TopologyMonitor::epoch() const { return epoch_.load(std::memory_order_acquire); }

}  // namespace lagwatch
