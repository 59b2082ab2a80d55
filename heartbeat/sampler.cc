#include "heartbeat/sampler.h"

#include "base/log.h"
#include "base/mysql_errors.h"
#include "base/strings.h"
#include "heartbeat/gtid.h"

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

}  // namespace

std::optional<uint64_t> CounterGrowth(std::optional<uint64_t>& last, uint64_t now_value) {
  std::optional<uint64_t> growth;
  if (last) growth = now_value >= *last ? now_value - *last : now_value;
  last = now_value;
  return growth;
}

Millis PositionSampler::Backoff(Millis interval, int failures) {
  Millis wait = interval;
  for (int i = 0; i < failures && wait < kMaxBackoff; ++i) wait *= 2;
  return std::min(wait, std::max(kMaxBackoff, interval));
}

void PositionSampler::PollPrimaryStatus(SqlConnection& conn, MonoTime deadline) {
  auto r = conn.Query(kStatusSql, deadline);
  if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 4) {
    if (r.status().code() != Status::Code::kCancelled) {
      sink_->SampleFailed(r.ok() ? "bad_data" : r.status().reason());
    }
    return;
  }
  const auto& row = r->rows[0];
  auto num = [&](size_t i) { return row[i] ? ParseInt<uint64_t>(*row[i]) : std::nullopt; };
  PrimaryLoad load;
  load.max_connections = num(0);
  load.threads_connected = num(1);
  if (auto v = num(2))
    load.buffer_pool_read_requests_growth = CounterGrowth(last_read_requests_, *v);
  if (auto v = num(3)) load.buffer_pool_reads_growth = CounterGrowth(last_reads_, *v);
  sink_->PrimaryLoadRead(load);
}

PositionSampler::PositionSampler(SamplerOptions options, PositionHistory* history,
                                 SamplerSink* sink, const Clock& clock, SqlConnector connect)
    : options_(std::move(options)),
      history_(history),
      sink_(sink),
      clock_(clock),
      connect_(connect ? std::move(connect) : MysqlConnector(options_.primary, clock)) {}

void PositionSampler::Start() {
  worker_.Start([this](std::stop_token st) { Run(st); });
}

void PositionSampler::Stop() { worker_.Stop(); }

bool PositionSampler::AskFlavor(SqlConnection& conn, MonoTime deadline) {
  auto r = conn.Query(kServerFlavorQuery, deadline);
  if (!r.ok() && r.status().code() != Status::Code::kServerError) return false;
  ServerFlavor flavor;
  if (r.ok()) {
    if (auto parsed = ParseServerFlavor(*r); parsed.ok()) flavor = parsed.value();
  }
  if (flavor != last_flavor_) {
    // Logged when it changes, not on every reconnect of a flapping primary.
    Log(LogLevel::kInfo, "primary " + options_.primary.endpoint.Id() + " is " + flavor.Describe());
    last_flavor_ = flavor;
  }
  sink_->PrimaryFlavorRead(flavor);
  return true;
}

Status PositionSampler::SampleOnce(SqlConnection& conn, MonoTime sent, MonoTime deadline) {
  history_->BeginSample(sent);
  auto r = conn.Query("SELECT @@gtid_binlog_pos", deadline);
  const MonoTime received = clock_.Now();
  if (!r.ok()) return r.status();
  if (r->rows.size() != 1 || r->rows[0].size() != 1) {
    return Status::DataError("unexpected result shape for @@gtid_binlog_pos");
  }
  auto pos = GtidPos::Parse(r->rows[0][0].value_or(""));
  if (!pos.ok()) return pos.status();
  history_->Add(pos.value(), sent, received);
  sink_->PositionSampled();
  return Status::Ok();
}

void PositionSampler::Run(std::stop_token stop) {
  const Millis interval(options_.interval_ms);
  // A connect can take longer than one 50 ms sampling interval; allow it a few.
  // A sample is waited for up to kPatience, not one interval: one sent while the primary stalls
  // (e.g. an fsync) still proves the replicas fresh as of its send time when it answers, where an
  // abandoned one leaves a gap that makes every replica look lagged. The primary counts as
  // unknown as soon as a sample is overdue (PositionHistory::OutstandingSince), not when it
  // finally fails.
  const Millis patience = std::max(interval, kPatience);
  std::unique_ptr<SqlConnection> conn = connect_(stop);
  MonoTime next = clock_.Now();
  int failures = 0;
  MonoTime next_status = next;
  bool flavor_known = false;
  while (!stop.stop_requested()) {
    if (!flavor_known) flavor_known = AskFlavor(*conn, clock_.Now() + patience);
    const MonoTime sent = clock_.Now();
    const Status st =
        options_.sample_positions ? SampleOnce(*conn, sent, sent + patience) : Status::Ok();
    const MonoTime received = clock_.Now();
    if (st.code() == Status::Code::kServerError && conn->last_errno() == kErUnknownSystemVariable) {
      Log(LogLevel::kWarn, "primary " + options_.primary.endpoint.Id() +
                               " has no @@gtid_binlog_pos (not MariaDB?): position sampling off, "
                               "heartbeat bounds only");
      return;
    }
    if (!st.ok() && st.code() != Status::Code::kCancelled) {
      // The connection may have been reset, and the next one may reach another server.
      flavor_known = false;
      history_->RecordFailure(received);
      sink_->SampleFailed(st.reason());
      LogLimited(LogLevel::kWarn, "sampler", "position sample failed: " + st.ToString());
    }
    if (st.ok() && received >= next_status) {
      next_status = received + kStatusInterval;
      PollPrimaryStatus(*conn, received + interval);
    }
    // On a dead or hung primary, back off (up to a second) instead of a connection every 50 ms.
    failures = st.ok() ? 0 : failures + 1;
    next += options_.sample_positions ? Backoff(interval, failures) : kStatusInterval;
    const MonoTime now = clock_.Now();
    if (next < now) next = now;
    clock_.SleepUntil(stop, next);
  }
}

}  // namespace lagwatch
