#include "heartbeat/writer.h"

#include "agent/log.h"
#include "agent/mysql_conn.h"
#include "agent/strings.h"
#include "exporters/metrics.h"
#include "exporters/redis_publisher.h"

namespace lagwatch {

HeartbeatSql::HeartbeatSql(const Config& config) {
  const std::string t = config.heartbeat.QualifiedName();
  const std::string id = std::to_string(config.agent_id);
  create_database = "CREATE DATABASE IF NOT EXISTS `" + config.heartbeat.database + "`";
  create_table = "CREATE TABLE IF NOT EXISTS " + t +
                 " (id INT UNSIGNED NOT NULL PRIMARY KEY,"
                 " updated_at DATETIME(6) NOT NULL,"
                 " seq BIGINT UNSIGNED NOT NULL,"
                 " server_id INT UNSIGNED NOT NULL) ENGINE=InnoDB";
  read_own_seq = "SELECT seq FROM " + t + " WHERE id = " + id;
  // NOW(6), not SYSDATE(6): it replicates as the primary's time (PLATFORM.md).
  upsert_prefix =
      "INSERT INTO " + t + " (id, updated_at, seq, server_id) VALUES (" + id + ", NOW(6), ";
  const std::string seq = "(SELECT seq FROM " + t + " WHERE id = " + id + ") AS seq";
  probe = "SELECT " + seq + ", @@gtid_slave_pos AS pos";
  probe_heartbeat_only = "SELECT " + seq;
}

std::string HeartbeatSql::Upsert(uint64_t seq) const {
  return upsert_prefix + std::to_string(seq) +
         ", @@server_id) ON DUPLICATE KEY UPDATE updated_at = VALUES(updated_at),"
         " seq = VALUES(seq), server_id = VALUES(server_id)";
}

HeartbeatWriter::HeartbeatWriter(const Config& config, HeartbeatLog* log, Metrics* metrics,
                                 RedisPublisher* publisher)
    : config_(config), sql_(config), log_(log), metrics_(metrics), publisher_(publisher) {}

void HeartbeatWriter::Start() {
  worker_.Start([this](std::stop_token st) { Run(st); });
}

void HeartbeatWriter::Stop() { worker_.Stop(); }

PrimaryView HeartbeatWriter::view() const {
  std::lock_guard lock(mu_);
  return view_;
}

Result<uint64_t> HeartbeatWriter::Prepare(MysqlConn& conn, MonoTime deadline) {
  if (config_.heartbeat.create_table) {
    if (auto r = conn.Query(sql_.create_database, deadline); !r.ok()) return r.status();
    if (auto r = conn.Query(sql_.create_table, deadline); !r.ok()) return r.status();
  }
  auto r = conn.Query(sql_.read_own_seq, deadline);
  if (!r.ok()) return r.status();
  if (r->rows.empty() || r->rows[0].empty() || !r->rows[0][0]) return uint64_t{0};
  auto seq = ParseInt<uint64_t>(*r->rows[0][0]);
  if (!seq) return Status::DataError("heartbeat row has a non-numeric seq");
  return *seq;
}

HeartbeatWriter::Attempt HeartbeatWriter::WriteOnce(MysqlConn& conn, MonoTime deadline) {
  Attempt a;
  if (!prepared_) {
    auto stored = Prepare(conn, deadline);
    if (!stored.ok()) {
      a.status = stored.status();
      return a;
    }
    next_seq_ = std::max(next_seq_, stored.value() + 1);
    prepared_ = true;
  }
  uint64_t seq = next_seq_++;
  MonoTime sent = std::chrono::steady_clock::now();
  log_->RecordSent(seq, sent);
  auto r = conn.Query(sql_.Upsert(seq), deadline);
  MonoTime done = std::chrono::steady_clock::now();
  a.took = std::chrono::duration_cast<Millis>(done - sent);
  a.status = r.status();
  if (r.ok()) {
    log_->RecordAcked(seq, done);
    metrics_->heartbeat_writes.Increment();
    metrics_->heartbeat_last_seq.Set(static_cast<double>(seq));
  } else if (a.status.code() == Status::Code::kServerError) {
    // Missing table or privileges: run the table step again next time.
    prepared_ = false;
  }
  return a;
}

void HeartbeatWriter::Run(std::stop_token stop) {
  const Millis interval(config_.heartbeat.interval_ms);
  MysqlConn conn(config_.primary, config_.primary_defaults_file, "primary " + config_.primary.Id(),
                 stop);
  CircuitBreaker circuit;
  MonoTime next = std::chrono::steady_clock::now();

  while (!stop.stop_requested()) {
    const MonoTime now = std::chrono::steady_clock::now();
    const MonoTime deadline = now + interval;
    bool read_only;
    {
      std::lock_guard lock(mu_);
      read_only = view_.read_only;
    }
    Status st;
    bool attempted = false;
    if (read_only) {
      // A read-only primary (demoted, or a failover in progress) is not written to; ask every
      // interval whether it is writable again.
      auto r = conn.Query("SELECT @@read_only", deadline);
      st = r.status();
      if (r.ok() && !r->rows.empty() && r->rows[0][0] && *r->rows[0][0] == "0") {
        Log(LogLevel::kInfo,
            "primary " + config_.primary.Id() + " is writable again; resuming heartbeat writes");
        read_only = false;
      }
    } else if (circuit.AllowAttempt(now)) {
      attempted = true;
      Attempt a = WriteOnce(conn, deadline);
      st = a.status;
      if (st.ok()) {
        circuit.RecordSuccess(now, a.took);
      } else if (conn.last_errno() == kErOptionPreventsStatement ||
                 conn.last_errno() == kErReadOnlyMode) {
        Log(LogLevel::kWarn, "primary " + config_.primary.Id() +
                                 " is read_only: not writing heartbeats until it is writable (" +
                                 st.message() + ")");
        read_only = true;
        st = Status::Ok();  // the primary answered; this is not a circuit failure
      } else if (st.code() != Status::Code::kCancelled) {
        circuit.RecordFailure(now);
        log_->RecordFailure(std::chrono::steady_clock::now());
      }
    }
    if (stop.stop_requested()) break;

    if (attempted && !st.ok()) {
      metrics_->heartbeat_errors.Add({{"reason", st.reason()}}).Increment();
      LogLimited(LogLevel::kWarn, "heartbeat", "heartbeat write failed: " + st.ToString());
    }
    PublishState(circuit, read_only, attempted ? st : Status::Ok());
    if (auto last = log_->LastAck()) {
      metrics_->heartbeat_age_seconds.Set(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - *last).count());
    }

    // Fixed rate: the next write is due one interval after this one was due; if we fell behind,
    // write now rather than bunching up.
    next += interval;
    MonoTime after = std::chrono::steady_clock::now();
    if (next < after) next = after;
    Worker::SleepUntil(stop, next);
  }
}

void HeartbeatWriter::PublishState(const CircuitBreaker& circuit, bool read_only,
                                   const Status& last) {
  PrimarySnapshot snap;
  {
    std::lock_guard lock(mu_);
    const std::string previous = view_.state;
    view_.state = circuit.PublicState();
    view_.consecutive_failures = circuit.consecutive_failures();
    view_.read_only = read_only;
    if (!last.ok()) {
      view_.last_error = last.ToString();
      view_.last_error_at_ms = UnixMillis(std::chrono::system_clock::now());
    }
    if (auto acked = log_->LastAck()) {
      // The wall time of the last acknowledgement, from its age on the monotonic clock.
      view_.last_write_ms = UnixMillis(std::chrono::system_clock::now()) -
                            ToMillis(std::chrono::steady_clock::now() - *acked);
    }
    if (previous != view_.state) {
      Log(view_.state == std::string("up") ? LogLevel::kInfo : LogLevel::kWarn,
          "primary " + config_.primary.Id() + " circuit is now " + view_.state + " (" +
              std::to_string(view_.consecutive_failures) + " consecutive failures)");
    }
    snap.id = config_.primary.Id();
    snap.state = view_.state;
    snap.last_write_ms = view_.last_write_ms;
    snap.consecutive_failures = view_.consecutive_failures;
    snap.read_only = read_only;
    snap.measured_mono = std::chrono::steady_clock::now();
  }
  for (size_t i = 0; i < std::size(kPrimaryStates); ++i) {
    metrics_->primary_state.Add({{"state", kPrimaryStates[i]}})
        .Set(snap.state == kPrimaryStates[i] ? 1 : 0);
  }
  metrics_->primary_consecutive_failures.Set(snap.consecutive_failures);
  metrics_->primary_read_only.Set(read_only ? 1 : 0);
  if (publisher_) publisher_->PublishPrimary(snap);
}

}  // namespace lagwatch
