#include "exporters/redis_publisher.h"

#include <hiredis/hiredis.h>

#include "base/contract.h"
#include "base/event_loop.h"
#include "base/log.h"
#include "base/redis_conn.h"
#include "base/redis_pipeline.h"
#include "exporters/metrics.h"
#include "exporters/record_merge.h"

namespace lagwatch {
namespace {

constexpr Millis kIoTimeout(250);
constexpr Millis kMinBackoff(100);
// Capped low so that every key is back within a few hundred ms of Redis (or, with Sentinel, the
// new master) answering; a connect attempt is cheap for Redis.
constexpr Millis kMaxBackoff(200);
// After the first record of a batch arrives at an idle publisher, it waits this long for more
// before writing: replies to a burst of probes arrive over a few milliseconds, and one pipelined
// write for all of them costs a fraction of one write each.
constexpr Micros kGather(1000);

}  // namespace

RedisPublisher::RedisPublisher(const RedisConfig& config, int64_t agent_id, Metrics* metrics,
                               const Clock& clock)
    : config_(config), agent_id_(agent_id), metrics_(metrics), clock_(clock) {}

void RedisPublisher::Start(bool realtime) {
  worker_.Start([this, realtime](std::stop_token st) {
    if (realtime) (void)SetCurrentThreadRealtime(1);  // normal priority if refused
    Run(st);
  });
}

void RedisPublisher::Stop() {
  worker_.Stop();  // the waits on cv_ take the stop token: a stop wakes them
  Disconnect();
}

void RedisPublisher::SetReplicas(const std::vector<std::string>& ids) {
  std::lock_guard lock(mu_);
  std::set<std::string> next(ids.begin(), ids.end());
  for (const auto& m : members_) {
    if (!next.count(m)) {
      removed_.insert(m);
      pending_.erase(m);
    }
  }
  for (const auto& m : next) removed_.erase(m);
  members_ = std::move(next);
  members_dirty_ = true;
  cv_.notify_all();
}

void RedisPublisher::RetireAll() {
  std::lock_guard lock(mu_);
  pending_.clear();
  retire_all_ = true;
  members_dirty_ = true;
  cv_.notify_all();
}

void RedisPublisher::Publish(const ReplicaSnapshot& snap) {
  std::lock_guard lock(mu_);
  pending_[snap.id] = snap;
  cv_.notify_all();
}

void RedisPublisher::PublishPrimary(const PrimarySnapshot& snap) {
  std::lock_guard lock(mu_);
  primary_ = snap;
  cv_.notify_all();
}

void RedisPublisher::PublishEvent(std::string json) {
  std::lock_guard lock(mu_);
  events_.push_back(std::move(json));
  while (events_.size() > kMaxEvents) events_.pop_front();
  cv_.notify_all();
}

bool RedisPublisher::connected() const {
  std::lock_guard lock(mu_);
  return connected_;
}

std::vector<std::string> RedisPublisher::HsetArgs(const PrimarySnapshot& s) {
  namespace pf = contract::primary_field;
  return {"HSET",
          contract::PrimaryKey(s.id),
          pf::kState,
          s.state,
          pf::kLastWriteMs,
          std::to_string(s.last_write_ms),
          pf::kConsecutiveFailures,
          std::to_string(s.consecutive_failures),
          pf::kReadOnly,
          s.read_only ? "1" : "0",
          pf::kTopology,
          s.topology,
          pf::kCluster,
          s.cluster};
}

bool RedisPublisher::Connect() {
  // The scripts on every connection: a restarted, failed-over or newly promoted master has an
  // empty script cache.
  auto client = RedisClient::Open(
      config_, kIoTimeout,
      {{"SCRIPT", "LOAD", kMergeRecordScript}, {"SCRIPT", "LOAD", kHashWithExpiryScript}});
  if (!client.ok()) {
    const Status& st = client.status();
    std::string why = st.message();
    if (st.code() == Status::Code::kServerError) {
      why +=
          " (lagwatch's scripts need Redis 5 or later with scripting, and SCRIPT LOAD and "
          "EVALSHA for the agent's user)";
    }
    const bool tls = st.code() == Status::Code::kTls;
    // Limited per cause: a new one (a timeout, then the TLS reason behind it) is logged at once.
    LogLimited(LogLevel::kWarn,
               std::string("redis-connect:") + st.reason() + (tls ? ":" : "") + st.tls_reason(),
               why);
    metrics_->redis_errors.Add({{"reason", tls ? "tls" : "connect"}}).Increment();
    metrics_->CountTlsError("redis", st);
    Disconnect();
    return false;
  }
  client_ = std::move(client).value();
  Log(LogLevel::kInfo, std::string("connected to Redis ") +
                           (client_->cluster() ? "Cluster (masters " + client_->Describe() + ")"
                                               : client_->Describe()));
  std::lock_guard lock(mu_);
  connected_ = true;
  members_dirty_ = true;
  metrics_->redis_connected.Set(1);
  return true;
}

void RedisPublisher::Disconnect() {
  client_.reset();
  std::lock_guard lock(mu_);
  connected_ = false;
  metrics_->redis_connected.Set(0);
}

void RedisPublisher::AppendMembership(std::vector<RedisUnit>& units,
                                      std::set<std::string>& removing, bool* retired_all) {
  const std::string set_key = contract::ReplicaSetKey(config_.key_prefix);
  std::vector<std::string> sadd = {"SADD", set_key};
  {
    std::lock_guard lock(mu_);
    sadd.insert(sadd.end(), members_.begin(), members_.end());
    removing.swap(removed_);
    *retired_all = std::exchange(retire_all_, false);
  }
  auto retire = [&](const std::string& member) {
    const std::string key = contract::ReplicaKey(config_.key_prefix, member);
    units.push_back({key, {RetireRecordArgs(merge_sha_, key, agent_id_)}});
  };
  if (*retired_all) {
    for (auto it = sadd.begin() + 2; it != sadd.end(); ++it) retire(*it);
  }
  if (sadd.size() > 2) units.push_back({set_key, {sadd}});
  // Replicas no longer configured leave the set, and this agent's record leaves their keys, at
  // once.
  std::vector<std::string> srem = {"SREM", set_key};
  for (const auto& m : removing) {
    srem.push_back(m);
    retire(m);
  }
  if (srem.size() > 2) units.push_back({set_key, {srem}});
}

Millis RedisPublisher::Remaining(MonoTime measured, MonoTime now) const {
  return Millis(config_.ttl_ms) - std::chrono::ceil<Millis>(now - measured);
}

void RedisPublisher::AppendRecords(std::vector<RedisUnit>& units,
                                   const std::map<std::string, ReplicaSnapshot>& records,
                                   MonoTime now, std::vector<MonoTime>* written) {
  for (const auto& [id, snap] : records) {
    const Millis remaining = Remaining(snap.measured_mono, now);
    if (remaining <= Millis(0)) continue;  // too old to publish
    const std::string key = contract::ReplicaKey(config_.key_prefix, id);
    units.push_back({key, {MergeRecordArgs(merge_sha_, key, snap, remaining.count())}});
    written->push_back(snap.measured_mono);
  }
}

void RedisPublisher::AppendPrimary(std::vector<RedisUnit>& units,
                                   const std::optional<PrimarySnapshot>& primary, MonoTime now) {
  if (!primary) return;
  const Millis remaining = Remaining(primary->measured_mono, now);
  if (remaining <= Millis(0)) return;
  std::vector<std::string> hset = HsetArgs(*primary);
  const std::string key = hset[1];  // HSET key field value ...
  units.push_back(
      {key,
       {HashWithExpiryArgs(hash_sha_, key, remaining.count(), {hset.begin() + 2, hset.end()})}});
  // Which server is the primary, under a name routers know without knowing it: the pointer.
  const std::string pointer = contract::PrimaryPointerKey(config_.key_prefix);
  namespace pf = contract::primary_field;
  units.push_back(
      {pointer,
       {HashWithExpiryArgs(hash_sha_, pointer, remaining.count(),
                           {pf::kPrimary, primary->id, pf::kState, primary->state, pf::kTopology,
                            primary->topology, pf::kCluster, primary->cluster})}});
}

void RedisPublisher::AppendEvents(std::vector<RedisUnit>& units,
                                  const std::deque<std::string>& events) {
  const std::string channel = contract::EventsChannel(config_.key_prefix);
  for (const auto& e : events) units.push_back({"", {{"PUBLISH", channel, e}}});
}

Status RedisPublisher::Write(const std::vector<RedisUnit>& units) {
  if (units.empty()) return Status::Ok();
  auto replies = client_->Run(units);
  if (!replies.ok()) return Status::Unavailable(replies.status().message());
  for (const auto& unit_replies : *replies) {
    for (const RedisReply& reply : unit_replies) {
      if (reply->type != REDIS_REPLY_ERROR) continue;
      const std::string text = ReplyText(*reply);
      if (text.starts_with("NOSCRIPT")) {
        // The script cache was flushed under us (SCRIPT FLUSH): new connections load it again.
        return Status::Unavailable("Redis lost lagwatch's scripts (NOSCRIPT)");
      }
      // A master demoted to a replica keeps its clients and refuses their writes: only another
      // connection (with Sentinel, to the master it names now) gets them written.
      if (text.starts_with("READONLY")) {
        return Status::ServerError("Redis " + client_->Describe() +
                                   " is read-only (a replica): " + text);
      }
      // The server refused a command (e.g. wrong key type, OOM, a redirection given up on):
      // count it, keep the connection.
      metrics_->redis_errors.Add({{"reason", "command"}}).Increment();
      LogLimited(LogLevel::kWarn, "redis-command", "Redis refused a command: " + text);
    }
  }
  return Status::Ok();
}

void RedisPublisher::Requeue(std::map<std::string, ReplicaSnapshot> records,
                             std::optional<PrimarySnapshot> primary, bool with_members,
                             const std::set<std::string>& removing, bool retired_all) {
  std::lock_guard lock(mu_);
  if (retired_all) retire_all_ = true;
  // Put back what may not have been written, unless a newer record arrived meanwhile.
  for (auto& [id, snap] : records) pending_.try_emplace(id, std::move(snap));
  if (primary && !primary_) primary_ = std::move(primary);
  if (with_members) members_dirty_ = true;
  for (const auto& m : removing) {
    if (!members_.count(m)) removed_.insert(m);
  }
}

bool RedisPublisher::Flush(std::map<std::string, ReplicaSnapshot> records,
                           std::optional<PrimarySnapshot> primary, std::deque<std::string> events,
                           bool with_members) {
  const MonoTime started = clock_.Now();
  std::set<std::string> removing;
  bool retired_all = false;
  std::vector<RedisUnit> units;
  if (with_members) AppendMembership(units, removing, &retired_all);
  std::vector<MonoTime> written;
  AppendRecords(units, records, started, &written);
  AppendPrimary(units, primary, started);
  AppendEvents(units, events);

  if (Status st = Write(units); !st.ok()) {
    const bool readonly = st.code() == Status::Code::kServerError;
    metrics_->redis_errors.Add({{"reason", readonly ? "readonly" : "io"}}).Increment();
    LogLimited(LogLevel::kWarn, readonly ? "redis-readonly" : "redis-io",
               "Redis write failed: " + st.message());
    Requeue(std::move(records), std::move(primary), with_members, removing, retired_all);
    return false;
  }
  metrics_->redis_publishes.Increment(static_cast<double>(written.size()));
  // How old each record was when Redis had it: what a key's age adds to the probe interval.
  const MonoTime acknowledged = clock_.Now();
  for (MonoTime measured : written) {
    metrics_->redis_record_delay_seconds.Observe(
        std::chrono::duration<double>(acknowledged - measured).count());
  }
  metrics_->events_published.Increment(static_cast<double>(events.size()));
  metrics_->redis_publish_duration_seconds.Observe(
      std::chrono::duration<double>(clock_.Now() - started).count());
  return true;
}

void RedisPublisher::Run(std::stop_token stop) {
  // The wait before the next connect doubles until a write succeeds, not just a connect: a server
  // that takes connections but refuses every write (a replica answering READONLY) must not be
  // reconnected to in a tight loop.
  Millis backoff = kMinBackoff;
  std::mutex wait_mu;
  auto back_off = [&] {
    std::unique_lock lock(wait_mu);
    cv_.wait_for(lock, stop, backoff, [] { return false; });
    backoff = std::min(backoff * 2, kMaxBackoff);
  };
  while (!stop.stop_requested()) {
    if (!client_ && !Connect()) {
      back_off();
      continue;
    }

    std::map<std::string, ReplicaSnapshot> records;
    std::optional<PrimarySnapshot> primary;
    std::deque<std::string> events;
    bool with_members = false;
    bool waited = false;
    {
      std::unique_lock lock(mu_);
      auto work = [&] {
        return !pending_.empty() || primary_ || !events_.empty() || members_dirty_;
      };
      waited = !work();
      cv_.wait(lock, stop, work);
      if (stop.stop_requested()) break;
    }
    // Records that came in while the last batch was written are a batch already; after an idle
    // wait, the first record waits kGather for the rest of its burst (outside the lock, so probers
    // keep adding to it).
    if (waited && !clock_.SleepUntil(stop, clock_.Now() + kGather)) break;
    {
      std::lock_guard lock(mu_);
      records.swap(pending_);
      primary.swap(primary_);
      events.swap(events_);
      with_members = members_dirty_;
      members_dirty_ = false;
    }
    if (Flush(std::move(records), std::move(primary), std::move(events), with_members)) {
      backoff = kMinBackoff;
    } else {
      Disconnect();
      back_off();
    }
  }
}

}  // namespace lagwatch
