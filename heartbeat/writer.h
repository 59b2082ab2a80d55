// The heartbeat writer (docs/measurement.md, "Heartbeat"): upserts this agent's row on the primary
// every interval on its own connection, and records in a HeartbeatLog when each seq was sent and
// acknowledged. It guards the primary with a circuit breaker and reports its state to a
// WriterSink (the agent publishes it as `lagwatch:primary:<host>:<port>`); a read-only primary is
// not written to.
//
// The primary can change under it (SetPrimary: the agent follows a switchover or a failover): it
// then writes to the new one, continuing its seqs, with a fresh circuit.
//
// Owns one thread, started by Start() and stopped and joined by Stop() or the destructor. A write
// never outlives its interval: it is abandoned (and the connection reset) at the deadline.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "base/mysql_conn.h"
#include "base/snapshot.h"
#include "base/status.h"
#include "base/worker.h"
#include "heartbeat/circuit.h"
#include "heartbeat/heartbeat_sql.h"
#include "heartbeat/history.h"
#include "heartbeat/sink.h"

namespace lagwatch {

struct WriterOptions {
  MysqlTarget primary;
  HeartbeatConfig heartbeat;
  int64_t agent_id = 1;
};

class HeartbeatWriter {
 public:
  // `log`, `sink` and `clock` must outlive the writer. `connect` defaults to MysqlConns.
  HeartbeatWriter(WriterOptions options, HeartbeatLog* log, WriterSink* sink, const Clock& clock,
                  SqlConnector connect = nullptr);
  ~HeartbeatWriter() { Stop(); }

  void Start();
  void Stop();
  // Writes to `primary` from now on: the round under way ends, and the next one connects there.
  void SetPrimary(MysqlTarget primary);

  PrimaryView view() const;

 private:
  struct Attempt {
    Status status;
    Millis took{0};
  };
  void Run(std::stop_token stop);
  // One heartbeat (preparing the table first if needed).
  Attempt WriteOnce(SqlConnection& conn, MonoTime deadline);
  // Creates the table if configured; returns the seq already in our row (0 if none).
  Result<uint64_t> Prepare(SqlConnection& conn, MonoTime deadline);
  // Asks a read-only primary whether it is writable again; true when it is.
  bool WritableAgain(SqlConnection& conn, MonoTime deadline, Status* st);
  void ReportState(const CircuitBreaker& circuit, bool read_only, const Status& last);
  // The primary to write to, when it is not the one `generation` says the writer has (the
  // round's wait is cut short by SetPrimary through `wake`).
  std::optional<MysqlTarget> Moved(uint64_t* generation, const std::stop_source& wake);

  // Constant after construction.
  const WriterOptions options_;
  const HeartbeatSql sql_;
  HeartbeatLog* const log_;
  WriterSink* const sink_;
  const Clock& clock_;
  const SqlConnector connect_;

  // Used only by the writer thread. Seqs continue from the row already on the primary, so a
  // restarted agent never reuses a seq a lagging replica may still show.
  uint64_t next_seq_ = 0;
  bool prepared_ = false;
  std::string primary_id_;  // the primary written to

  mutable std::mutex mu_;
  PrimaryView view_;                // GUARDED_BY(mu_)
  MysqlTarget target_;              // GUARDED_BY(mu_): where to write
  uint64_t target_generation_ = 0;  // GUARDED_BY(mu_): +1 on every SetPrimary
  std::stop_source wake_;           // GUARDED_BY(mu_): the wait under way, cut short to move

  Worker worker_;  // last: stopped before the members it uses go away
};

}  // namespace lagwatch
