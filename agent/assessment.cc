#include "agent/assessment.h"

#include <algorithm>

#include "base/strings.h"
#include "heartbeat/gtid.h"

namespace lagwatch {
namespace {

// Reads our heartbeat row's seq and the replica's applied position from the probe's reply.
Status ReadProbeRow(const QueryResult& r, bool use_gtid, ProbeObservation* obs) {
  auto seq_cell = Cell(r, "seq");
  auto pos_cell = Cell(r, "pos");
  if (!seq_cell || (use_gtid && !pos_cell)) return Status::DataError("probe returned no row");
  Status st = Status::Ok();
  if (*seq_cell) {
    obs->seq = ParseInt<uint64_t>(**seq_cell);
    if (!obs->seq) st = Status::DataError("heartbeat seq is not a number");
  }
  if (pos_cell && *pos_cell) {
    auto pos = GtidPos::Parse(**pos_cell);
    if (pos.ok()) {
      obs->applied_pos = pos.value();
    } else {
      st = pos.status();
    }
  }
  return st;
}

}  // namespace

bool PrimaryKnown(MonoTime now, const HeartbeatLog& log, const PositionHistory& history,
                  Millis heartbeat_interval, Millis sampler_interval) {
  const Millis horizon = heartbeat_interval * kPrimaryUnknownAfterIntervals;
  auto live = [&](std::optional<MonoTime> ok, std::optional<MonoTime> failed) {
    return ok && now - *ok <= horizon && !(failed && *failed > *ok);
  };
  if (auto sample = history.LastSample()) {
    // A sample overdue by more than one sampling interval means the primary is not answering.
    const Millis overdue = std::max(sampler_interval, kMinSampleOverdue);
    if (auto pending = history.OutstandingSince(); pending && now - *pending > overdue) {
      return false;
    }
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

Assessment Assess(const ProbeInput& in, const HeartbeatLog& log, const PositionHistory& history) {
  Assessment a;
  a.obs = in.obs;
  a.bounds = in.bounds;
  a.status = in.status;
  a.probe_status = in.reply.status();
  if (in.reply.ok()) a.probe_status = ReadProbeRow(*in.reply, in.use_gtid, &a.obs);
  if (a.probe_status.ok() || (in.reply.ok() && a.probe_status.code() == Status::Code::kDataError)) {
    // Whatever parsed is still usable; bounds from a partial observation stay sound.
    a.measured = true;
    LagBounds est = Estimate(a.obs, log, history);
    // A replica never un-applies data, so an older fresh_at is kept until a better one comes.
    if (est.fresh_at) a.bounds = est;
    a.inconsistent = est.inconsistent;
  }

  if (in.status_reply) {
    if (in.status_reply->ok()) {
      auto parsed = ParseSlaveStatus(**in.status_reply);
      if (parsed.ok()) {
        a.status = parsed.value();
        a.status_polled = true;
      } else {
        a.status_error = parsed.status();
      }
    } else {
      a.status_error = in.status_reply->status();
      if (in.status_access_denied) {
        a.status_error =
            Status::ServerError(a.status_error->message() + " (" + kReplicaStatusGrantHint + ")");
      }
    }
  }

  HealthInput& h = a.health;
  h.reachable = in.reply.ok();
  // Until the first status poll answers, thread state is unknown and does not count against it;
  // a server that answers with no replication configured is stopped.
  // An IO thread that is "Connecting" (e.g. to a dead primary) is running, not stopped: if the
  // replica falls behind because of it, its bound shows that.
  h.threads_running = !a.status.known || (a.status.io_state != "No" && a.status.sql_running);
  h.primary_known = in.primary_known;
  h.caught_up_with_primary = CaughtUpWithPrimary(a.bounds, log, history);
  h.tier_enabled = in.tier_enabled;
  h.max_delay_ms = in.max_delay_ms;
  if (a.bounds) h.delay_ms = ToMillis(a.bounds->UpperAt(a.obs.received));
  return a;
}

}  // namespace lagwatch
