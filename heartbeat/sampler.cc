#include "heartbeat/sampler.h"

#include "base/event_loop.h"
#include "base/gtid.h"
#include "base/gtid_set.h"
#include "base/log.h"
#include "base/mysql_errors.h"
#include "base/strings.h"

namespace lagwatch {
namespace {
constexpr Millis kMaxRetryWait(1000);
constexpr Millis kPatience(1000);
// How often the primary's own load figures are read (alerts on connections and buffer pool).
constexpr Millis kStatusInterval(5000);
constexpr const char* kStatusSql =
    "SELECT @@max_connections,"
    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
    "  WHERE VARIABLE_NAME = 'THREADS_CONNECTED'),"
    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
    "  WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_READ_REQUESTS'),"
    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
    "  WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_READS')";

// The one row of `sql`, `columns` cells wide.
Result<std::vector<std::optional<std::string>>> OneRow(SqlConnection& conn, const std::string& sql,
                                                       size_t columns, MonoTime deadline) {
  auto r = conn.Query(sql, deadline);
  if (!r.ok()) return r.status();
  if (r->rows.size() != 1 || r->rows[0].size() != columns) {
    return Status::DataError("unexpected result shape for " + sql);
  }
  return std::move(r->rows[0]);
}

// A position of type T (GtidPos, GtidSet) from the text of a cell.
template <typename T>
Result<Position> ParsePosition(const std::optional<std::string>& cell) {
  auto parsed = T::Parse(cell.value_or(""));
  if (!parsed.ok()) return parsed.status();
  return Position(std::move(parsed).value());
}

// The one value of `variable`, a position of type T.
template <typename T>
Result<Position> ReadPosition(SqlConnection& conn, const char* variable, MonoTime deadline) {
  auto row = OneRow(conn, std::string("SELECT ") + variable, 1, deadline);
  if (!row.ok()) return row.status();
  return ParsePosition<T>((*row)[0]);
}

// A GTID position (a variable of type T) and @@read_only, read in one statement.
struct PositionAndReadOnly {
  Position pos;
  std::optional<bool> read_only;  // nullopt: not 0 or 1
};
template <typename T>
Result<PositionAndReadOnly> ReadPositionAndReadOnly(SqlConnection& conn, const char* variable,
                                                    MonoTime deadline) {
  auto row = OneRow(conn, std::string("SELECT ") + variable + ", @@read_only", 2, deadline);
  if (!row.ok()) return row.status();
  auto pos = ParsePosition<T>((*row)[0]);
  if (!pos.ok()) return pos.status();
  const auto& ro = (*row)[1];
  return PositionAndReadOnly{std::move(pos).value(), ro ? ParseReadOnly(*ro) : std::nullopt};
}

}  // namespace

std::optional<uint64_t> CounterGrowth(std::optional<uint64_t>& last, uint64_t now_value) {
  std::optional<uint64_t> growth;
  if (last) growth = now_value >= *last ? now_value - *last : now_value;
  last = now_value;
  return growth;
}

Result<std::optional<uint32_t>> ReadServerId(SqlConnection& conn, MonoTime deadline) {
  auto r = conn.Query("SELECT @@server_id", deadline);
  if (!r.ok()) return r.status();
  if (r->rows.size() != 1 || r->rows[0].size() != 1 || !r->rows[0][0]) {
    return std::optional<uint32_t>();
  }
  return ParseInt<uint32_t>(*r->rows[0][0]);
}

Millis PositionSampler::Backoff(Millis interval, int failures) {
  Millis wait = interval;
  for (int i = 0; i < failures && wait < kMaxRetryWait; ++i) wait *= 2;
  return std::min(wait, std::max(kMaxRetryWait, interval));
}

void PositionSampler::PollPrimaryStatus(SqlConnection& conn, MonoTime deadline) {
  auto r = conn.Query(kStatusSql, deadline);
  if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 4) {
    if (r.status().code() != Status::Code::kCancelled) {
      sink_->SampleFailed(r.ok() ? "bad_data" : r.status().reason(), r.status());
    }
    return;
  }
  const auto& row = r->rows[0];
  auto num = [&](size_t i) { return row[i] ? ParseInt<uint64_t>(*row[i]) : std::nullopt; };
  PrimaryLoad load;
  load.max_connections = num(0);
  load.threads_connected = num(1);
  if (auto v = num(2))
    load.buffer_pool_read_requests_growth = CounterGrowth(last_read_requests_, *v);
  if (auto v = num(3)) load.buffer_pool_reads_growth = CounterGrowth(last_reads_, *v);
  sink_->PrimaryLoadRead(load);
}

PositionSampler::PositionSampler(SamplerOptions options, PositionHistory* history,
                                 SamplerSink* sink, const Clock& clock, SqlConnector connect)
    : options_(std::move(options)),
      history_(history),
      sink_(sink),
      clock_(clock),
      connect_(connect ? std::move(connect) : MysqlConnector(clock)),
      target_(options_.primary),
      primary_id_(options_.primary.endpoint.Id()) {}

void PositionSampler::Start(bool realtime) {
  worker_.Start([this, realtime](std::stop_token st) {
    if (realtime) (void)SetCurrentThreadRealtime(1);  // normal priority if refused
    Run(st);
  });
}

void PositionSampler::Stop() { worker_.Stop(); }

void PositionSampler::SetPrimary(MysqlTarget primary) {
  std::lock_guard lock(mu_);
  target_ = std::move(primary);
  ++target_generation_;
  wake_.request_stop();
}

void PositionSampler::Urge() {
  std::lock_guard lock(mu_);
  wake_.request_stop();
}

Status PositionSampler::AskSource(SqlConnection& conn, MonoTime deadline) {
  auto r = conn.Query(kServerFlavorQuery, deadline);
  if (!r.ok() && r.status().code() != Status::Code::kServerError) return r.status();
  flavor_ = ServerFlavor{};
  if (r.ok()) {
    if (auto parsed = ParseServerFlavor(*r); parsed.ok()) flavor_ = parsed.value();
  }
  if (flavor_ != last_flavor_) {
    // Logged when it changes, not on every reconnect of a flapping primary.
    Log(LogLevel::kInfo, "primary " + primary_id_ + " is " + flavor_.Describe());
    last_flavor_ = flavor_;
  }
  auto id = ReadServerId(conn, deadline);
  if (!id.ok() && id.status().code() != Status::Code::kServerError) return id.status();
  server_id_ = id.ok() ? *id : std::nullopt;
  std::optional<PositionsKind> kind =
      ChoosePositionsKind(conn, flavor_, options_.positions, deadline);
  if (!kind) return Status::Unavailable("the connection failed while choosing the positions kind");
  kind_ = *kind;
  history_->SetSource(kind_, server_id_, history_generation_);
  if (kind_ != last_kind_) {
    Log(LogLevel::kInfo, "primary " + primary_id_ + ": positions " + PositionsKindName(kind_) +
                             (options_.positions ? " (set)" : " (auto)"));
    last_kind_ = kind_;
  }
  sink_->PrimaryFlavorRead(flavor_, kind_);
  return Status::Ok();
}

std::optional<PositionsKind> ChoosePositionsKind(SqlConnection& conn, const ServerFlavor& flavor,
                                                 std::optional<PositionsKind> setting,
                                                 MonoTime deadline) {
  if (setting) return setting;
  if (HasMariaDbGtid(flavor)) return PositionsKind::kMariaDbGtid;
  if (flavor.kind != ServerFlavor::kMySQL && flavor.kind != ServerFlavor::kPercona) {
    // Unknown: try what lagwatch always tried; a server without it falls back (GiveUpKind).
    return PositionsKind::kMariaDbGtid;
  }
  // MySQL's GTID sets cover every transaction only with gtid_mode ON (ON_PERMISSIVE still lets
  // anonymous ones through); otherwise, and on servers without GTIDs, binary log coordinates.
  auto r = conn.Query("SELECT @@GLOBAL.gtid_mode", deadline);
  if (!r.ok() && r.status().code() != Status::Code::kServerError) return std::nullopt;
  const bool gtid_on = r.ok() && r->rows.size() == 1 && r->rows[0].size() == 1 && r->rows[0][0] &&
                       AsciiLower(Trim(*r->rows[0][0])) == "on";
  return gtid_on ? PositionsKind::kMysqlGtid : PositionsKind::kBinlog;
}

Result<Position> ReadPrimaryPosition(SqlConnection& conn, PositionsKind kind,
                                     const ServerFlavor& flavor, MonoTime deadline,
                                     bool* binlog_off) {
  *binlog_off = false;
  switch (kind) {
    case PositionsKind::kMariaDbGtid:
      return ReadPosition<GtidPos>(conn, PrimaryPositionVariable(kind), deadline);
    case PositionsKind::kMysqlGtid:
      return ReadPosition<GtidSet>(conn, PrimaryPositionVariable(kind), deadline);
    case PositionsKind::kBinlog: {
      auto r = conn.Query(BinaryLogStatusStatement(flavor), deadline);
      if (!r.ok()) return r.status();
      if (r->rows.empty()) {
        *binlog_off = true;
        return Status::DataError("binary logging is off (no binary log status)");
      }
      auto st = ParseBinaryLogStatus(*r);
      if (!st.ok()) return st.status();
      return Position(std::move(st).value().coords);
    }
    case PositionsKind::kNone:
      break;
  }
  return Status::InvalidArgument("no positions kind");
}

Status PositionSampler::SampleOnce(SqlConnection& conn, MonoTime sent, MonoTime deadline) {
  // (A Reset clears it; its answer is then dropped by Add.)
  history_->BeginSample(sent, times_);
  // @@read_only is read after `sent`, so a primary found writable was writable after it: no
  // other server had been made writable yet (a switchover makes the old primary read-only
  // first). A GTID position is a variable and comes in the same statement; coordinates come from
  // a statement of their own, and the question follows it.
  const bool with_position = IsGtidKind(kind_);
  Result<std::optional<bool>> read_only = std::optional<bool>();
  Result<Position> pos = Status::InvalidArgument("no positions kind");
  if (with_position) {
    auto both =
        kind_ == PositionsKind::kMariaDbGtid
            ? ReadPositionAndReadOnly<GtidPos>(conn, PrimaryPositionVariable(kind_), deadline)
            : ReadPositionAndReadOnly<GtidSet>(conn, PrimaryPositionVariable(kind_), deadline);
    if (!both.ok()) return both.status();
    pos = std::move(both->pos);
    read_only = both->read_only;
  } else {
    pos = ReadPrimaryPosition(conn, kind_, flavor_, deadline, &binlog_off_);
  }
  const MonoTime received = clock_.Now();
  if (!pos.ok()) return pos.status();
  if (!history_->Add(pos.value(), sent, received, history_generation_)) {
    // Counted and logged; the new position starts a fresh history, so bounds stay sound.
    sink_->SampleFailed("position_backwards", Status::Ok());
    LogLimited(LogLevel::kWarn, "sampler-backwards",
               "primary " + primary_id_ + ": position " + pos.value().ToString() +
                   " does not include the previous sample (went backwards: RESET MASTER, a "
                   "restored or replaced primary?); earlier samples dropped");
  }
  if (stream_ && history_generation_ == history_->generation()) {
    stream_->CheckSample(pos.value(), sent);
  }
  sink_->PositionSampled();
  if (!with_position) {
    // Awaited as a sample is (PrimaryKnown): a primary that stops answering now is as silent as
    // one that stops before the position. Otherwise it would count as answering for as long as
    // this waits, up to kPatience, while the replicas' bounds grow.
    history_->BeginSample(clock_.Now(), times_);
    read_only = ReadReadOnly(conn, deadline);
    if (read_only.ok() || read_only.status().code() == Status::Code::kServerError) {
      history_->EndSample(history_generation_);
    }
  }
  if (!read_only.ok() && read_only.status().code() != Status::Code::kServerError) {
    return read_only.status();  // the connection failed: the next round reconnects
  }
  if (const std::optional<bool> ro = read_only.ok() ? *read_only : std::nullopt) {
    history_->NoteWritable(sent, !*ro, history_generation_);
    if (*ro && on_read_only_) on_read_only_();
  } else {
    // The position stands; the primary's writability stays as the last sample found it.
    const Status why =
        read_only.ok() ? Status::DataError("@@read_only is not 0 or 1") : read_only.status();
    sink_->SampleFailed(read_only.ok() ? "bad_data" : why.reason(), why);
    LogLimited(LogLevel::kWarn, "sampler-read-only",
               "primary " + primary_id_ + ": @@read_only unreadable: " + why.ToString());
  }
  return Status::Ok();
}

void PositionSampler::GiveUpKind(const Status& why, unsigned server_errno) {
  const PositionsKind failed = kind_;
  // Auto tries coordinates where GTIDs failed: every server with a binary log has them.
  kind_ = !options_.positions && failed != PositionsKind::kBinlog ? PositionsKind::kBinlog
                                                                  : PositionsKind::kNone;
  std::string hint;
  if (server_errno == kErSpecificAccessDenied) {
    hint = std::string(" (") + kBinaryLogStatusGrantHint + ")";
  }
  Log(options_.positions ? LogLevel::kError : LogLevel::kWarn,
      "primary " + primary_id_ + ": cannot sample " + PositionsKindName(failed) +
          " positions: " + why.ToString() + hint + "; " +
          (kind_ == PositionsKind::kNone ? std::string("heartbeat bounds only")
                                         : std::string("trying ") + PositionsKindName(kind_)) +
          (options_.positions
               ? std::string(" although positions is \"") + PositionsKindName(failed) + "\""
               : "") +
          " until the sampler reconnects");
  history_->SetSource(kind_, server_id_, history_generation_);
  last_kind_ = kind_;
  sink_->PrimaryFlavorRead(flavor_, kind_);
}

bool PositionSampler::Permanent(const Status& st, unsigned server_errno) const {
  if (binlog_off_) return true;
  return st.code() == Status::Code::kServerError &&
         (server_errno == kErUnknownSystemVariable || server_errno == kErSpecificAccessDenied ||
          server_errno == kErParseError);
}

bool PositionSampler::CatchingUp(MonoTime now) const {
  if (!stream_) return false;
  const std::optional<MonoTime> since = stream_->CatchingUpSince();
  return since && now - *since < kCatchUpWindow;
}

void PositionSampler::Run(std::stop_token stop) {
  const Millis interval(options_.interval_ms);
  // A connect can take longer than one 50 ms sampling interval; allow it a few.
  // A sample is waited for up to kPatience, not one interval: one sent while the primary stalls
  // (e.g. an fsync) still proves the replicas fresh as of its send time when it answers, where an
  // abandoned one leaves a gap that makes every replica look lagged. The primary counts as
  // unknown as soon as a sample is overdue (PositionHistory::AnswerAwaited), not when it
  // finally fails.
  const Millis patience = std::max(interval, kPatience);
  times_ = std::make_shared<const ThreadTimes>();
  std::unique_ptr<SqlConnection> conn;
  uint64_t generation = ~uint64_t{0};
  MonoTime next = clock_.Now();
  int failures = 0;
  MonoTime next_status = next;
  bool source_known = false;
  while (!stop.stop_requested()) {
    std::stop_source wake;
    std::optional<MysqlTarget> moved;
    {
      std::lock_guard lock(mu_);
      wake_ = wake;
      if (generation != target_generation_) {
        generation = target_generation_;
        moved = target_;
      }
    }
    if (moved) {
      // Another server: ask again which it is and what to sample, at once, into the history the
      // agent reset for it.
      if (conn)
        Log(LogLevel::kInfo, "sampler moves from " + primary_id_ + " to " + moved->endpoint.Id());
      conn = connect_(*moved, stop);
      primary_id_ = moved->endpoint.Id();
      history_generation_ = history_->generation();
      source_known = false;
      failures = 0;
      last_flavor_.reset();
      last_kind_.reset();
    }
    Status st = Status::Ok();
    if (!source_known) {
      st = AskSource(*conn, clock_.Now() + patience);
      source_known = st.ok();
    }
    const bool sampling = source_known && kind_ != PositionsKind::kNone;
    const MonoTime sent = clock_.Now();
    if (sampling) st = SampleOnce(*conn, sent, sent + patience);
    if (sampling && !st.ok() && Permanent(st, conn->last_errno())) {
      GiveUpKind(st, conn->last_errno());
      st = Status::Ok();
    }
    const MonoTime received = clock_.Now();
    if (!st.ok() && st.code() != Status::Code::kCancelled) {
      // The connection may have been reset, and the next one may reach another server.
      source_known = false;
      history_->RecordFailure(received, history_generation_);
      sink_->SampleFailed(st.reason(), st);
      LogLimited(LogLevel::kWarn, "sampler", "position sample failed: " + st.ToString());
    }
    if (st.ok() && received >= next_status) {
      next_status = received + kStatusInterval;
      PollPrimaryStatus(*conn, received + interval);
    }
    // On a dead or hung primary, back off (up to a second) instead of a connection every 50 ms.
    failures = st.ok() ? 0 : failures + 1;
    // A sample urged or moved before its slot (Urge, SetPrimary) takes none: the planned one
    // still comes.
    if (sent >= next || !st.ok()) {
      next += st.ok() && !sampling ? kStatusInterval : Backoff(interval, failures);
    }
    const MonoTime now = clock_.Now();
    if (st.ok() && sampling && CatchingUp(now)) next = std::min(next, sent + kCatchUpStep);
    if (next < now) next = now;
    std::stop_callback forward(stop, [&wake] { wake.request_stop(); });
    clock_.SleepUntil(wake.get_token(), next);
  }
}

}  // namespace lagwatch
