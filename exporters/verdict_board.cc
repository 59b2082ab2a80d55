#include "exporters/verdict_board.h"

#include <set>

namespace lagwatch {
namespace {

// Whether going from `a` to `b` can change an answer by more than the passing of time.
bool VerdictDiffers(const std::optional<ReplicaSnapshot>& a, const ReplicaSnapshot& b) {
  return !a || a->state != b.state || a->healthy != b.healthy || a->weight != b.weight ||
         a->tier != b.tier || a->max_delay_ms != b.max_delay_ms;
}

}  // namespace

void VerdictBoard::Changed() {
  ++version_.number;
  version_.changed_at = clock_.Now();
  changed_.notify_all();
}

void VerdictBoard::SetServers(const std::vector<std::string>& ids) {
  const std::set<std::string> wanted(ids.begin(), ids.end());
  std::lock_guard lock(mu_);
  bool changed = false;
  for (auto it = servers_.begin(); it != servers_.end();) {
    if (wanted.count(it->first)) {
      ++it;
    } else {
      it = servers_.erase(it);
      changed = true;
    }
  }
  for (const auto& id : wanted) changed = servers_.try_emplace(id).second || changed;
  if (changed) Changed();
}

void VerdictBoard::SetPrimary(const std::string& id) {
  std::lock_guard lock(mu_);
  if (primary_ == id) return;
  primary_ = id;
  Changed();
}

void VerdictBoard::Put(const ReplicaSnapshot& record) {
  std::lock_guard lock(mu_);
  auto it = servers_.find(record.id);
  if (it == servers_.end()) return;
  const bool changed = VerdictDiffers(it->second, record);
  it->second = record;
  if (changed) Changed();
}

void VerdictBoard::ClearRecords() {
  std::lock_guard lock(mu_);
  bool changed = false;
  for (auto& [id, record] : servers_) {
    changed = changed || record.has_value();
    record.reset();
  }
  if (changed) Changed();
}

std::optional<HaproxyFacts> VerdictBoard::Facts(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = servers_.find(id);
  if (it == servers_.end()) return std::nullopt;
  return HaproxyFacts{id == primary_, it->second};
}

std::map<std::string, HaproxyFacts> VerdictBoard::All() const {
  std::map<std::string, HaproxyFacts> out;
  std::lock_guard lock(mu_);
  for (const auto& [id, record] : servers_) out.emplace(id, HaproxyFacts{id == primary_, record});
  return out;
}

VerdictBoard::Version VerdictBoard::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

VerdictBoard::Version VerdictBoard::WaitForChange(uint64_t seen, MonoTime deadline,
                                                  const std::stop_token& stop) const {
  std::unique_lock lock(mu_);
  changed_.wait_until(lock, stop, deadline, [&] { return version_.number != seen; });
  return version_;
}

}  // namespace lagwatch
