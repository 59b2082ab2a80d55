#include "exporters/haproxy_verdict.h"

#include <algorithm>

#include "base/strings.h"

namespace lagwatch {
namespace {

using Verdict = HaproxyAnswer::Verdict;

// The largest weight HAProxy takes (SRV_UWGHT_MAX).
constexpr int kHaproxyMaxWeight = 256;

HaproxyAnswer Out(Verdict v, std::string reason) {
  HaproxyAnswer a;
  a.verdict = v;
  a.reason = std::move(reason);
  return a;
}

// " delay_ms=12 max_delay_ms=200", as known.
std::string Figures(const HaproxyAnswer& a) {
  std::string out;
  if (a.delay_ms) out += " delay_ms=" + std::to_string(*a.delay_ms);
  if (a.max_delay_ms) out += " max_delay_ms=" + std::to_string(*a.max_delay_ms);
  return out;
}

}  // namespace

std::string HaproxyServerName::ToString() const {
  return entry == HaproxyEntry::kPrimary ? id + std::string(kHaproxyPrimarySuffix) : id;
}

bool IsHaproxyName(std::string_view name, size_t max) { return IsToken(name, ".:-_", 1, max); }

std::optional<HaproxyServerName> ParseHaproxyServerName(std::string_view name) {
  if (!IsHaproxyName(name)) return std::nullopt;
  if (name.size() > kHaproxyPrimarySuffix.size() && name.ends_with(kHaproxyPrimarySuffix)) {
    name.remove_suffix(kHaproxyPrimarySuffix.size());
    return HaproxyServerName{std::string(name), HaproxyEntry::kPrimary};
  }
  return HaproxyServerName{std::string(name), HaproxyEntry::kReplica};
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kUp:
      return "up";
    case Verdict::kDrain:
      return "drain";
    case Verdict::kDown:
      return "down";
    case Verdict::kMaint:
      return "maint";
  }
  return "down";
}

HaproxyAnswer JudgeForHaproxy(const HaproxyFacts& facts, HaproxyEntry entry, MonoTime now,
                              Millis ttl, std::optional<int64_t> pool_max_delay_ms) {
  if (entry == HaproxyEntry::kPrimary) {
    if (!facts.is_primary) return Out(Verdict::kMaint, "not_primary");
    HaproxyAnswer a = Out(Verdict::kUp, "primary");
    a.weight = 100;
    return a;
  }
  if (facts.is_primary) return Out(Verdict::kMaint, "primary");
  if (!facts.record) return Out(Verdict::kDown, "no_record");
  const ReplicaSnapshot& r = *facts.record;
  HaproxyAnswer a;
  a.delay_ms = r.delay_ms;
  a.state = r.state;
  a.weight = r.weight;
  a.max_delay_ms = pool_max_delay_ms ? pool_max_delay_ms : r.max_delay_ms;
  const MonoTime until = r.measured_mono + ttl;
  if (now >= until) {
    a.verdict = Verdict::kDown;
    a.reason = "expired";
    return a;
  }
  if (r.state == "disabled") {
    a.verdict = Verdict::kMaint;
    a.reason = "disabled";
    return a;
  }
  const bool within = !a.max_delay_ms || r.delay_ms <= *a.max_delay_ms;
  // With the pool's own limit the tier's verdict on lag does not apply, every other one does:
  // stopped, unreachable, unverified and an unhealthy primary_unknown stay out.
  const bool judged_ok = pool_max_delay_ms ? r.state == "ok" || r.state == "lagging" ||
                                                 (r.state == "primary_unknown" && r.healthy)
                                           : r.healthy;
  if (!judged_ok || !within) {
    a.verdict = Verdict::kDown;
    // Over the limit that applies is "lagging", whatever the tier's verdict said.
    a.reason = !judged_ok && r.state != "ok" && r.state != "lagging" ? r.state : "lagging";
    return a;
  }
  a.usable_until = until;
  a.verdict = r.weight > 0 ? Verdict::kUp : Verdict::kDrain;
  a.reason = r.weight > 0 ? "usable" : "weight_0";
  return a;
}

std::string HaproxyAnswer::AgentReply() const {
  switch (verdict) {
    case Verdict::kUp:
      return "ready up " + std::to_string(weight) + "%\n";
    case Verdict::kDrain:
      return "drain up\n";
    case Verdict::kDown:
      return "ready down #" + reason + Figures(*this) + "\n";
    case Verdict::kMaint:
      return "maint #" + reason + "\n";
  }
  return "ready down\n";
}

int HaproxyAnswer::HttpStatus() const { return verdict == Verdict::kUp ? 200 : 503; }

std::string HaproxyAnswer::HttpBody() const {
  std::string out = verdict != Verdict::kUp ? "unusable " + reason
                    : reason == "usable"    ? "usable"
                                            : "usable " + reason;
  out += Figures(*this);
  if (!state.empty()) out += " state=" + state;
  return out + "\n";
}

int HaproxyAnswer::RuntimeWeight() const { return std::clamp(weight, 0, kHaproxyMaxWeight); }

}  // namespace lagwatch
