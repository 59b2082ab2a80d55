#include "heartbeat/estimator.h"

#include <algorithm>

namespace lagwatch {
namespace {

Micros Since(MonoTime later, MonoTime earlier) {
  return std::max(Micros(0), std::chrono::duration_cast<Micros>(later - earlier));
}

}  // namespace

const char* BoundSourceName(BoundSource source) {
  switch (source) {
    case BoundSource::kHeartbeat:
      return "heartbeat";
    case BoundSource::kPosition:
      return "positions";
    case BoundSource::kStream:
      return "stream";
    case BoundSource::kNone:
      break;
  }
  return "";
}

LagBounds HeartbeatBounds(const ProbeObservation& obs, const HeartbeatLog& log) {
  LagBounds b;
  if (!obs.seq) return b;
  if (auto rec = log.Find(*obs.seq)) {
    b.fresh_at = rec->sent;
    b.upper_source = BoundSource::kHeartbeat;
  }
  // Heartbeat k+1 was committed by the time its OK arrived; if that was before the probe left,
  // the replica (which lacks it) was at least sent - acked(k+1) behind.
  if (auto next = log.Find(*obs.seq + 1); next && next->acked && *next->acked <= obs.sent) {
    b.lower = Since(obs.sent, *next->acked);
  }
  return b;
}

LagBounds PositionBounds(const ProbeObservation& obs, const PositionHistory& history) {
  LagBounds b;
  if (!obs.applied_pos) return b;
  PositionHistory::Bounds pb = history.Locate(*obs.applied_pos);
  b.incomparable = pb.incomparable;
  if (pb.fresh_at) {
    b.fresh_at = pb.fresh_at;
    b.upper_source = BoundSource::kPosition;
  }
  if (pb.missing_since && *pb.missing_since <= obs.sent)
    b.lower = Since(obs.sent, *pb.missing_since);
  return b;
}

LagBounds StreamBounds(const ProbeObservation& obs, const StreamHistory& stream) {
  LagBounds b;
  if (!obs.applied_pos) return b;
  StreamHistory::Bounds sb = stream.Locate(*obs.applied_pos, obs.received);
  b.incomparable = sb.incomparable;
  if (sb.fresh_at) {
    b.fresh_at = sb.fresh_at;
    b.upper_source = BoundSource::kStream;
  }
  return b;
}

LagBounds Estimate(const ProbeObservation& obs, const HeartbeatLog& log,
                   const PositionHistory& history, const StreamHistory* stream) {
  LagBounds hb = HeartbeatBounds(obs, log);
  LagBounds pos = PositionBounds(obs, history);
  LagBounds out;
  // The later fresh_at is the smaller upper bound.
  out.fresh_at = hb.fresh_at;
  out.upper_source = hb.upper_source;
  if (pos.fresh_at && (!out.fresh_at || *pos.fresh_at > *out.fresh_at)) {
    out.fresh_at = pos.fresh_at;
    out.upper_source = BoundSource::kPosition;
  }
  out.lower = std::max(hb.lower, pos.lower);
  out.incomparable = pos.incomparable;
  // The stream's bound rests on a measured delivery bound: if it contradicts the samples' or the
  // heartbeat's lower bound (the delivery was slower than measured), it is left out, not they.
  if (stream) {
    LagBounds st = StreamBounds(obs, *stream);
    if (st.fresh_at && (!out.fresh_at || *st.fresh_at > *out.fresh_at)) {
      if (out.lower <= st.UpperAt(obs.received)) {
        out.fresh_at = st.fresh_at;
        out.upper_source = BoundSource::kStream;
      } else {
        stream->NoteLate();
      }
    }
  }
  if (out.fresh_at && out.lower > out.UpperAt(obs.received)) {
    // Both bound families are sound on their own, so a contradiction means their premises broke
    // (e.g. positions compared across a primary change). Fall back to the heartbeat alone,
    // which depends on nothing but our own row.
    hb.inconsistent = true;
    hb.incomparable = pos.incomparable;
    return hb;
  }
  return out;
}

LagBounds Relocate(const LagBounds& kept, const Position& applied, MonoTime now,
                   const PositionHistory& history, const StreamHistory* stream) {
  LagBounds out = kept;
  auto later = [&](std::optional<MonoTime> fresh_at, BoundSource source) {
    if (fresh_at && *fresh_at > *out.fresh_at) {
      out.fresh_at = fresh_at;
      out.upper_source = source;
    }
  };
  later(history.Locate(applied).fresh_at, BoundSource::kPosition);
  if (stream) later(stream->Locate(applied, now).fresh_at, BoundSource::kStream);
  return out;
}

LagBounds RelocateFromKnown(const LagBounds& kept, const std::optional<Position>& answered,
                            const std::optional<Position>& witnessed, MonoTime now,
                            const PositionHistory& history, const StreamHistory* stream) {
  LagBounds out = kept;
  for (const std::optional<Position>* applied : {&answered, &witnessed}) {
    if (*applied) out = Relocate(out, **applied, now, history, stream);
  }
  return out;
}

LagBounds FreshNotAfter(LagBounds bounds, std::optional<MonoTime> not_after) {
  if (not_after && bounds.fresh_at && *bounds.fresh_at > *not_after) bounds.fresh_at = not_after;
  return bounds;
}

}  // namespace lagwatch
