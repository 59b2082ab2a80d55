#include "agent/tls_watch.h"

#include <algorithm>
#include <set>

#include "base/log.h"

namespace lagwatch {
namespace {

constexpr Millis kConnectTimeout(3000);
// Between two servers' connections in the first round (at start and after a reload: the answer
// is wanted soon) and at least in later ones.
constexpr Millis kFirstRoundGap(100);
constexpr int64_t kWarnDays = 14;

}  // namespace

TlsWatch::TlsWatch(RedisConfig redis, Metrics* metrics, const Clock& clock, Millis interval)
    : redis_(std::move(redis)), metrics_(metrics), clock_(clock), interval_(interval) {}

void TlsWatch::SetTargets(std::vector<MysqlTarget> mysql) {
  std::lock_guard lock(mu_);
  std::set<std::string> kept;
  for (const auto& t : mysql) {
    if (t.tls.enabled) kept.insert(t.endpoint.Id());
  }
  for (auto it = known_.begin(); it != known_.end();) {
    if (it->first.first == "mysql" && !kept.count(it->first.second)) {
      metrics_->tls_certificate_expiry.Remove(it->second.gauge);
      it = known_.erase(it);
    } else {
      ++it;
    }
  }
  UpdateSoonest();
  watched_ = std::move(kept);
  targets_ = std::move(mysql);
  again_ = true;
  wake_.notify_all();
}

void TlsWatch::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

void TlsWatch::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

void TlsWatch::Run(const std::stop_token& stop) {
  bool first = true;
  while (!stop.stop_requested()) {
    RunRound(stop, first ? kFirstRoundGap : Millis(0));
    first = false;
    std::unique_lock lock(mu_);
    // A condition variable, not the clock's sleep: SetTargets wakes it for a round at once.
    wake_.wait_for(lock, stop, interval_, [&] { return again_; });
    again_ = false;
  }
}

bool TlsWatch::Pause(const std::stop_token& stop, Millis gap) {
  if (gap <= Millis(0)) return !stop.stop_requested();
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, stop, gap, [&] { return again_; });
  return !stop.stop_requested();
}

void TlsWatch::RunRound(const std::stop_token& stop, Millis gap) {
  std::vector<MysqlTarget> targets;
  {
    std::lock_guard lock(mu_);
    for (const MysqlTarget& t : targets_) {
      if (t.tls.enabled) targets.push_back(t);
    }
    again_ = false;
  }
  // Spread over the interval after the first round: a thousand servers cost about one TLS
  // connection a second, not a burst of a thousand.
  if (gap == Millis(0) && !targets.empty()) {
    gap = std::max(kFirstRoundGap, interval_ / static_cast<int64_t>(targets.size() + 1));
  }
  if (redis_.tls.enabled && !stop.stop_requested()) {
    auto conn = RedisConnect(redis_, kConnectTimeout);
    if (conn.ok()) Note("redis", (*conn)->server(), (*conn)->tls().not_after_unix);
  }
  for (const MysqlTarget& t : targets) {
    if (LearnedRecently(t.endpoint.Id())) continue;
    if (!Pause(stop, gap)) return;
    MysqlConn conn(t, stop, clock_);
    auto peer = conn.InspectTls(clock_.Now() + kConnectTimeout);
    Note("mysql", t.endpoint.Id(), peer.ok() ? peer->not_after_unix : std::nullopt);
  }
}

void TlsWatch::Learned(const std::string& server, int64_t not_after_unix) {
  {
    std::lock_guard lock(mu_);
    if (!watched_.count(server)) return;
  }
  Note("mysql", server, not_after_unix, /*learned=*/true);
}

bool TlsWatch::LearnedRecently(const std::string& server) {
  std::lock_guard lock(mu_);
  auto it = known_.find({"mysql", server});
  return it != known_.end() && it->second.learned_at &&
         clock_.Now() - *it->second.learned_at < interval_;
}

void TlsWatch::Note(const char* target, const std::string& server, std::optional<int64_t> not_after,
                    bool learned) {
  if (!not_after) return;
  const int64_t now = UnixMillis(clock_.WallNow()) / 1000;
  if (DaysUntil(*not_after, now) < kWarnDays) {
    LogLimited(LogLevel::kWarn, std::string("tls-expiry-") + target + "-" + server,
               std::string("the TLS certificate of ") + target + " " + server + " expires in " +
                   std::to_string(DaysUntil(*not_after, now)) + " days",
               3600);
  }
  std::lock_guard lock(mu_);
  auto& known = known_[{target, server}];
  if (!known.gauge) {
    known.gauge = &metrics_->tls_certificate_expiry.Add({{"target", target}, {"server", server}});
  }
  known.not_after_unix = *not_after;
  if (learned) known.learned_at = clock_.Now();
  known.gauge->Set(static_cast<double>(*not_after));
  UpdateSoonest();
}

void TlsWatch::UpdateSoonest() {
  prometheus::Family<prometheus::Gauge>& family = metrics_->tls_certificate_soonest_expiry;
  if (known_.empty()) {
    if (family.Has({})) family.Remove(&family.Add({}));
    return;
  }
  int64_t soonest = known_.begin()->second.not_after_unix;
  for (const auto& [key, k] : known_) soonest = std::min(soonest, k.not_after_unix);
  family.Add({}).Set(static_cast<double>(soonest));
}

}  // namespace lagwatch
