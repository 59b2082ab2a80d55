#include "exporters/api.h"

#include <cmath>

#include "base/contract.h"

namespace lagwatch {
namespace {

namespace f = contract::field;
namespace pf = contract::primary_field;

nlohmann::json OrNull(const std::optional<int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// Text a server wrote, or null for "".
nlohmann::json TextOrNull(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

nlohmann::json TransactionJson(const std::optional<ApplierTransaction>& t) {
  if (!t) return nullptr;
  return {{"transaction", t->gtid},
          {"original_commit", TextOrNull(t->original_commit)},
          {"immediate_commit", TextOrNull(t->immediate_commit)},
          {"started", TextOrNull(t->started)}};
}

// One channel's applier signals; every field null for `ch` null.
nlohmann::json ApplierChannelJson(const ApplierChannel* ch) {
  const ApplierTransaction* oldest = ch && ch->oldest_applying ? &*ch->oldest_applying : nullptr;
  auto oldest_text = [&](std::string ApplierTransaction::*field) {
    return oldest ? TextOrNull(oldest->*field) : nlohmann::json(nullptr);
  };
  nlohmann::json coordinator = nullptr;
  if (ch && ch->coordinator) {
    coordinator = {{"state", TextOrNull(ch->coordinator->service_state)},
                   {"processing", TransactionJson(ch->coordinator->processing)},
                   {"last_processed", TransactionJson(ch->coordinator->last_processed)}};
  }
  auto count = [&](size_t ApplierChannel::*field) {
    return ch ? nlohmann::json(ch->*field) : nlohmann::json(nullptr);
  };
  return {
      {"channel", ch ? nlohmann::json(ch->name) : nlohmann::json(nullptr)},
      {"workers", count(&ApplierChannel::workers)},
      {"workers_on", count(&ApplierChannel::workers_on)},
      {"applying", count(&ApplierChannel::applying)},
      {"oldest_applying_transaction", oldest_text(&ApplierTransaction::gtid)},
      {"oldest_applying_original_commit", oldest_text(&ApplierTransaction::original_commit)},
      {"oldest_applying_immediate_commit", oldest_text(&ApplierTransaction::immediate_commit)},
      {"oldest_applying_started", oldest_text(&ApplierTransaction::started)},
      {"oldest_applying_age_seconds",
       ch && ch->oldest_applying_age_us
           ? nlohmann::json(static_cast<double>(*ch->oldest_applying_age_us) / 1e6)
           : nlohmann::json(nullptr)},
      {"coordinator", coordinator},
      {"receiver_state", ch ? TextOrNull(ch->receiver_state) : nlohmann::json(nullptr)},
      {"last_heartbeat", ch ? TextOrNull(ch->last_heartbeat) : nlohmann::json(nullptr)},
      {"received_heartbeats", ch && ch->received_heartbeats
                                  ? nlohmann::json(*ch->received_heartbeats)
                                  : nlohmann::json(nullptr)},
  };
}

}  // namespace

nlohmann::json ApplierJson(const ApplierView& applier, const std::string& judged_channel) {
  const ApplierStatus* st = applier.status ? &*applier.status : nullptr;
  nlohmann::json j = ApplierChannelJson(st ? st->Channel(judged_channel) : nullptr);
  j["available"] = st != nullptr;
  j["reason"] = st ? nlohmann::json(nullptr) : nlohmann::json(applier.reason);
  j["replica_now"] = st ? TextOrNull(st->replica_now) : nlohmann::json(nullptr);
  nlohmann::json channels = st ? nlohmann::json::array() : nlohmann::json(nullptr);
  if (st) {
    for (const ApplierChannel& ch : st->channels) channels.push_back(ApplierChannelJson(&ch));
  }
  j["channels"] = channels;
  return j;
}

nlohmann::json ServerJson(const ServerFlavor& flavor) {
  return {{"flavor", KindName(flavor.kind)},
          {"version", flavor.version},
          {"comment", flavor.comment},
          {"description", flavor.Describe()}};
}

nlohmann::json ReplicaJson(const ReplicaInfo& info, const ReplicaView& view) {
  nlohmann::json j = {
      {"replica", info.endpoint.Id()},
      {"host", info.endpoint.host},
      {"port", info.endpoint.port},
      {f::kState, view.state},
      {f::kHealthy, view.healthy ? 1 : 0},
      {f::kTier, info.tier},
      {f::kWeight, info.weight},
      {f::kMaxDelayMs, OrNull(info.max_delay_ms)},
      {"tier_enabled", info.tier_enabled},
      {"measured", view.last.has_value()},
      {"probes", view.probes},
      {"failures", view.failures},
      {"last_error",
       view.last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(view.last_error)},
      {"last_error_at_ms",
       view.last_error_at_ms ? nlohmann::json(view.last_error_at_ms) : nlohmann::json(nullptr)},
  };
  // The Redis record's measurements; null until the replica was first measured.
  if (view.last) {
    j[f::kDelayMs] = view.last->delay_ms;
    j[f::kDelayLowerMs] = view.last->delay_lower_ms;
    j[f::kSeq] = view.last->seq;
    j[f::kMeasuredAtMs] = view.last->measured_at_ms;
    j[f::kDelayUs] = view.last->delay_us;
    j[f::kMeasuredAtUs] = view.last->measured_at_us;
    j[f::kAgent] = view.last->agent_id;
    j[f::kPosition] = view.last->position;
    j[f::kPositionKind] = view.last->position_kind;
  } else {
    for (const char* k : {f::kDelayMs, f::kDelayLowerMs, f::kSeq, f::kMeasuredAtMs, f::kDelayUs,
                          f::kMeasuredAtUs, f::kAgent, f::kPosition, f::kPositionKind}) {
      j[k] = nullptr;
    }
  }
  nlohmann::json windows = nlohmann::json::object();
  auto num = [](double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
  for (const auto& w : view.windows) {
    windows[w.name] = {{"probes", w.probes},
                       {"p50_ms", num(w.p50_ms)},
                       {"p95_ms", num(w.p95_ms)},
                       {"p99_ms", num(w.p99_ms)},
                       {"max_ms", num(w.max_ms)},
                       {"slar", w.slar ? nlohmann::json(*w.slar) : nlohmann::json(nullptr)}};
  }
  j["windows"] = windows;
  j["server"] = view.server ? ServerJson(*view.server) : nlohmann::json(nullptr);
  j["positions"] = view.positions;
  j["bound"] = view.bound.empty() ? nlohmann::json(nullptr) : nlohmann::json(view.bound);
  const ReplicationStatus& st = view.status;
  j["replication"] = {
      {"known", st.known},
      {"configured", st.configured},
      {"io_thread", st.io_state.empty() ? nlohmann::json(nullptr) : nlohmann::json(st.io_state)},
      {"sql_thread_running", st.sql_running},
      {"statement", view.status_statement.empty() ? nlohmann::json(nullptr)
                                                  : nlohmann::json(view.status_statement)},
      {"seconds_behind_master", OrNull(st.seconds_behind_master)},
      {"relay_log_space_bytes", OrNull(st.relay_log_space)},
      {"last_error",
       st.last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(st.last_error)},
  };
  j["applier"] = ApplierJson(view.applier, st.channel_name);
  return j;
}

nlohmann::json PrimaryJson(const Endpoint& primary, const PrimaryView& view,
                           int64_t heartbeat_interval_ms, int64_t last_seq,
                           std::optional<int64_t> last_sample_age_ms,
                           const std::optional<ServerFlavor>& server) {
  return {
      {pf::kPrimary, primary.Id()},
      {pf::kState, view.state},
      {pf::kLastWriteMs,
       view.last_write_ms ? nlohmann::json(view.last_write_ms) : nlohmann::json(nullptr)},
      {pf::kConsecutiveFailures, view.consecutive_failures},
      {pf::kReadOnly, view.read_only ? 1 : 0},
      {"last_error",
       view.last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(view.last_error)},
      {"last_error_at_ms",
       view.last_error_at_ms ? nlohmann::json(view.last_error_at_ms) : nlohmann::json(nullptr)},
      {"heartbeat", {{"interval_ms", heartbeat_interval_ms}, {"last_seq", last_seq}}},
      {"positions", {{"last_sample_age_ms", OrNull(last_sample_age_ms)}}},
      {"server", server ? ServerJson(*server) : nlohmann::json(nullptr)},
  };
}

}  // namespace lagwatch
