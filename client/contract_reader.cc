#include "client/contract_reader.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>
#include <utility>

#include "base/contract.h"
#include "base/redis_pipeline.h"
#include "base/strings.h"
#include "client/route.h"

namespace lagwatch::client {
namespace {

// One replica's replies: HGETALL and PTTL of its key, and when they were sent.
struct ReplicaReplies {
  RedisReply hash;
  RedisReply pttl;
  MonoTime sent{};
};

}  // namespace

std::optional<FieldMap> HashFromReply(const redisReply* reply) {
  if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0) return std::nullopt;
  FieldMap out;
  for (size_t i = 0; i < reply->elements; i += 2) {
    const redisReply* f = reply->element[i];
    const redisReply* v = reply->element[i + 1];
    if (!f || !v || f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
      return std::nullopt;
    }
    out.insert_or_assign(std::string(f->str, f->len), std::string(v->str, v->len));
  }
  return out;
}

std::optional<std::vector<std::string>> MembersFromReply(const redisReply* reply) {
  if (!reply || reply->type != REDIS_REPLY_ARRAY) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(reply->elements);
  for (size_t i = 0; i < reply->elements; ++i) {
    const redisReply* m = reply->element[i];
    if (!m || m->type != REDIS_REPLY_STRING) return std::nullopt;
    out.emplace_back(m->str, m->len);
  }
  return out;
}

std::string ReplicaKey(std::string_view prefix, std::string_view id) {
  return contract::ReplicaKey(prefix, id);
}

std::string PrimaryKey(std::string_view id) { return contract::PrimaryKey(id); }

std::shared_ptr<const Contract> SnapshotCache::Get(MonoTime now, uint64_t generation) const {
  if (!contract_ || now >= until_ || generation != generation_) return nullptr;
  return contract_;
}

void SnapshotCache::Put(std::shared_ptr<const Contract> contract, uint64_t generation) {
  until_ = contract->fetched_at + max_age_;
  for (const ReplicaRecord& r : contract->replicas) {
    until_ = std::min(until_, r.expires_at);
    if (!bounded_ || !r.usable()) continue;
    // As Route judges it: a record measured in the router's future counts as measured now.
    ReplicaRecord judged = r;
    judged.measured_at_ms = std::min(r.measured_at_ms, contract->fetched_at_unix_ms);
    const std::optional<int64_t> fresh = FreshUntilMs(judged, bounded_->clock_skew_ms);
    if (!fresh) continue;
    const int64_t left_ms = *fresh - bounded_->min_left_ms - contract->fetched_at_unix_ms;
    if (left_ms > 0) until_ = std::min(until_, contract->fetched_at + Millis(left_ms));
  }
  contract_ = std::move(contract);
  generation_ = generation;
}

ContractReader::ContractReader(ReaderOptions options, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      cache_(options_.max_age, options_.bounded_staleness) {
  if (options_.subscribe) {
    subscriber_ = std::jthread([this](std::stop_token stop) { RunSubscriber(stop); });
  }
}

ContractReader::~ContractReader() {
  if (subscriber_.joinable()) {
    subscriber_.request_stop();
    subscriber_.join();
  }
}

void ContractReader::Invalidate() { generation_.fetch_add(1); }

ReaderStats ContractReader::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Status ContractReader::Connect() {
  if (client_) return Status::Ok();
  auto c = RedisClient::Open(options_.redis, options_.timeout);
  if (!c.ok()) return c.status();
  client_ = std::move(c).value();
  return Status::Ok();
}

Result<std::vector<RedisReply>> ContractReader::RunEach(
    const std::vector<std::vector<std::string>>& cmds, bool read_only) {
  std::vector<RedisUnit> units;
  for (const auto& cmd : cmds) units.push_back({cmd.size() > 1 ? cmd[1] : "", {cmd}, read_only});
  auto replies = client_->Run(units);
  if (!replies.ok()) {
    const Status& e = replies.status();
    std::string msg = (cmds.empty() ? "" : cmds.front()[0]) + ": " + e.message();
    return e.code() == Status::Code::kTls ? Status::Tls(e.tls_reason(), std::move(msg))
                                          : Status::Unavailable(std::move(msg));
  }
  std::vector<RedisReply> out;
  for (auto& unit : *replies) out.push_back(std::move(unit.front()));
  return out;
}

void ContractReader::Fail(const Status& s) {
  ++stats_.errors;
  stats_.last_error = s.ToString();
  if (s.code() == Status::Code::kUnavailable || s.code() == Status::Code::kTls) client_.reset();
  cache_.Clear();
  next_attempt_ = clock_.Now() + options_.retry_after;
}

std::shared_ptr<const Contract> ContractReader::Snapshot() {
  std::lock_guard lock(mu_);
  const MonoTime now = clock_.Now();
  const uint64_t generation = generation_.load();
  if (auto cached = cache_.Get(now, generation)) {
    ++stats_.served_from_cache;
    return cached;
  }
  if (now < next_attempt_) return std::make_shared<const Contract>();
  auto r = Refresh();
  if (!r.ok()) {
    Fail(r.status());
    return std::make_shared<const Contract>();
  }
  ++stats_.refreshes;
  auto contract = std::make_shared<const Contract>(std::move(r).value());
  cache_.Put(contract, generation);
  return contract;
}

Result<Contract> ContractReader::Refresh() {
  if (Status s = Connect(); !s.ok()) return s;
  const std::string& prefix = options_.redis.key_prefix;
  Contract c;
  c.fetched_at = clock_.Now();
  c.fetched_at_unix_ms = UnixMillis(clock_.WallNow());

  // Round one: the set, the pointer, and the keys the last refresh knew of.
  std::vector<std::vector<std::string>> cmds = {{"SMEMBERS", contract::ReplicaSetKey(prefix)},
                                                {"HGETALL", contract::PrimaryPointerKey(prefix)}};
  for (const std::string& m : known_members_) {
    cmds.push_back({"HGETALL", ReplicaKey(prefix, m)});
    cmds.push_back({"PTTL", ReplicaKey(prefix, m)});
  }
  if (!known_primary_.empty()) cmds.push_back({"HGETALL", PrimaryKey(known_primary_)});
  auto first = RunEach(cmds, /*read_only=*/true);
  if (!first.ok()) return first.status();
  std::vector<RedisReply> replies = std::move(first).value();

  std::map<std::string, ReplicaReplies> by_member;
  for (size_t i = 0; i < known_members_.size(); ++i) {
    by_member[known_members_[i]] = {std::move(replies[2 + 2 * i]), std::move(replies[3 + 2 * i]),
                                    c.fetched_at};
  }
  RedisReply primary_key_reply = known_primary_.empty() ? nullptr : std::move(replies.back());

  auto refuse = [&](const std::string& why) {
    ++stats_.malformed;
    stats_.last_error = why;
  };
  auto members = MembersFromReply(replies[0].get());
  if (!members) {
    refuse(prefix + ":replicas: not a set of strings");
    members.emplace();
  }
  std::set<std::string> seen;
  for (std::string& m : *members) {
    if (!IsReplicaId(m)) {
      refuse(prefix + ":replicas: member is not host:port: " + EscapeControl(m.substr(0, 64)));
    } else if (c.members.size() >= options_.max_replicas) {
      refuse(prefix + ":replicas: more than " + std::to_string(options_.max_replicas) + " members");
    } else if (seen.insert(m).second) {
      c.members.push_back(std::move(m));
    }
  }
  std::optional<FieldMap> pointer = HashFromReply(replies[1].get());
  std::string pointer_primary;
  if (pointer && pointer->count("primary") && IsReplicaId(pointer->at("primary"))) {
    pointer_primary = pointer->at("primary");
  }

  // Round two, only when something is new: the keys of new members, the new primary's key.
  std::vector<std::string> fresh;
  for (const std::string& m : c.members) {
    if (!by_member.count(m)) fresh.push_back(m);
  }
  const bool new_primary = !pointer_primary.empty() && pointer_primary != known_primary_;
  if (!fresh.empty() || new_primary) {
    const MonoTime sent = clock_.Now();
    std::vector<std::vector<std::string>> more;
    for (const std::string& m : fresh) {
      more.push_back({"HGETALL", ReplicaKey(prefix, m)});
      more.push_back({"PTTL", ReplicaKey(prefix, m)});
    }
    if (new_primary) more.push_back({"HGETALL", PrimaryKey(pointer_primary)});
    auto second = RunEach(more, /*read_only=*/true);
    if (!second.ok()) return second.status();
    std::vector<RedisReply> more_replies = std::move(second).value();
    for (size_t i = 0; i < fresh.size(); ++i) {
      by_member[fresh[i]] = {std::move(more_replies[2 * i]), std::move(more_replies[2 * i + 1]),
                             sent};
    }
    if (new_primary) primary_key_reply = std::move(more_replies.back());
  }

  const Millis ttl(options_.redis.ttl_ms);
  for (const std::string& m : c.members) {
    ReplicaReplies& rr = by_member[m];
    std::optional<FieldMap> fields = HashFromReply(rr.hash.get());
    if (!fields) {
      refuse(ReplicaKey(prefix, m) + ": not a hash");
      continue;
    }
    if (fields->empty()) continue;  // no key: unusable, as the contract says
    if (!rr.pttl || rr.pttl->type != REDIS_REPLY_INTEGER || rr.pttl->integer == -1) {
      refuse(ReplicaKey(prefix, m) + ": no expiry");
      continue;
    }
    if (rr.pttl->integer < 0) continue;  // expired between HGETALL and PTTL
    auto rec = ParseReplicaRecord(m, *fields);
    if (!rec.ok()) {
      refuse(ReplicaKey(prefix, m) + ": " + rec.status().message());
      continue;
    }
    rec->measured_after = rr.sent - ttl;
    rec->expires_at = rr.sent + Millis(rr.pttl->integer);
    c.replicas.push_back(std::move(rec).value());
  }

  if (pointer && !pointer->empty()) {
    std::optional<FieldMap> key;
    if (!pointer_primary.empty() && primary_key_reply) key = HashFromReply(primary_key_reply.get());
    auto info = ParsePrimary(*pointer, key && !key->empty() ? &*key : nullptr);
    if (!info.ok()) {
      refuse(prefix + ":primary: " + info.status().message());
    } else {
      if (key && !key->empty() && !info->key_valid) {
        refuse(PrimaryKey(pointer_primary) + ": malformed");
      }
      c.primary = std::move(info).value();
    }
  } else if (!pointer) {
    refuse(prefix + ":primary: not a hash");
  }

  known_members_ = c.members;
  known_primary_ = pointer_primary;
  return c;
}

Status ContractReader::Send(const std::vector<RedisCommand>& commands) {
  std::lock_guard lock(mu_);
  if (Status s = Connect(); !s.ok()) {
    Fail(s);
    return s;
  }
  auto replies = RunEach(commands, /*read_only=*/false);
  if (!replies.ok()) {
    Fail(replies.status());
    return replies.status();
  }
  Status result;
  for (size_t i = 0; i < commands.size(); ++i) {
    const RedisReply& r = (*replies)[i];
    if (r->type == REDIS_REPLY_ERROR && result.ok()) {
      result = Status::ServerError(commands[i][0] + ": " + ReplyText(*r));
    }
  }
  return result;
}

void ContractReader::RunSubscriber(const std::stop_token& stop) {
  const std::string channel = contract::EventsChannel(options_.redis.key_prefix);
  while (!stop.stop_requested()) {
    auto connected = RedisConnectForEvents(options_.redis, options_.timeout);
    if (!connected.ok()) {
      {
        std::lock_guard lock(mu_);
        ++stats_.errors;
        stats_.last_error = "events: " + connected.status().ToString();
      }
      clock_.SleepUntil(stop, clock_.Now() + options_.retry_after);
      continue;
    }
    RedisConnection& conn = **connected;
    conn.Append({"SUBSCRIBE", channel});
    // Whatever happened while not subscribed is unknown: read afresh.
    Invalidate();
    while (!stop.stop_requested()) {
      // Polled, so that a stop is seen within 100 ms however quiet the channel is.
      RedisReply reply = conn.Poll(Millis(100));
      if (!conn.error().ok()) break;
      if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
          reply->element[0]->type == REDIS_REPLY_STRING &&
          ReplyText(*reply->element[0]) == "message") {
        Invalidate();
        std::lock_guard lock(mu_);
        ++stats_.events;
      }
    }
    Invalidate();
    if (!stop.stop_requested()) {
      {
        std::lock_guard lock(mu_);
        ++stats_.errors;
        stats_.last_error = "events: " + (conn.error().ok() ? "lost" : conn.error().message());
      }
      clock_.SleepUntil(stop, clock_.Now() + options_.retry_after);
    }
  }
}

}  // namespace lagwatch::client
