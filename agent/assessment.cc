#include "agent/assessment.h"

#include <algorithm>

#include "base/binlog_coords.h"
#include "base/gtid.h"
#include "base/gtid_set.h"
#include "base/mysql_conn.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

// Reads our heartbeat row's seq from the probe's reply, the server's id and read_only (when the
// reply has them), and the text of the replica's applied position when `want_pos`.
Status ReadProbeRow(const QueryResult& r, bool want_pos, ProbeObservation* obs,
                    std::optional<std::string>* pos_text, Assessment* a) {
  auto seq_cell = Cell(r, "seq");
  auto pos_cell = Cell(r, "pos");
  if (!seq_cell || (want_pos && !pos_cell)) return Status::DataError("probe returned no row");
  if (auto sid = Cell(r, "sid"); sid && *sid) a->server_id = ParseInt<int64_t>(**sid);
  a->read_only = ProbedReadOnly(r);
  Status st = Status::Ok();
  if (*seq_cell) {
    obs->seq = ParseInt<uint64_t>(**seq_cell);
    if (!obs->seq) st = Status::DataError("heartbeat seq is not a number");
  }
  if (want_pos && *pos_cell) *pos_text = **pos_cell;
  return st;
}

}  // namespace

std::optional<bool> ProbedReadOnly(const QueryResult& r) {
  auto ro = Cell(r, "ro");
  if (!ro || !*ro) return std::nullopt;
  return ParseReadOnly(**ro);
}

Result<std::optional<Position>> AppliedPosition(PositionsKind kind,
                                                const std::optional<std::string>& pos_text,
                                                const ReplicationStatus* status) {
  switch (kind) {
    case PositionsKind::kMariaDbGtid:
    case PositionsKind::kMysqlGtid: {
      if (!pos_text) return std::optional<Position>();
      if (kind == PositionsKind::kMariaDbGtid) {
        auto p = GtidPos::Parse(*pos_text);
        if (!p.ok()) return p.status();
        return std::optional<Position>(std::move(p).value());
      }
      auto set = GtidSet::Parse(*pos_text);
      if (!set.ok()) return set.status();
      return std::optional<Position>(std::move(set).value());
    }
    case PositionsKind::kBinlog: {
      if (!status || !status->configured || !status->exec_source_log_pos) {
        return std::optional<Position>();
      }
      auto c = ParseBinlogCoords(status->exec_source_log_file, *status->exec_source_log_pos);
      if (!c.ok()) return c.status();
      return std::optional<Position>(std::move(c).value());
    }
    case PositionsKind::kNone:
      break;
  }
  return std::optional<Position>();
}

bool ReplicatesFromPrimary(const ReplicationStatus& status,
                           std::optional<int64_t> primary_server_id) {
  return primary_server_id && status.source_server_id &&
         *status.source_server_id == *primary_server_id;
}

bool PrimaryKnown(MonoTime now, const HeartbeatLog& log, const PositionHistory& history,
                  Millis heartbeat_interval, Millis sampler_interval) {
  const Millis horizon = heartbeat_interval * kPrimaryUnknownAfterIntervals;
  auto live = [&](std::optional<MonoTime> ok, std::optional<MonoTime> failed) {
    return ok && now - *ok <= horizon && !(failed && *failed > *ok);
  };
  if (auto sample = history.LastSample()) {
    // A sample whose answer was awaited for more than one sampling interval means the primary is
    // not answering (not the time since it was sent: an agent kept from running had it waiting).
    const Millis overdue = std::max(sampler_interval, kMinSampleOverdue);
    if (auto waited = history.AnswerAwaited(now); waited && *waited > overdue) return false;
    return live(sample, history.LastFailure());
  }
  return live(log.LastAck(), log.LastFailure());
}

bool CaughtUpWithPrimary(const std::optional<LagBounds>& bounds, const HeartbeatLog& log,
                         const PositionHistory& history) {
  if (!bounds || !bounds->fresh_at) return false;
  std::optional<MonoTime> last_contact = log.LastAckedSent();
  if (auto sample = history.LastSample(); sample && (!last_contact || *sample > *last_contact)) {
    last_contact = sample;
  }
  return last_contact && *bounds->fresh_at >= *last_contact;
}

namespace {

// This probe's status reply into a.status (when it parses) or a.status_error; the status it
// parsed, or null.
const ReplicationStatus* ReadStatus(const ProbeInput& in, Assessment* a) {
  if (!in.status_reply) return nullptr;
  if (!in.status_reply->ok()) {
    a->status_error = in.status_reply->status();
    if (in.status_access_denied) {
      a->status_error =
          Status::ServerError(a->status_error->message() + " (" + kReplicaStatusGrantHint + ")");
    }
    return nullptr;
  }
  auto parsed = ParseSlaveStatus(**in.status_reply, &in.primary_source);
  if (!parsed.ok()) {
    a->status_error = parsed.status();
    return nullptr;
  }
  a->status = parsed.value();
  a->status_polled = true;
  return &a->status;
}

// The bounds of a reply that was read (fully or partly): the applied position (`pos_text`, or
// the executed coordinates of `polled`), checked against the previous one, and the estimate.
void Bound(const ProbeInput& in, const std::optional<std::string>& pos_text,
           const ReplicationStatus* polled, const HeartbeatLog& log, const PositionHistory& history,
           const StreamHistory* stream, Assessment* a) {
  a->measured = true;
  // Coordinates are the source's: they say nothing about the primary unless it is the source
  // (and of several channels, the one judged is from the primary).
  if (in.positions == PositionsKind::kBinlog && polled && polled->configured) {
    a->chained = polled->channel_match == ChannelMatch::kNone ||
                 !ReplicatesFromPrimary(*polled, in.primary_server_id);
  }
  if (!a->chained) {
    auto applied = AppliedPosition(in.positions, pos_text, polled);
    if (!applied.ok()) {
      a->position_error = applied.status();
    } else if (*applied) {
      a->applied = **applied;
      // A replica never un-applies: a position behind the last one is a restored or replaced
      // server (or another source), and proves nothing against the primary's samples.
      if (in.previous_applied && !a->applied->Includes(*in.previous_applied)) {
        a->position_error = Status::DataError("applied position " + a->applied->ToString() +
                                              " does not include the previous probe's " +
                                              in.previous_applied->ToString());
      } else {
        a->obs.applied_pos = a->applied;
      }
    }
  }
  LagBounds est = FreshNotAfter(Estimate(a->obs, log, history, stream), in.fresh_not_after);
  if (est.incomparable && !a->position_error) {
    a->position_error = Status::DataError("applied position " + a->applied->ToString() +
                                          " cannot be compared with the primary's positions");
  }
  // A replica never un-applies data, so an older fresh_at is kept until a better one comes.
  if (est.fresh_at) a->bounds = est;
  a->health.delay_lower_ms = ToMillis(est.lower);
  a->inconsistent = est.inconsistent;
}

// The health verdict's input from what the assessment found.
void FillHealth(const ProbeInput& in, const HeartbeatLog& log, const PositionHistory& history,
                Assessment* a) {
  HealthInput& h = a->health;
  h.reachable = in.reply.ok();
  // Until the first status poll answers, thread state is unknown and does not count against it;
  // a server that answers with no replication configured is stopped.
  // An IO thread that is "Connecting" (e.g. to a dead primary) is running, not stopped: if the
  // replica falls behind because of it, its bound shows that.
  // Several channels and none from the primary: the threads read (the first row's) are another
  // source's and say nothing; the replica is unverified (agent/judge.h).
  h.threads_running = !a->status.known || a->status.channel_match == ChannelMatch::kNone ||
                      (a->status.io_state != "No" && a->status.sql_running);
  h.primary_known = in.primary_known;
  h.caught_up_with_primary = CaughtUpWithPrimary(a->bounds, log, history);
  h.tier_enabled = in.tier_enabled;
  h.max_delay_ms = in.max_delay_ms;
  if (a->bounds) h.delay_ms = CeilMillis(a->bounds->UpperAt(a->obs.received + in.to_stated));
  if (auto gap = history.LastGap(); gap && a->bounds && a->bounds->fresh_at) {
    h.bound_spans_outage = *a->bounds->fresh_at >= gap->before && *a->bounds->fresh_at < gap->after;
  }
}

}  // namespace

Assessment Assess(const ProbeInput& in, const HeartbeatLog& log, const PositionHistory& history,
                  const StreamHistory* stream) {
  Assessment a;
  a.obs = in.obs;
  a.to_stated = in.to_stated;
  a.bounds = in.bounds;
  a.status = in.status;
  a.primary_source = in.primary_source;
  const ReplicationStatus* polled = ReadStatus(in, &a);
  const bool gtid_kind = IsGtidKind(in.positions);
  std::optional<std::string> pos_text;
  a.probe_status = in.reply.status();
  if (in.reply.ok()) a.probe_status = ReadProbeRow(*in.reply, gtid_kind, &a.obs, &pos_text, &a);
  if (a.probe_status.ok() || (in.reply.ok() && a.probe_status.code() == Status::Code::kDataError)) {
    // Whatever parsed is still usable; bounds from a partial observation stay sound.
    Bound(in, pos_text, polled, log, history, stream, &a);
  } else if (a.bounds && a.bounds->fresh_at) {
    // No answer: what the replica had at its last answer, or what its own binary log showed it
    // applied since, against what the primary did since.
    a.bounds = FreshNotAfter(RelocateFromKnown(*a.bounds, in.previous_applied, in.witnessed,
                                               a.obs.received, history, stream),
                             in.fresh_not_after);
  }
  FillHealth(in, log, history, &a);
  return a;
}

}  // namespace lagwatch
