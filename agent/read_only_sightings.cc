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
  s.answered = std::max(s.answered, sent);
  if (read_only && (!s.read_only_at || sent > *s.read_only_at)) s.read_only_at = sent;
}

void ReadOnlySightings::Keep(const std::set<std::string>& ids) {
  std::lock_guard lock(mu_);
  std::erase_if(servers_, [&](const auto& kv) { return !ids.contains(kv.first); });
  std::erase_if(on_the_way_, [&](const auto& kv) { return !ids.contains(kv.first); });
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

MonoTime ReadOnlySightings::WritableNotBefore(std::string_view primary, std::string_view self,
                                              MonoTime now) const {
  std::lock_guard lock(mu_);
  return Floor(primary, self, now, std::nullopt);
}

MonoTime ReadOnlySightings::WritableNotBeforeOnceAnswered(std::string_view primary,
                                                          std::string_view self, MonoTime now,
                                                          MonoTime since, MonoTime by) const {
  std::lock_guard lock(mu_);
  return Floor(primary, self, now, Window{since, by});
}

MonoTime ReadOnlySightings::Floor(std::string_view primary, std::string_view self, MonoTime now,
                                  std::optional<Window> answering) const {
  MonoTime floor = MonoTime::max();
  for (const auto& [id, s] : servers_) {
    if (id == primary || id == self || now - s.answered > kForgetAfter) continue;
    MonoTime seen = s.read_only_at.value_or(MonoTime::min());
    if (answering) {
      if (auto it = on_the_way_.find(id); it != on_the_way_.end() &&
                                          it->second >= answering->since &&
                                          it->second <= answering->by) {
        seen = std::max(seen, it->second);
      }
    }
    floor = std::min(floor, seen);
  }
  return floor;
}

}  // namespace lagwatch
