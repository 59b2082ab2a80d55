// What the primary's binary log stream says (docs/measurement.md, "Stream bounds"), on the
// agent's monotonic clock: when the first event of each transaction arrived and the primary's
// position after it (runs, oldest first), when the stream last proved itself alive, and how late
// it delivers, measured against the position sampler's samples. Written by the listener
// (heartbeat/binlog_listener.h) and the sampler, read by every prober. Thread-safe.
//
// The bound. A transaction's events leave the primary after it is written to the binary log and
// before its commit is visible (the binary log is written first), so a transaction whose first
// event arrived at `a` was written no earlier than a − D, where D bounds the delivery delay. A
// replica that has run j but not run j+1 lacks nothing written before a(j+1) − D: its staleness
// at r is at most r − (a(j+1) − D). With nothing after run j, the stream's last sign of life at
// `alive` (a heartbeat, sent by the dump thread only once it has sent all there is, or the start
// of a transaction) gives r − (alive − D). The stream gives no lower bound: a transaction's
// events can leave before its commit is visible, so its arrival does not prove it committed.
//
// D is measured, not assumed: a sample sent at `t` read a position P that holds everything
// written before t; the stream delivered P at A(P), so everything written before t arrived by
// A(P), a lag of A(P) − t. D for a transaction that arrived at `a` is the largest lag of the
// samples sent from a − lag_span on and of those sent before `a` and delivered at or after it,
// never less than a floor: a delivery delay X ≤ lag_span is seen by the first sample sent after
// the transaction was written (lag ≥ X − the sampling interval, and the wait itself keeps the
// stream `behind` while it lasts), a longer one by the sample sent about lag_span before `a`,
// whose lag is then about lag_span (over max_lag: no bound), or, when no sample was sent then
// (the sampler waiting on a frozen primary), by the one it waited on, delivered after `a`. So a
// lag spike loosens the bounds from the transactions around it, and the stream is `slow` only
// while the spike is within lag_span of now, not for as long as lags are kept.
// The stream is usable only while it keeps that promise: caught up since it began (a heartbeat
// event, or a sample sent after its start delivered by a transaction after it: until then what
// arrives may be a backlog the dump thread reads out of the binary log, later than D says, and
// once caught up that backlog counts as its newest transaction), alive recently, no sample waiting
// longer than the largest lag it may have, D itself under that limit, started on this primary and
// not broken. When it is not, it gives no bounds (the sampler's stand, at once), says why, and
// comes back only when all of that holds again, which after a lag spike means once the spike is
// lag_span old; a replica that still lacks a transaction whose D is over the limit, or older than
// the lags kept (lag_window), gets no stream bound either.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/position.h"
#include "base/stream_reason.h"

namespace lagwatch {

struct StreamHistoryOptions {
  size_t capacity = 4096;              // runs kept
  Millis alive_within = Millis(100);   // the stream is silent after this long without a sign
  Millis max_lag = Millis(50);         // a sample undelivered this long, or D over it: behind
  Millis lag_span = Millis(1000);      // D at `a`: the largest lag of samples sent since a − this
  Millis lag_window = Millis(10000);   // lags kept this long (and never less than 2 × lag_span)
  Micros min_delivery = Micros(1000);  // D is never less than this
};

class StreamHistory {
 public:
  explicit StreamHistory(StreamHistoryOptions options = {});

  // The listener started a stream on the current primary at `at`, from `start` (the position
  // it asked for: the primary had it before `at`). Forgets the previous stream's runs, checks
  // and lags. Returns the stream's token: what the listener records with it is ignored once
  // another stream began or Reset ran.
  uint64_t Begin(const Position& start, MonoTime at);
  // A transaction ended in stream `token`: `after`, whose first event arrived at
  // `first_arrival`. Resolves the samples it delivers. `commit_us`: MySQL's original and
  // immediate commit timestamps of it (GTID_LOG_EVENT; microseconds on those servers' clocks),
  // kept for the API and never compared with the agent's clock.
  void Transaction(uint64_t token, const Position& after, MonoTime first_arrival,
                   std::optional<std::pair<uint64_t, uint64_t>> commit_us = std::nullopt);
  // A heartbeat (`heartbeat`), or a transaction's first event, arrived at `at`.
  void Alive(uint64_t token, MonoTime at, bool heartbeat = false);
  // Stream `token` stopped (cut, refused, bad input); Begin starts the next.
  void Stop(uint64_t token);
  // The primary changed: forgets everything; Begin on the new one starts again.
  void Reset();

  // A position sample of the primary: `pos` was read after `sent`.
  void CheckSample(const Position& pos, MonoTime sent);

  struct State {
    bool usable = false;
    const char* why_not = stream_reason::kDown;  // when not usable
    Micros delivery_bound{0};                    // D
    std::optional<MonoTime> last_alive;
    std::optional<Position> position;  // the newest run's
    // The last transaction's original and immediate commit timestamps, when MySQL said.
    std::optional<std::pair<uint64_t, uint64_t>> commit_us;
  };
  State StateAt(MonoTime now) const;

  // How often the stream stopped being usable since the previous call, by reason (a transition
  // from usable, as StateAt and Locate saw it, or a probe's NoteLate; each is also logged,
  // rate-limited).
  std::vector<std::pair<const char*, uint64_t>> TakeFallbacks();
  // A probe left the stream's bound out: it contradicted a lower bound (stream_reason::kLate).
  void NoteLate() const;

  // When the stream running now began, while it has not yet proven itself caught up (Begin,
  // CatchUp); nullopt otherwise. The sampler samples fast meanwhile: a sample sent since Begin is
  // what proves it on a primary that writes (no heartbeat event comes while it does), and until
  // then the samples alone bound the replicas.
  std::optional<MonoTime> CatchingUpSince() const;

  // When the newest transaction's first event arrived; nullopt while none has since the stream
  // began. For the probes that follow commits (probe.after_commit_ms).
  std::optional<MonoTime> LastTransactionArrival() const;

  struct Bounds {
    std::optional<MonoTime> fresh_at;  // staleness at r is at most r − fresh_at
    bool incomparable = false;
  };
  // Bounds for a replica at `replica_pos`, probed at `now`; none when the stream is not usable
  // at `now` (StateAt) or the replica is behind every run kept.
  Bounds Locate(const Position& replica_pos, MonoTime now) const;

 private:
  struct Run {
    Position pos;
    MonoTime first_arrival;
  };
  struct Pending {
    Position pos;
    MonoTime sent;
  };
  struct Lag {
    MonoTime sent;
    Micros lag;  // delivered at sent + lag
  };
  State StateLocked(MonoTime now) const;  // REQUIRES: mu_ held
  // Counts a transition from usable to `s`; the reason to log, or null. REQUIRES: mu_ held.
  const char* Observe(const State& s) const;
  static void LogFallback(const char* reason);
  // Locate's work under mu_ (takes it).
  Bounds LocateLocked(const Position& replica_pos, MonoTime now, const char** fell) const;
  void AddLag(MonoTime sent, MonoTime delivered);  // REQUIRES: mu_ held
  // D for a transaction that arrived at `a`; nullopt when lags that old are no longer kept.
  // REQUIRES: mu_ held
  std::optional<Micros> DeliveryBoundAt(MonoTime a, MonoTime now) const;
  // The stream has caught up by `upto` (a heartbeat, or a sample sent since Begin delivered by
  // a transaction after the start): what arrived by then is one run. REQUIRES: mu_ held
  void CatchUp(MonoTime upto);

  const StreamHistoryOptions options_;
  mutable std::mutex mu_;
  uint64_t token_ = 0;                        // GUARDED_BY(mu_)
  bool running_ = false;                      // GUARDED_BY(mu_)
  bool incomparable_ = false;                 // GUARDED_BY(mu_)
  bool caught_up_ = false;                    // GUARDED_BY(mu_): since Begin (CatchUp)
  MonoTime began_;                            // GUARDED_BY(mu_)
  std::optional<MonoTime> last_alive_;        // GUARDED_BY(mu_)
  std::optional<MonoTime> last_transaction_;  // GUARDED_BY(mu_)
  std::deque<Run> runs_;                      // GUARDED_BY(mu_), oldest first
  std::deque<Pending> pending_;               // GUARDED_BY(mu_), oldest first
  std::deque<Lag> lags_;                      // GUARDED_BY(mu_), by `sent`, oldest first
  std::vector<Lag> long_lags_;  // GUARDED_BY(mu_): those of lags_ longer than lag_span
  std::optional<std::pair<uint64_t, uint64_t>> commit_us_;  // GUARDED_BY(mu_)
  mutable bool was_usable_ = false;                         // GUARDED_BY(mu_)
  mutable std::map<std::string, uint64_t> fallbacks_;       // GUARDED_BY(mu_)
};

}  // namespace lagwatch
