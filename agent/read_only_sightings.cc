#include "agent/read_only_sightings.h"

#include <algorithm>

namespace lagwatch {

void ReadOnlySightings::Answered(const std::string& id, MonoTime sent, bool read_only) {
  std::lock_guard lock(mu_);
  auto [it, added] = servers_.try_emplace(id, Seen{sent, std::nullopt});
  Seen& s = it->second;
  s.answered = std::max(s.answered, sent);
  if (read_only && (!s.read_only_at || sent > *s.read_only_at)) s.read_only_at = sent;
}

void ReadOnlySightings::Keep(const std::set<std::string>& ids) {
  std::lock_guard lock(mu_);
  std::erase_if(servers_, [&](const auto& kv) { return !ids.contains(kv.first); });
}

MonoTime ReadOnlySightings::WritableNotBefore(std::string_view primary, std::string_view self,
                                              MonoTime now) const {
  std::lock_guard lock(mu_);
  MonoTime floor = MonoTime::max();
  for (const auto& [id, s] : servers_) {
    if (id == primary || id == self || now - s.answered > kForgetAfter) continue;
    floor = std::min(floor, s.read_only_at.value_or(MonoTime::min()));
  }
  return floor;
}

}  // namespace lagwatch
