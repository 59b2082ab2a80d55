// The accuracy benchmark's recorders: each runs on its own thread and appends to its own
// timeline, which the main thread reads only after Stop() (the join orders the accesses).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/worker.h"
#include "bench/analysis.h"
#include "bench/bench_util.h"

namespace lagwatch::bench {

// Starts `worker` (base/worker.h) running `tick` every `period` until it is stopped or the
// process is interrupted; it waits with SystemClock (base/clock.h), and `tick` gets the stop token
// for waits of its own. A tick that overruns its period is followed immediately by the next one;
// missed ticks are not made up.
void StartTicking(Worker& worker, std::chrono::microseconds period,
                  std::function<void(const std::stop_token&)> tick);

// Commits `INSERT INTO lwtest.oracle (id, t_us) VALUES (…)` on the primary every `period`,
// recording each id's send and ack times. The writer picks the ids (consecutive; see MoveTo), so
// they stay unique across primaries. Thread-safe: MoveTo may be called while it runs.
class OracleWriter {
 public:
  explicit OracleWriter(std::string primary_socket) : target_(std::move(primary_socket)) {}
  void Start(std::chrono::microseconds period);
  void Stop() { worker_.Stop(); }

  // Writes on `socket` from now on; "" writes nowhere until the next MoveTo. Returns once no
  // INSERT is in flight to the server before, so nothing the writer sends reaches it afterwards
  // (a primary about to be made read-only; the bench connects as root, which read_only does not
  // stop). The first INSERT on the new server asks it for MAX(id) first: rows logged after that
  // are not in its history (lost with a primary that died: marked skipped), and the writer jumps
  // kIdJump ids so that no id it uses there was ever used before (a lost row still sits on the
  // old primary, which would stop replicating on a duplicate key).
  void MoveTo(std::string socket);
  static constexpr int64_t kIdJump = 1000;

  // A move, as the writer carried it out on its first write there.
  struct Move {
    int64_t t_us = 0;
    std::string socket;
    int64_t max_id_there = 0;  // MAX(id) on the new primary
    size_t lost = 0;           // acked rows logged after that: lost with the old primary
    int64_t next_id = 0;       // the first id written there
  };

  // Read only after Stop().
  const OracleLog& log() const { return log_; }
  const std::vector<Move>& moves() const { return moves_; }
  size_t errors() const { return errors_; }
  const std::string& last_error() const { return last_error_; }

 private:
  void Tick();
  bool Arrive();  // the first write on a new target: see MoveTo

  std::mutex mu_;  // held for each INSERT; guards everything below
  std::string target_;
  std::unique_ptr<Sql> sql_;
  bool arrived_ = false;  // Arrive() done on target_
  int64_t next_id_ = 0;
  OracleLog log_;
  std::vector<Move> moves_;
  size_t errors_ = 0;
  std::string last_error_;
  Worker worker_;
};

// Watches a move of the primary to `socket` (server_id `server_id`) from its own thread, polling
// every 2 ms until both are seen or Stop(): the lagwatch heartbeat row `agent_id` in
// heartbeat.mysql_heartbeat written by that server (its server_id column), and lagwatch's pointer
// key (`pointer_key`, field `primary`) naming `primary_id` ("127.0.0.1:port") in the Redis that
// `redis` logs in to (the judge's: SandboxRedis(..., RedisUser::kAdmin)).
class MoveWatcher {
 public:
  MoveWatcher(std::string socket, int64_t server_id, int agent_id, RedisConfig redis,
              std::string pointer_key, std::string primary_id);
  void Start();
  void Stop() { worker_.Stop(); }
  // Read only after Stop(); 0 if not seen.
  int64_t heartbeat_written_us() const { return hb_written_us_; }  // the row's updated_at
  int64_t heartbeat_seen_us() const { return hb_seen_us_; }        // the poll that found it
  int64_t pointer_seen_us() const { return pointer_seen_us_; }

 private:
  void Tick();
  Sql sql_;
  Redis redis_;
  int64_t server_id_;
  std::string query_, pointer_key_, primary_id_;
  int64_t hb_written_us_ = 0, hb_seen_us_ = 0, pointer_seen_us_ = 0;
  Worker worker_;
};

// `SELECT MAX(id) FROM lwtest.oracle` on one replica every `period`.
class OracleReader {
 public:
  explicit OracleReader(std::string replica_socket) : sql_(std::move(replica_socket)) {}
  void Start(std::chrono::microseconds period);
  void Stop() { worker_.Stop(); }
  const std::vector<ReaderSample>& samples() const { return samples_; }
  size_t errors() const { return errors_; }
  size_t count() const { return count_.load(); }

 private:
  void Tick();
  Sql sql_;
  std::vector<ReaderSample> samples_;
  std::atomic<size_t> count_{0};
  size_t errors_ = 0;
  Worker worker_;
};

// HGETALL of every replica's key, pipelined, every `period`, in the Redis that `redis` logs in to
// (the judge's: SandboxRedis(..., RedisUser::kAdmin)); records each new record (a new
// measured_at_ms, or any field changed) and each appearance/disappearance of the key
// (LagwatchRecord, bench/analysis.h), and the last poll that still saw each.
class RedisPoller {
 public:
  RedisPoller(RedisConfig redis, std::vector<std::string> keys);
  void Start(std::chrono::microseconds period);
  void Stop() { worker_.Stop(); }
  const std::vector<LagwatchRecord>& records(size_t i) const { return records_[i]; }
  size_t count(size_t i) const { return counts_[i].load(); }
  size_t errors() const { return errors_; }
  size_t polls() const { return polls_; }
  // Why the last failed poll failed; empty if none did. Read only after Stop().
  const std::string& last_error() const { return redis_.last_error(); }

 private:
  void Tick();
  Redis redis_;
  std::vector<std::string> keys_;
  std::vector<std::vector<LagwatchRecord>> records_;
  std::vector<std::atomic<size_t>> counts_;
  size_t errors_ = 0;
  size_t polls_ = 0;
  Worker worker_;
};

// A reading from an external tool's output line or a polled query.
struct ToolReading {
  int64_t sent_us = 0;  // query sent (SQL pollers) or line received (pt-heartbeat)
  int64_t recv_us = 0;
  std::optional<double> value_ms;  // nullopt: NULL / unparsable
};

// Reads the pseudo-terminals of the pt-heartbeat --monitor processes; each line's first number
// (seconds) becomes a reading stamped with the time the line arrived. Lines are also copied to
// `log_path`.
class PtHeartbeatReader {
 public:
  PtHeartbeatReader(std::vector<int> pty_fds, const std::string& log_path);
  void Start();
  void Stop() { worker_.Stop(); }
  const std::vector<ToolReading>& readings(size_t i) const { return readings_[i]; }
  size_t count(size_t i) const { return counts_[i].load(); }
  size_t unparsed() const { return unparsed_; }

 private:
  void Tick(const std::stop_token& stop);
  void Line(size_t i, const std::string& line, int64_t now);
  std::vector<int> fds_;
  std::vector<std::string> partial_;
  std::vector<std::vector<ToolReading>> readings_;
  std::vector<std::atomic<size_t>> counts_;
  std::vector<bool> closed_;
  size_t unparsed_ = 0;
  std::ofstream log_;
  Worker worker_;
};

// Runs one single-value query every `period` on one server: SHOW SLAVE STATUS's
// Seconds_Behind_Master, or the naive `NOW(6) − updated_at`. `column` names the value to read;
// `scale_to_ms` converts it to milliseconds.
class ValuePoller {
 public:
  ValuePoller(std::string socket, std::string sql, std::string column, double scale_to_ms)
      : sql_(std::move(socket)),
        query_(std::move(sql)),
        column_(std::move(column)),
        scale_(scale_to_ms) {}
  void Start(std::chrono::microseconds period);
  void Stop() { worker_.Stop(); }
  const std::vector<ToolReading>& readings() const { return readings_; }
  size_t errors() const { return errors_; }
  const std::string& last_error() const { return last_error_; }

 private:
  void Tick();
  Sql sql_;
  std::string query_;
  std::string column_;
  double scale_;
  std::vector<ToolReading> readings_;
  size_t errors_ = 0;
  std::string last_error_;
  Worker worker_;
};

// Reads a lagwatch agent's binary log stream state (/api/v1/primary's `binlog_stream`, on
// 127.0.0.1:`port`) every `period`: whether the stream was usable and its delivery bound D as of
// that request, which explains how much of the stream's error is D itself, and why not when it
// was not.
class StreamStatePoller {
 public:
  struct Reading {
    int64_t sent_us = 0;
    bool usable = false;
    double delivery_bound_ms = 0;
    std::string why_not;  // when not usable: the API's `why_not` ("" if it gave none)
  };
  explicit StreamStatePoller(int port) : port_(port) {}
  void Start(std::chrono::microseconds period);
  void Stop() { worker_.Stop(); }
  const std::vector<Reading>& readings() const { return readings_; }
  size_t errors() const { return errors_; }

 private:
  void Tick();
  const int port_;
  std::vector<Reading> readings_;
  size_t errors_ = 0;
  Worker worker_;
};

}  // namespace lagwatch::bench
