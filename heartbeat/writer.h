// The heartbeat writer (DESIGN.md §3.2): upserts this agent's row on the primary every interval on
// its own connection, and records in a HeartbeatLog when each seq was sent and acknowledged.
//
// Owns one thread, started by Start() and stopped and joined by Stop() or the destructor. A write
// never outlives its interval: it is abandoned (and the connection reset) at the deadline.
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "agent/clock.h"
#include "agent/config.h"
#include "agent/status.h"
#include "heartbeat/history.h"

namespace lagwatch {

class Metrics;

// SQL used by the writer and the probers, built from validated identifiers only.
struct HeartbeatSql {
  explicit HeartbeatSql(const Config& config);
  std::string create_database;
  std::string create_table;
  std::string read_own_seq;   // SELECT seq ... WHERE id = agent_id
  std::string upsert_prefix;  // completed by Upsert()
  std::string Upsert(uint64_t seq) const;
  std::string probe;  // one autocommit round trip: our seq and @@gtid_slave_pos
  // For servers without MariaDB's GTID variables (MySQL): heartbeat bounds only.
  std::string probe_heartbeat_only;
};

// ER_UNKNOWN_SYSTEM_VARIABLE: the server has no @@gtid_slave_pos / @@gtid_binlog_pos (MySQL);
// lagwatch then falls back to heartbeat bounds.
inline constexpr unsigned kErUnknownSystemVariable = 1193;

class HeartbeatWriter {
 public:
  HeartbeatWriter(const Config& config, HeartbeatLog* log, Metrics* metrics);
  ~HeartbeatWriter() { Stop(); }

  void Start();
  void Stop();

  struct Health {
    uint64_t writes_ok = 0;
    uint64_t writes_failed = 0;
    int consecutive_failures = 0;
    std::string last_error;
  };
  Health health() const;

 private:
  void Run(std::stop_token stop);
  // Creates the table if configured; returns the seq already in our row (0 if none).
  Result<uint64_t> Prepare(class MysqlConn& conn, MonoTime deadline);

  // Constant after construction.
  const Config config_;
  const HeartbeatSql sql_;
  HeartbeatLog* const log_;
  Metrics* const metrics_;

  std::jthread thread_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  Health health_;  // GUARDED_BY(mu_)
};

}  // namespace lagwatch
