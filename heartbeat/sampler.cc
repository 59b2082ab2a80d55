#include "heartbeat/sampler.h"

#include "agent/log.h"
#include "agent/mysql_conn.h"
#include "agent/strings.h"
#include "exporters/metrics.h"
#include "heartbeat/gtid.h"
#include "heartbeat/writer.h"

namespace lagwatch {
namespace {
constexpr Millis kMaxBackoff(1000);
constexpr Millis kPatience(1000);
// How often the primary's own load figures are read (alerts on connections and buffer pool).
constexpr Millis kStatusInterval(5000);
constexpr const char* kStatusSql =
    "SELECT @@max_connections,"
    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
    "  WHERE VARIABLE_NAME = 'THREADS_CONNECTED'),"
    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
    "  WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_READ_REQUESTS'),"
    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
    "  WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_READS')";

// Adds the growth of a server counter to a Prometheus counter; a server restart (the value went
// down) starts over from the new value.
void Follow(prometheus::Counter& counter, std::optional<uint64_t>& last, uint64_t now_value) {
  if (last && now_value >= *last) {
    counter.Increment(static_cast<double>(now_value - *last));
  } else if (last) {
    counter.Increment(static_cast<double>(now_value));
  }
  last = now_value;
}
}  // namespace

void PositionSampler::PollPrimaryStatus(MysqlConn& conn, MonoTime deadline) {
  auto r = conn.Query(kStatusSql, deadline);
  if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 4) {
    if (r.status().code() != Status::Code::kCancelled) {
      metrics_->sampler_errors.Add({{"reason", r.ok() ? "bad_data" : r.status().reason()}})
          .Increment();
    }
    return;
  }
  const auto& row = r->rows[0];
  auto num = [&](size_t i) { return row[i] ? ParseInt<uint64_t>(*row[i]) : std::nullopt; };
  if (auto v = num(0)) metrics_->primary_max_connections.Set(static_cast<double>(*v));
  if (auto v = num(1)) metrics_->primary_threads_connected.Set(static_cast<double>(*v));
  if (auto v = num(2)) Follow(metrics_->primary_bp_read_requests, last_read_requests_, *v);
  if (auto v = num(3)) Follow(metrics_->primary_bp_reads, last_reads_, *v);
}

PositionSampler::PositionSampler(const Config& config, PositionHistory* history, Metrics* metrics)
    : config_(config), history_(history), metrics_(metrics) {}

void PositionSampler::Start() {
  worker_.Start([this](std::stop_token st) { Run(st); });
}

void PositionSampler::Stop() { worker_.Stop(); }

void PositionSampler::Run(std::stop_token stop) {
  const Millis interval(config_.sampler_interval_ms);
  // A connect can take longer than one 50 ms sampling interval; allow it a few.
  // A sample is waited for up to kPatience, not one interval: one sent while the primary stalls
  // (e.g. an fsync) still proves the replicas fresh as of its send time when it answers, where an
  // abandoned one leaves a gap that makes every replica look lagged. The primary counts as
  // unknown as soon as a sample is overdue (PositionHistory::OutstandingSince), not when it
  // finally fails.
  const Millis patience = std::max(interval, kPatience);
  MysqlConn conn(config_.primary, config_.primary_defaults_file, "primary " + config_.primary.Id(),
                 stop);
  MonoTime next = std::chrono::steady_clock::now();
  int failures = 0;
  MonoTime next_status = next;
  while (!stop.stop_requested()) {
    MonoTime sent = std::chrono::steady_clock::now();
    MonoTime deadline = sent + patience;
    history_->BeginSample(sent);
    auto r = conn.Query("SELECT @@gtid_binlog_pos", deadline);
    MonoTime received = std::chrono::steady_clock::now();
    Status st = r.status();
    if (r.ok()) {
      if (r->rows.size() != 1 || r->rows[0].size() != 1) {
        st = Status::DataError("unexpected result shape for @@gtid_binlog_pos");
      } else {
        auto pos = GtidPos::Parse(r->rows[0][0].value_or(""));
        if (pos.ok()) {
          history_->Add(pos.value(), sent, received);
          metrics_->sampler_samples.Increment();
        } else {
          st = pos.status();
        }
      }
    }
    if (!r.ok() && conn.last_errno() == kErUnknownSystemVariable) {
      Log(LogLevel::kWarn, "primary " + config_.primary.Id() +
                               " has no @@gtid_binlog_pos (not MariaDB?): position sampling off, "
                               "heartbeat bounds only");
      return;
    }
    if (!st.ok() && st.code() != Status::Code::kCancelled) {
      history_->RecordFailure(received);
      metrics_->sampler_errors.Add({{"reason", st.reason()}}).Increment();
      LogLimited(LogLevel::kWarn, "sampler", "position sample failed: " + st.ToString());
    }
    if (st.ok() && received >= next_status) {
      next_status = received + kStatusInterval;
      PollPrimaryStatus(conn, received + interval);
    }
    // On a dead or hung primary, back off (up to a second) instead of a connection every 50 ms.
    failures = st.ok() ? 0 : failures + 1;
    Millis wait = interval;
    for (int i = 0; i < failures && wait < kMaxBackoff; ++i) wait *= 2;
    next += std::min(wait, std::max(kMaxBackoff, interval));
    MonoTime now = std::chrono::steady_clock::now();
    if (next < now) next = now;
    Worker::SleepUntil(stop, next);
  }
}

}  // namespace lagwatch
