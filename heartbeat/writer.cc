#include "heartbeat/writer.h"

#include "agent/log.h"
#include "agent/mysql_conn.h"
#include "agent/strings.h"
#include "exporters/metrics.h"

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

HeartbeatWriter::HeartbeatWriter(const Config& config, HeartbeatLog* log, Metrics* metrics)
    : config_(config), sql_(config), log_(log), metrics_(metrics) {}

void HeartbeatWriter::Start() {
  thread_ = std::jthread([this](std::stop_token st) { Run(st); });
}

void HeartbeatWriter::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  cv_.notify_all();
  thread_.join();
}

HeartbeatWriter::Health HeartbeatWriter::health() const {
  std::lock_guard lock(mu_);
  return health_;
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

void HeartbeatWriter::Run(std::stop_token stop) {
  const Millis interval(config_.heartbeat.interval_ms);
  MysqlConn conn(config_.primary, config_.primary_defaults_file, "primary " + config_.primary.Id(),
                 stop);
  // Seqs continue from the row already on the primary, so a restarted agent never reuses a seq a
  // lagging replica may still show.
  uint64_t next_seq = 0;
  bool prepared = false;
  MonoTime next = std::chrono::steady_clock::now();
  std::mutex wait_mu;

  while (!stop.stop_requested()) {
    MonoTime deadline = next + interval;
    Status st;
    if (!prepared) {
      auto stored = Prepare(conn, deadline);
      if (stored.ok()) {
        next_seq = std::max(next_seq, stored.value() + 1);
        prepared = true;
      }
      st = stored.status();
    }
    if (prepared) {
      uint64_t seq = next_seq++;
      MonoTime sent = std::chrono::steady_clock::now();
      log_->RecordSent(seq, sent);
      auto r = conn.Query(sql_.Upsert(seq), deadline);
      if (r.ok()) {
        MonoTime acked = std::chrono::steady_clock::now();
        log_->RecordAcked(seq, acked);
        metrics_->heartbeat_writes.Increment();
        metrics_->heartbeat_last_seq.Set(static_cast<double>(seq));
      }
      st = r.status();
    }
    {
      std::lock_guard lock(mu_);
      if (st.ok()) {
        ++health_.writes_ok;
        if (health_.consecutive_failures > 0) {
          Log(LogLevel::kInfo, "heartbeat writes to " + config_.primary.Id() + " recovered");
        }
        health_.consecutive_failures = 0;
      } else if (st.code() != Status::Code::kCancelled) {
        ++health_.writes_failed;
        ++health_.consecutive_failures;
        health_.last_error = st.ToString();
        metrics_->heartbeat_errors.Add({{"reason", st.reason()}}).Increment();
        LogLimited(LogLevel::kWarn, "heartbeat", "heartbeat write failed: " + st.ToString());
        // A server-side error (missing table, privileges) needs the table step again.
        if (st.code() == Status::Code::kServerError) prepared = false;
      }
    }
    if (auto last = log_->LastAck()) {
      metrics_->heartbeat_age_seconds.Set(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - *last).count());
    }

    // Fixed rate: the next write is due one interval after this one was due; if we fell behind,
    // write now rather than bunching up.
    next += interval;
    MonoTime now = std::chrono::steady_clock::now();
    if (next < now) next = now;
    std::unique_lock lock(wait_mu);
    cv_.wait_until(lock, stop, next, [] { return false; });
  }
}

}  // namespace lagwatch
