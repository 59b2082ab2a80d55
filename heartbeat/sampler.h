// The position sampler (docs/measurement.md, "Position bounds"): reads the primary's position
// every sampler.interval_ms on its own connection and appends it to a PositionHistory: MariaDB's
// @@gtid_binlog_pos, MySQL's @@GLOBAL.gtid_executed, or the binary log coordinates of SHOW BINLOG
// STATUS / SHOW BINARY LOG STATUS / SHOW MASTER STATUS. On every new connection it asks which
// server the primary is, its @@server_id, and so which positions kind to sample (the `positions`
// setting, or for "auto" the tightest the server has). Every 5 s it also reads the primary's
// connection and buffer pool figures for the alerts and reports them to a SamplerSink.
//
// The primary can change under it (SetPrimary): it then samples the new one, in the generation of
// the history the agent reset for it (PositionHistory::Reset), so no sample of the old one lands
// in it.
//
// Owns one thread (Start/Stop; the destructor stops). Each read has a deadline of one interval.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "base/clock.h"
#include "base/mysql_conn.h"
#include "base/thread_times.h"
#include "base/worker.h"
#include "heartbeat/history.h"
#include "heartbeat/sink.h"
#include "heartbeat/stream_history.h"

namespace lagwatch {

struct SamplerOptions {
  MysqlTarget primary;
  int interval_ms = 50;
  // The positions kind to sample; nullopt: "auto". kNone: no position is sampled; the primary's
  // flavor and load still are.
  std::optional<PositionsKind> positions;
};

// How much a server counter grew from `last` to `now_value` (a value that went down is a server
// restart: it counts from zero); nullopt for the first reading. Updates `last`.
std::optional<uint64_t> CounterGrowth(std::optional<uint64_t>& last, uint64_t now_value);

// The kind to sample on a primary of `flavor`: `setting`, or for auto (nullopt) MariaDB GTID on
// MariaDB (and on a server that does not say what it is); on MySQL and Percona its GTID sets when
// @@GLOBAL.gtid_mode is ON, else binary log coordinates. nullopt: the connection failed while
// asking.
std::optional<PositionsKind> ChoosePositionsKind(SqlConnection& conn, const ServerFlavor& flavor,
                                                 std::optional<PositionsKind> setting,
                                                 MonoTime deadline);

// Reads the primary's position of `kind`: @@gtid_binlog_pos, @@GLOBAL.gtid_executed, or the
// coordinates of BinaryLogStatusStatement(flavor). `*binlog_off` is set when the server answered
// that statement with no row (binary logging is off). REQUIRES: kind is not kNone.
Result<Position> ReadPrimaryPosition(SqlConnection& conn, PositionsKind kind,
                                     const ServerFlavor& flavor, MonoTime deadline,
                                     bool* binlog_off);

// The server's @@server_id: nullopt when the reply is not one number (the query's failure is the
// error).
Result<std::optional<uint32_t>> ReadServerId(SqlConnection& conn, MonoTime deadline);

class PositionSampler {
 public:
  // `history`, `sink` and `clock` must outlive the sampler. `connect` defaults to MysqlConns.
  PositionSampler(SamplerOptions options, PositionHistory* history, SamplerSink* sink,
                  const Clock& clock, SqlConnector connect = nullptr);
  ~PositionSampler() { Stop(); }

  // With `realtime`, the sampling thread asks for SCHED_FIFO priority 1 (base/event_loop.h): a
  // sample's sent time is what measures the binary log stream's delivery bound, and on a busy
  // host a thread at normal priority waits behind the servers between taking it and sending.
  void Start(bool realtime = false);
  void Stop();
  // Samples `primary` from now on, into the history's current generation: the wait under way is
  // cut short and the next round connects there.
  void SetPrimary(MysqlTarget primary);
  // Every sample from now on also measures the binary log stream's delivery (StreamHistory::
  // CheckSample). `stream` must outlive the sampler. REQUIRES: before Start. While a stream that
  // began less than kCatchUpWindow ago has not caught up (StreamHistory::CatchingUpSince), the
  // sampler samples every kCatchUpStep instead of every interval: the first sample sent after
  // the stream began and delivered by it proves it caught up, and until then the samples are
  // the replicas' bounds (on a primary just moved to, every replica's).
  void CheckStream(StreamHistory* stream) { stream_ = stream; }
  // Samples at once (the wait under way is cut short), then as before. For a stream that just
  // began (BinlogListener's `began`): its catch-up is proven a round trip later, not up to an
  // interval.
  void Urge();
  // Called on the sampler's thread after each sample that found the primary read-only (the agent
  // probes every server then, so that where else writes can go stays known: PositionHistory::
  // ReadOnlyNow). REQUIRES: before Start.
  void OnReadOnly(std::function<void()> fn) { on_read_only_ = std::move(fn); }

  // How long the sampler waits after a sample: one interval, doubled for each failure in a row
  // up to a second (a dead primary gets a connection a second, not one every 50 ms).
  static Millis Backoff(Millis interval, int failures);
  // The fast cadence while the stream catches up (CheckStream), and for how long after it began.
  static constexpr Millis kCatchUpStep{5};
  static constexpr Millis kCatchUpWindow{1000};

 private:
  void Run(std::stop_token stop);
  // Asks which server the primary is, its @@server_id and the positions kind to sample, sets
  // them in the history and reports them; the error when the connection failed (asked again next
  // round). A server that answers but not usefully is reported as an unknown flavor.
  Status AskSource(SqlConnection& conn, MonoTime deadline);
  // One sample sent at `sent`; Ok, or why no position was added.
  Status SampleOnce(SqlConnection& conn, MonoTime sent, MonoTime deadline);
  // A sample failed for a reason that will not go away on this connection (the server lacks the
  // variable or statement, the account the privilege, or binary logging is off): gives up this
  // kind for the next one auto would try (binlog, then none), or none when the kind was set.
  void GiveUpKind(const Status& why, unsigned server_errno);
  // Whether a failed sample is of that kind: this server or account cannot give this kind of
  // position at all.
  bool Permanent(const Status& st, unsigned server_errno) const;
  // Whether the stream checked is catching up, within kCatchUpWindow of its start (CheckStream).
  bool CatchingUp(MonoTime now) const;
  // Reads the primary's max_connections, Threads_connected and buffer pool counters into the
  // sink (every few seconds, on the sampler's connection).
  void PollPrimaryStatus(SqlConnection& conn, MonoTime deadline);

  const SamplerOptions options_;
  PositionHistory* const history_;
  SamplerSink* const sink_;
  const Clock& clock_;
  const SqlConnector connect_;
  StreamHistory* stream_ = nullptr;
  std::function<void()> on_read_only_;

  std::mutex mu_;
  MysqlTarget target_;              // GUARDED_BY(mu_): where to sample
  uint64_t target_generation_ = 0;  // GUARDED_BY(mu_): +1 on every SetPrimary
  std::stop_source wake_;           // GUARDED_BY(mu_): the wait under way, cut short to move

  // Used only by the sampler thread.
  // Its counters, which the history reads for the sample in flight (AnswerAwaited).
  std::shared_ptr<const ThreadTimes> times_;
  std::string primary_id_;           // the primary sampled
  uint64_t history_generation_ = 0;  // the history's generation this primary's samples go to
  // The server counters' last values.
  std::optional<uint64_t> last_read_requests_;
  std::optional<uint64_t> last_reads_;
  std::optional<ServerFlavor> last_flavor_;
  ServerFlavor flavor_;                // on the current connection
  std::optional<uint32_t> server_id_;  // the primary's @@server_id, on the current connection
  PositionsKind kind_ = PositionsKind::kNone;  // what is sampled on the current connection
  std::optional<PositionsKind> last_kind_;     // the kind last logged
  bool binlog_off_ = false;                    // the last sample found no binary log status
  Worker worker_;                              // last: stopped before the members it uses go away
};

}  // namespace lagwatch
