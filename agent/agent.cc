#include "agent/agent.h"

#include <thread>

#include "agent/log.h"
#include "version.h"

namespace lagwatch {

Agent::Agent(Config config, const Clock& clock)
    : config_(std::move(config)),
      clock_(clock),
      metrics_(LAGWATCH_VERSION),
      publisher_(config_.redis, &metrics_, clock_),
      writer_(config_, &heartbeat_log_, &metrics_, &publisher_),
      sampler_(config_, &positions_, &metrics_) {
  for (const auto& r : config_.replicas) {
    probers_.push_back(std::make_unique<ReplicaProber>(config_, r, &heartbeat_log_, &positions_,
                                                       &publisher_, &metrics_, clock_));
  }
}

Status Agent::Start() {
  auto http = HttpServer::Start(config_.http_listen, metrics_.registry(), {});
  if (!http.ok()) return http.status();
  http_ = std::move(http).value();

  std::vector<std::string> ids;
  for (const auto& p : probers_) ids.push_back(p->id());
  publisher_.SetReplicas(ids);
  publisher_.Start();
  sampler_.Start();
  writer_.Start();
  auto until = clock_.Now() + std::chrono::seconds(1);
  while (!heartbeat_log_.LastAck() && clock_.Now() < until) {
    std::this_thread::sleep_for(Millis(10));
  }
  if (!heartbeat_log_.LastAck()) {
    Log(LogLevel::kWarn,
        "no heartbeat acknowledged by the primary yet; replicas will show "
        "primary_unknown until one is");
  }
  for (auto& p : probers_) p->Start();
  Log(LogLevel::kInfo, "lagwatch " LAGWATCH_VERSION " watching " + std::to_string(probers_.size()) +
                           " replicas of primary " + config_.primary.Id() + "; metrics on http://" +
                           config_.http_listen + "/metrics");
  return Status::Ok();
}

void Agent::Stop() {
  for (auto& p : probers_) p->Stop();
  writer_.Stop();
  sampler_.Stop();
  publisher_.Stop();
  http_.reset();
}

bool Agent::FirstRoundDone() const {
  for (const auto& p : probers_) {
    if (!p->probed_once()) return false;
  }
  return true;
}

std::string Agent::Summary() const {
  std::string out;
  for (const auto& p : probers_) {
    ReplicaView v = p->view();
    if (!out.empty()) out += "; ";
    out += p->id() + " ";
    if (v.last) {
      out += v.last->state + (v.last->healthy ? " healthy" : " unhealthy") + " delay " +
             std::to_string(v.last->delay_lower_ms) + ".." + std::to_string(v.last->delay_ms) +
             " ms";
    } else {
      out += "not measured yet";
    }
  }
  return out;
}

}  // namespace lagwatch
