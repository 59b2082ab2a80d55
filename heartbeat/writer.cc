#include "heartbeat/writer.h"

#include "base/log.h"
#include "base/mysql_errors.h"
#include "base/strings.h"

namespace lagwatch {

HeartbeatWriter::HeartbeatWriter(WriterOptions options, HeartbeatLog* log, WriterSink* sink,
                                 const Clock& clock, SqlConnector connect)
    : options_(std::move(options)),
      sql_(options_.heartbeat, options_.agent_id),
      log_(log),
      sink_(sink),
      clock_(clock),
      connect_(connect ? std::move(connect) : MysqlConnector(clock)),
      primary_id_(options_.primary.endpoint.Id()),
      target_(options_.primary) {}

void HeartbeatWriter::Start() {
  worker_.Start([this](std::stop_token st) { Run(st); });
}

void HeartbeatWriter::Stop() { worker_.Stop(); }

void HeartbeatWriter::SetPrimary(MysqlTarget primary) {
  std::lock_guard lock(mu_);
  target_ = std::move(primary);
  ++target_generation_;
  wake_.request_stop();
}

std::optional<MysqlTarget> HeartbeatWriter::Moved(uint64_t* generation,
                                                  const std::stop_source& wake) {
  std::lock_guard lock(mu_);
  wake_ = wake;
  if (*generation == target_generation_) return std::nullopt;
  *generation = target_generation_;
  return target_;
}

PrimaryView HeartbeatWriter::view() const {
  std::lock_guard lock(mu_);
  return view_;
}

Result<uint64_t> HeartbeatWriter::Prepare(SqlConnection& conn, MonoTime deadline) {
  if (options_.heartbeat.create_table) {
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

HeartbeatWriter::Attempt HeartbeatWriter::WriteOnce(SqlConnection& conn, MonoTime deadline) {
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
  MonoTime sent = clock_.Now();
  log_->RecordSent(seq, sent);
  auto r = conn.Query(sql_.Upsert(seq), deadline);
  MonoTime done = clock_.Now();
  a.took = std::chrono::duration_cast<Millis>(done - sent);
  a.status = r.status();
  if (r.ok()) {
    log_->RecordAcked(seq, done);
    sink_->HeartbeatWritten(seq);
  } else if (a.status.code() == Status::Code::kServerError) {
    // Missing table or privileges: run the table step again next time.
    prepared_ = false;
  }
  return a;
}

bool HeartbeatWriter::WritableAgain(SqlConnection& conn, MonoTime deadline, Status* st) {
  auto r = ReadReadOnly(conn, deadline);
  *st = r.status();
  if (r.ok() && *r == std::optional<bool>(false)) {
    Log(LogLevel::kInfo,
        "primary " + primary_id_ + " is writable again; resuming heartbeat writes");
    return true;
  }
  return false;
}

void HeartbeatWriter::Run(std::stop_token stop) {
  const Millis interval(options_.heartbeat.interval_ms);
  std::unique_ptr<SqlConnection> conn;
  uint64_t generation = ~uint64_t{0};
  std::optional<CircuitBreaker> circuit;
  MonoTime next = clock_.Now();

  while (!stop.stop_requested()) {
    std::stop_source wake;
    if (auto moved = Moved(&generation, wake)) {
      // Another server: its own connection, table check and circuit; seqs keep growing, so none
      // is reused on the replicas of either.
      if (conn) {
        Log(LogLevel::kInfo,
            "heartbeat writer moves from " + primary_id_ + " to " + moved->endpoint.Id());
      }
      conn = connect_(*moved, stop);
      primary_id_ = moved->endpoint.Id();
      prepared_ = false;
      circuit.emplace();
      std::lock_guard lock(mu_);
      view_ = PrimaryView{};
    }
    const MonoTime now = clock_.Now();
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
      if (WritableAgain(*conn, deadline, &st)) read_only = false;
    } else if (circuit->AllowAttempt(now)) {
      attempted = true;
      Attempt a = WriteOnce(*conn, deadline);
      st = a.status;
      if (st.ok()) {
        circuit->RecordSuccess(now, a.took);
      } else if (conn->last_errno() == kErOptionPreventsStatement ||
                 conn->last_errno() == kErReadOnlyMode) {
        Log(LogLevel::kWarn, "primary " + primary_id_ +
                                 " is read_only: not writing heartbeats until it is writable (" +
                                 st.message() + ")");
        read_only = true;
        st = Status::Ok();  // the primary answered; this is not a circuit failure
      } else if (st.code() != Status::Code::kCancelled) {
        circuit->RecordFailure(now);
        log_->RecordFailure(clock_.Now());
      }
    }
    if (stop.stop_requested()) break;

    if (attempted && !st.ok()) {
      sink_->HeartbeatFailed(st);
      LogLimited(LogLevel::kWarn, "heartbeat", "heartbeat write failed: " + st.ToString());
    }
    ReportState(*circuit, read_only, attempted ? st : Status::Ok());

    // Fixed rate: the next write is due one interval after this one was due; if we fell behind,
    // write now rather than bunching up.
    next += interval;
    MonoTime after = clock_.Now();
    if (next < after) next = after;
    std::stop_callback forward(stop, [&wake] { wake.request_stop(); });
    clock_.SleepUntil(wake.get_token(), next);
  }
}

void HeartbeatWriter::ReportState(const CircuitBreaker& circuit, bool read_only,
                                  const Status& last) {
  PrimarySnapshot snap;
  std::optional<Micros> since_last_ack;
  {
    std::lock_guard lock(mu_);
    const std::string previous = view_.state;
    const MonoTime now = clock_.Now();
    view_.state = circuit.PublicState();
    view_.consecutive_failures = circuit.consecutive_failures();
    view_.read_only = read_only;
    if (!last.ok()) {
      view_.last_error = last.ToString();
      view_.last_error_at_ms = UnixMillis(clock_.WallNow());
    }
    if (auto acked = log_->LastAck()) {
      // The wall time of the last acknowledgement, from its age on the monotonic clock.
      since_last_ack = std::chrono::duration_cast<Micros>(now - *acked);
      view_.last_write_ms = UnixMillis(clock_.WallNow()) - ToMillis(now - *acked);
    }
    if (previous != view_.state) {
      Log(view_.state == std::string("up") ? LogLevel::kInfo : LogLevel::kWarn,
          "primary " + primary_id_ + " circuit is now " + view_.state + " (" +
              std::to_string(view_.consecutive_failures) + " consecutive failures)");
    }
    snap.id = primary_id_;
    snap.state = view_.state;
    snap.last_write_ms = view_.last_write_ms;
    snap.consecutive_failures = view_.consecutive_failures;
    snap.read_only = read_only;
    snap.measured_mono = now;
  }
  sink_->PrimaryState(snap, since_last_ack);
}

}  // namespace lagwatch
