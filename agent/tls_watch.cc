#include "agent/tls_watch.h"

#include <algorithm>
#include <set>

#include "base/log.h"

namespace lagwatch {
namespace {

constexpr Millis kConnectTimeout(3000);
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
  while (!stop.stop_requested()) {
    RunRound(stop);
    std::unique_lock lock(mu_);
    // A condition variable, not the clock's sleep: SetTargets wakes it for a round at once.
    wake_.wait_for(lock, stop, interval_, [&] { return again_; });
    again_ = false;
  }
}

void TlsWatch::RunRound(const std::stop_token& stop) {
  std::vector<MysqlTarget> targets;
  {
    std::lock_guard lock(mu_);
    targets = targets_;
    again_ = false;
  }
  for (const MysqlTarget& t : targets) {
    if (stop.stop_requested()) return;
    if (!t.tls.enabled) continue;
    MysqlConn conn(t, stop, clock_);
    auto peer = conn.InspectTls(clock_.Now() + kConnectTimeout);
    Note("mysql", t.endpoint.Id(), peer.ok() ? peer->not_after_unix : std::nullopt);
  }
  if (redis_.tls.enabled && !stop.stop_requested()) {
    auto conn = RedisConnect(redis_, kConnectTimeout);
    if (conn.ok()) Note("redis", (*conn)->server(), (*conn)->tls().not_after_unix);
  }
}

void TlsWatch::Note(const char* target, const std::string& server,
                    std::optional<int64_t> not_after) {
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
