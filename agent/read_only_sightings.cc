#include "agent/read_only_sightings.h"

#include <algorithm>

namespace lagwatch {

void ReadOnlySightings::Sent(const std::string& id, MonoTime sent) {
  std::lock_guard lock(mu_);
  on_the_way_[id] = sent;
}

void ReadOnlySightings::Unanswered(const std::string& id) {
  std::lock_guard lock(mu_);
  on_the_way_.erase(id);
}

void ReadOnlySightings::Answered(const std::string& id, MonoTime sent, bool read_only) {
  std::lock_guard lock(mu_);
  on_the_way_.erase(id);
  auto [it, added] = servers_.try_emplace(id, Seen{sent, std::nullopt});
  Seen& s = it->second;
  if (!added) by_floor_.erase({FloorOf(s), id});
  s.answered = std::max(s.answered, sent);
  if (read_only && (!s.read_only_at || sent > *s.read_only_at)) s.read_only_at = sent;
  by_floor_.insert({FloorOf(s), id});
  count_.store(servers_.size(), std::memory_order_relaxed);
}

void ReadOnlySightings::Keep(const std::set<std::string>& ids) {
  std::lock_guard lock(mu_);
  std::erase_if(servers_, [&](const auto& kv) { return !ids.contains(kv.first); });
  std::erase_if(by_floor_, [&](const auto& e) { return !ids.contains(e.second); });
  std::erase_if(on_the_way_, [&](const auto& kv) { return !ids.contains(kv.first); });
  count_.store(servers_.size(), std::memory_order_relaxed);
}

void ReadOnlySightings::OnSilence(std::function<void()> urge_all) {
  urge_all_ = std::move(urge_all);
}

bool ReadOnlySightings::PrimarySilent() {
  if (silence_urged_.exchange(true)) return false;
  if (urge_all_) urge_all_();
  return true;
}

void ReadOnlySightings::PrimaryHeard() { silence_urged_.store(false); }

template <typename Fn>
void ReadOnlySightings::Counted(std::string_view primary, std::string_view self, MonoTime now,
                                Fn fn) const {
  for (const auto& [floor, id] : by_floor_) {
    if (id == primary || id == self) continue;
    // Servers gone quiet keep their place (their last sighting, old: at the front) until they
    // answer again or a reload forgets them; they are passed over here.
    if (now - servers_.find(id)->second.answered > kForgetAfter) continue;
    if (!fn(floor, id)) return;
  }
}

MonoTime ReadOnlySightings::WritableNotBefore(std::string_view primary, std::string_view self,
                                              MonoTime now) const {
  std::lock_guard lock(mu_);
  MonoTime result = MonoTime::max();
  Counted(primary, self, now, [&](MonoTime floor, const std::string&) {
    result = floor;
    return false;
  });
  return result;
}

bool ReadOnlySightings::FloorRises(std::string_view primary, std::string_view self, MonoTime now,
                                   MonoTime since, MonoTime by) const {
  std::lock_guard lock(mu_);
  std::optional<MonoTime> lowest;
  bool rises = false;
  // Every server at the lowest floor (ties: servers never seen read-only) must have a probe on
  // its way sent after its sighting; the next ones are above the floor already.
  Counted(primary, self, now, [&](MonoTime floor, const std::string& id) {
    if (lowest && floor > *lowest) return false;
    lowest = floor;
    auto it = on_the_way_.find(id);
    rises =
        it != on_the_way_.end() && it->second >= since && it->second <= by && it->second > floor;
    return rises;
  });
  return rises;
}

}  // namespace lagwatch
