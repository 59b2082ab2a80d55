// The binary log listener (docs/measurement.md, "Stream bounds"): connects to the current
// primary as a replica would, with a server id of its own, asks for its binary log from the
// primary's current position and records in a StreamHistory when each transaction's first
// event arrives, with the position after it, and every heartbeat event (the dump thread sends
// one after MASTER_HEARTBEAT_PERIOD without events).
//
// The stream follows the positions kind the sampler chose (PositionHistory::kind()):
//   - mariadb_gtid: @slave_connect_state = @@gtid_binlog_pos, then COM_BINLOG_DUMP (MariaDB
//     starts after that GTID state: the replication protocol of MariaDB's own replicas);
//   - binlog: COM_BINLOG_DUMP from the coordinates of the binary log status statement;
//   - mysql_gtid: COM_BINLOG_DUMP_GTID with @@GLOBAL.gtid_executed (MySQL sends what the set
//     lacks); it needs no file.
// Before the dump: @master_heartbeat_period (nanoseconds, MariaDB's and MySQL's user variable),
// @master_binlog_checksum (and MySQL's @source_binlog_checksum) = @@global.binlog_checksum,
// @mariadb_slave_capability = 4 (GTID events as themselves), and COM_REGISTER_SLAVE so the
// primary lists it in SHOW SLAVE HOSTS.
//
// Failures never make a bound optimistic: the stream is then not usable (StreamHistory) and the
// sampler's bounds stand. A refused dump (no REPLICATION SLAVE: ER_SPECIFIC_ACCESS_DENIED_ERROR,
// or binary logging off) is retried every 30 s; a cut, a timeout (5 s without a packet) or a bad
// event restarts the stream after a backoff (doubling from 100 ms to 5 s); each is counted
// through the sink and logged, rate-limited.
//
// Owns one thread (Start/Stop; the destructor stops). Stop and SetPrimary cut a read under way
// by shutting the socket down. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "base/mysql_conn.h"
#include "base/worker.h"
#include "heartbeat/applied_witness.h"
#include "heartbeat/history.h"
#include "heartbeat/stream_history.h"

namespace lagwatch {

struct ListenerOptions {
  MysqlTarget primary;
  uint32_t server_id = 0;  // REQUIRES: not 0, unique among the primary's replicas
  int heartbeat_ms = 10;   // MASTER_HEARTBEAT_PERIOD asked for
  // Set: the listener follows a server that is not the primary (`primary` names it), for writes
  // made there (binlog_stream.watch_writes). It reads the server's @@server_id at each start and
  // calls this, on its thread, with the first arrival of every transaction whose origin (the
  // server id in its first event's header) is that server: a write there, not one it replicated.
  // Its stream history is its own, and its log lines say what it follows.
  std::function<void(MonoTime first_arrival)> own_write = nullptr;
  // With own_write, and positions of a GTID kind: what the server followed (by endpoint id) is
  // proven to have applied, called on the listener's thread as each transaction it replicated
  // arrives, and with nullopt when the proof ends (the stream stopped, or a write was made there).
  // The proof is the position before that transaction: the events of a transaction leave with
  // its commit possibly still under way, but a server that applies one transaction at a time
  // (@@slave_parallel_threads, or MySQL's @@replica_parallel_workers, at most 1, read at each
  // start) began this one after the one before had committed. A server applying in parallel
  // gives no proof: its transactions commit in groups.
  std::function<void(const std::string& server, std::optional<AppliedProof> proof)> applied =
      nullptr;
  // Called on the listener's thread each time a stream began (StreamHistory::Begin), before its
  // first event is read: the agent has the sampler sample at once (PositionSampler::Urge), and
  // that sample, once delivered, proves the stream caught up.
  std::function<void()> began = nullptr;
};

// What the listener reports as it works (the agent connects it to the metrics). Thread-safe.
class ListenerSink {
 public:
  virtual ~ListenerSink() = default;
  // The stream started on the primary, from this position.
  virtual void StreamStarted(const Position& start) = 0;
  // It stopped or could not start; `reason`: one of stream_error::kAll (base/stream_reason.h).
  virtual void StreamFailed(std::string_view reason, const Status& cause) = 0;
  // Packets read and their bytes, since the previous call.
  virtual void StreamRead(uint64_t events, uint64_t bytes) = 0;
};

// The packets of the dump's commands, as the servers read them (MySQL's and MariaDB's
// COM_REGISTER_SLAVE, COM_BINLOG_DUMP and COM_BINLOG_DUMP_GTID; the command byte is not
// included). Exposed for the tests.
std::string RegisterReplicaPacket(uint32_t server_id);
std::string BinlogDumpPacket(uint32_t server_id, const std::string& file, uint32_t position);
std::string BinlogDumpGtidPacket(uint32_t server_id, const std::string& encoded_set);

class BinlogListener {
 public:
  // `history` (for the positions kind and its generation), `stream`, `sink` and `clock` must
  // outlive the listener.
  BinlogListener(ListenerOptions options, const PositionHistory* history, StreamHistory* stream,
                 ListenerSink* sink, const Clock& clock);
  ~BinlogListener() { Stop(); }

  // With `realtime`, the listening thread asks for SCHED_FIFO priority 1 (base/event_loop.h): on
  // a busy host a thread at normal priority reads late. What it reads late is stamped no later
  // than it arrived (heartbeat/arrival_stamp.h), but the bounds from it are looser by as much.
  void Start(bool realtime = false);
  void Stop();
  // Follows `primary` from now on: the stream under way is cut and the next starts there.
  void SetPrimary(MysqlTarget primary);

 private:
  void Run(std::stop_token stop);
  // One stream, from connect to its end; the reason it ended, with the server's error number
  // (0: none) and whether the stream got as far as starting.
  Status Session(const MysqlTarget& target, PositionsKind kind, uint64_t generation,
                 std::stop_token stop, unsigned* server_errno, bool* started);
  Status Stream(MysqlConn& conn, const MysqlTarget& target, PositionsKind kind, uint64_t generation,
                std::stop_token stop, bool* started);
  // Shuts down the socket of the read under way, if any.
  void Interrupt();

  const ListenerOptions options_;
  const PositionHistory* const history_;
  StreamHistory* const stream_;
  ListenerSink* const sink_;
  const Clock& clock_;

  std::mutex mu_;
  MysqlTarget target_;              // GUARDED_BY(mu_)
  uint64_t target_generation_ = 0;  // GUARDED_BY(mu_): +1 on every SetPrimary
  int fd_ = -1;                     // GUARDED_BY(mu_): the socket being read, -1 between reads
  std::stop_source wake_;           // GUARDED_BY(mu_): the backoff under way

  Worker worker_;  // last: stopped before the members it uses go away
};

}  // namespace lagwatch
