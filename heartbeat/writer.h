// The heartbeat writer (DESIGN.md §3.2): upserts this agent's row on the primary every interval on
// its own connection, and records in a HeartbeatLog when each seq was sent and acknowledged.
// It guards the primary with a circuit breaker and publishes its state as
// `lagwatch:primary:<host>:<port>`; a read-only primary is not written to.
//
// Owns one thread, started by Start() and stopped and joined by Stop() or the destructor. A write
// never outlives its interval: it is abandoned (and the connection reset) at the deadline.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "agent/clock.h"
#include "agent/config.h"
#include "agent/status.h"
#include "agent/worker.h"
#include "heartbeat/circuit.h"
#include "heartbeat/history.h"

namespace lagwatch {

class Metrics;
class RedisPublisher;

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
// Writes refused because the server is read-only (--read-only; MySQL's super_read_only).
inline constexpr unsigned kErOptionPreventsStatement = 1290;
inline constexpr unsigned kErReadOnlyMode = 1836;

// The writer's view of the primary, for the API and the primary's Redis hash.
struct PrimaryView {
  std::string state = "down";  // CircuitBreaker::PublicState()
  int consecutive_failures = 0;
  bool read_only = false;     // writes paused because the primary is read-only
  int64_t last_write_ms = 0;  // unix ms of the last acknowledged heartbeat; 0: none yet
  std::string last_error;
  int64_t last_error_at_ms = 0;
};

class HeartbeatWriter {
 public:
  // `publisher` may be null (no primary hash is published).
  HeartbeatWriter(const Config& config, HeartbeatLog* log, Metrics* metrics,
                  RedisPublisher* publisher);
  ~HeartbeatWriter() { Stop(); }

  void Start();
  void Stop();

  PrimaryView view() const;

 private:
  struct Attempt {
    Status status;
    Millis took{0};
  };
  void Run(std::stop_token stop);
  // One heartbeat (preparing the table first if needed).
  Attempt WriteOnce(class MysqlConn& conn, MonoTime deadline);
  // Creates the table if configured; returns the seq already in our row (0 if none).
  Result<uint64_t> Prepare(class MysqlConn& conn, MonoTime deadline);
  void PublishState(const CircuitBreaker& circuit, bool read_only, const Status& last);

  // Constant after construction.
  const Config config_;
  const HeartbeatSql sql_;
  HeartbeatLog* const log_;
  Metrics* const metrics_;
  RedisPublisher* const publisher_;

  // Used only by the writer thread. Seqs continue from the row already on the primary, so a
  // restarted agent never reuses a seq a lagging replica may still show.
  uint64_t next_seq_ = 0;
  bool prepared_ = false;

  mutable std::mutex mu_;
  PrimaryView view_;  // GUARDED_BY(mu_)

  Worker worker_;  // last: stopped before the members it uses go away
};

}  // namespace lagwatch
