#include "base/redis_client.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <set>
#include <utility>

#include "base/strings.h"

namespace lagwatch {

Result<std::unique_ptr<RedisConnection>> RedisConnectForEvents(const RedisConfig& config,
                                                               Millis timeout) {
  if (config.cluster.empty()) return RedisConnect(config, timeout);
  Status last;
  for (const Endpoint& node : config.cluster) {
    auto conn = RedisConnectTo(node, config, timeout);
    if (conn.ok()) return conn;
    last = conn.status();
  }
  return last;
}

Result<std::unique_ptr<RedisClient>> RedisClient::Open(
    const RedisConfig& config, Millis timeout, std::vector<std::vector<std::string>> on_connect) {
  std::unique_ptr<RedisClient> c(new RedisClient(config, timeout, std::move(on_connect)));
  if (Status st = c->Refresh(); !st.ok()) return st;
  return c;
}

Status RedisClient::LoadMapFrom(RedisConnection& conn, const Endpoint& node) {
  RedisReply r = conn.Run({"CLUSTER", "SLOTS"});
  if (!r) return conn.error();
  if (r->type == REDIS_REPLY_ERROR) {
    return Status::ServerError("Redis " + node.Id() + ": CLUSTER SLOTS: " + ReplyText(*r));
  }
  auto ranges = ParseClusterSlots(*r, node);
  if (!ranges.ok())
    return Status::DataError("Redis " + node.Id() + ": " + ranges.status().message());
  std::vector<int16_t> slots(kRedisClusterSlots, -1);
  std::vector<Endpoint> masters;
  std::vector<std::vector<Endpoint>> replicas;
  for (const RedisSlotRange& range : *ranges) {
    auto it = std::find(masters.begin(), masters.end(), range.master);
    const auto index = static_cast<int16_t>(it - masters.begin());
    if (it == masters.end()) {
      masters.push_back(range.master);
      replicas.emplace_back();
    }
    for (const Endpoint& r : range.replicas) {
      auto& known = replicas[static_cast<size_t>(index)];
      if (std::find(known.begin(), known.end(), r) == known.end()) known.push_back(r);
    }
    for (int s = range.first; s <= range.last; ++s) slots[static_cast<size_t>(s)] = index;
  }
  for (int s = 0; s < kRedisClusterSlots; ++s) {
    if (slots[static_cast<size_t>(s)] < 0) {
      return Status::DataError("Redis " + node.Id() + ": the cluster serves no slot " +
                               std::to_string(s) + " (CLUSTER SLOTS)");
    }
  }
  slot_master_ = std::move(slots);
  masters_ = std::move(masters);
  replicas_ = std::move(replicas);
  // Connections to servers that are no longer masters go: a demoted master refuses writes.
  std::set<std::string> kept;
  for (const Endpoint& m : masters_) kept.insert(m.Id());
  for (auto it = conns_.begin(); it != conns_.end();) {
    it = kept.count(it->first) ? std::next(it) : conns_.erase(it);
  }
  return Status::Ok();
}

Status RedisClient::Refresh() {
  if (!cluster()) {
    // One server, or the master Sentinel names now.
    conns_.clear();
    auto conn = RedisConnect(config_, timeout_);
    if (!conn.ok()) return conn.status();
    if (Status st = SetUp(**conn); !st.ok()) return st;
    const std::string& id = (*conn)->server();
    const size_t colon = id.rfind(':');
    masters_ = {Endpoint{id.substr(0, colon), ParseInt<int>(id.substr(colon + 1)).value_or(0)}};
    conns_[masters_.front().Id()] = std::move(conn).value();
    return Status::Ok();
  }
  std::vector<Endpoint> nodes = masters_;
  for (const Endpoint& seed : config_.cluster) {
    if (std::find(nodes.begin(), nodes.end(), seed) == nodes.end()) nodes.push_back(seed);
  }
  std::string tried;
  const char* tls_reason = nullptr;
  for (const Endpoint& node : nodes) {
    // A connection kept for a master, else one just for the map (a seed may be a replica).
    Status st;
    auto kept = conns_.find(node.Id());
    if (kept != conns_.end() && kept->second->error().ok()) {
      st = LoadMapFrom(*kept->second, node);
    } else {
      auto conn = RedisConnectTo(node, config_, timeout_);
      st = conn.ok() ? LoadMapFrom(**conn, node) : conn.status();
    }
    if (st.ok()) return st;
    if (!tls_reason && st.code() == Status::Code::kTls) tls_reason = st.tls_reason();
    Drop(node);
    tried += (tried.empty() ? "" : "; ") + st.message();
  }
  std::string msg = "no Redis Cluster node gave the slot map: " + tried;
  return tls_reason ? Status::Tls(tls_reason, std::move(msg)) : Status::Unavailable(std::move(msg));
}

Status RedisClient::SetUp(RedisConnection& conn) {
  for (const auto& cmd : on_connect_) {
    RedisReply r = conn.Run(cmd);
    if (!r) return conn.error();
    if (r->type == REDIS_REPLY_ERROR) {
      return Status::ServerError("Redis " + conn.server() + " refused " + cmd.front() + ": " +
                                 ReplyText(*r));
    }
  }
  return Status::Ok();
}

Result<RedisConnection*> RedisClient::Connection(const Endpoint& master) {
  auto it = conns_.find(master.Id());
  if (it != conns_.end() && it->second->error().ok()) return it->second.get();
  auto conn = RedisConnectTo(master, config_, timeout_);
  if (!conn.ok()) return conn.status();
  if (Status st = SetUp(**conn); !st.ok()) return st;
  RedisConnection* raw = conn->get();
  conns_[master.Id()] = std::move(conn).value();
  return raw;
}

void RedisClient::Drop(const Endpoint& master) { conns_.erase(master.Id()); }

Status RedisClient::Abandon(Status why) {
  // Other masters' connections may still have replies of this Run on their way: none is of use.
  conns_.clear();
  replica_conns_.clear();
  return why;
}

Result<RedisConnection*> RedisClient::ReplicaConnection(const Endpoint& replica) {
  auto it = replica_conns_.find(replica.Id());
  if (it != replica_conns_.end() && it->second->error().ok()) return it->second.get();
  auto conn = RedisConnectTo(replica, config_, timeout_);
  if (!conn.ok()) return conn.status();
  RedisReply ok = (*conn)->Run({"READONLY"});
  if (!ok) return (*conn)->error();
  if (ok->type == REDIS_REPLY_ERROR) {
    return Status::ServerError("Redis " + replica.Id() + " refused READONLY: " + ReplyText(*ok));
  }
  RedisConnection* raw = conn->get();
  replica_conns_[replica.Id()] = std::move(conn).value();
  return raw;
}

std::optional<Endpoint> RedisClient::ReachableReplicaOf(const Endpoint& master) {
  auto it = std::find(masters_.begin(), masters_.end(), master);
  if (it == masters_.end()) return std::nullopt;
  for (const Endpoint& r : replicas_[static_cast<size_t>(it - masters_.begin())]) {
    if (ReplicaConnection(r).ok()) return r;
  }
  return std::nullopt;
}

const Endpoint* RedisClient::MasterOf(const std::string& key) const {
  if (masters_.empty()) return nullptr;
  if (key.empty() || !cluster()) return &masters_.front();
  const int16_t i = slot_master_[RedisKeySlot(key)];
  return i < 0 ? nullptr : &masters_[static_cast<size_t>(i)];
}

std::string RedisClient::Describe() const {
  std::string out;
  for (const Endpoint& m : masters_) out += (out.empty() ? "" : ",") + m.Id();
  return out;
}

Result<std::vector<std::vector<RedisReply>>> RedisClient::Run(const std::vector<RedisUnit>& units) {
  std::vector<std::vector<RedisReply>> out(units.size());
  struct Pending {
    size_t unit;
    std::optional<Endpoint> to;  // a redirection's node, or a replica (else the slot map's)
    bool asking = false;         // ASK: to `to`, once, after ASKING
    int redirects = 0;
    bool replica = false;  // `to` is a replica of a master that cannot be reached
  };
  std::vector<Pending> pending;
  for (size_t i = 0; i < units.size(); ++i) pending.push_back({i, std::nullopt, false, 0, false});
  bool refreshed_for_failure = false;
  while (!pending.empty()) {
    // Every node's units, pipelined: all sent before any reply is read.
    std::map<std::string, std::pair<Endpoint, std::vector<Pending>>> by_node;
    for (Pending& p : pending) {
      const Endpoint* to = p.to ? &*p.to : MasterOf(units[p.unit].key);
      if (!to) return Status::Unavailable("Redis Cluster: no slot map");
      auto& entry = by_node[(p.replica ? "replica " : "") + to->Id()];
      entry.first = *to;
      entry.second.push_back(std::move(p));
    }
    pending.clear();
    bool refresh = false;
    std::vector<std::pair<RedisConnection*, std::vector<Pending>*>> sent;
    for (auto& [id, entry] : by_node) {
      const bool to_replica = entry.second.front().replica;
      auto conn = to_replica ? ReplicaConnection(entry.first) : Connection(entry.first);
      if (!conn.ok() && !to_replica && refreshed_for_failure) {
        // Still the dead master after the map was read again: its reads go to a replica of it.
        const bool reads = std::all_of(entry.second.begin(), entry.second.end(),
                                       [&](const Pending& p) { return units[p.unit].read_only; });
        std::optional<Endpoint> replica = reads ? ReachableReplicaOf(entry.first) : std::nullopt;
        if (!replica) return conn.status();
        for (Pending& p : entry.second) {
          pending.push_back({p.unit, replica, false, p.redirects + 1, true});
        }
        continue;
      }
      if (!conn.ok()) {
        // Nothing was sent to it: the map is read again (a failover may have promoted its
        // replica) and its units go where the new map says, once.
        if (refreshed_for_failure || to_replica) return conn.status();
        refreshed_for_failure = refresh = true;
        Drop(entry.first);
        for (Pending& p : entry.second) {
          pending.push_back({p.unit, std::nullopt, false, p.redirects + 1, false});
        }
        continue;
      }
      for (const Pending& p : entry.second) {
        for (const auto& cmd : units[p.unit].commands) {
          if (p.asking) (*conn)->Append({"ASKING"});
          (*conn)->Append(cmd);
        }
      }
      sent.emplace_back(*conn, &entry.second);
    }
    for (auto& [conn, list] : sent) {
      for (const Pending& p : *list) {
        std::vector<RedisReply> replies;
        std::optional<RedisRedirect> redirect;
        for (size_t c = 0; c < units[p.unit].commands.size(); ++c) {
          if (p.asking) {
            RedisReply asking = conn->Next();
            if (!asking) return Abandon(conn->error());
          }
          RedisReply r = conn->Next();
          if (!r) return Abandon(conn->error());
          if (!redirect && r->type == REDIS_REPLY_ERROR)
            redirect = ParseRedisRedirect(ReplyText(*r));
          replies.push_back(std::move(r));
        }
        if (redirect && p.redirects < kMaxRedirects) {
          // MOVED: the map is read again after this round (the slot moved for good), and the
          // unit goes where the node said at once; ASK: there once, the map unchanged.
          if (!redirect->ask) refresh = true;
          pending.push_back({p.unit, redirect->to, redirect->ask, p.redirects + 1, false});
        } else {
          out[p.unit] = std::move(replies);
        }
      }
    }
    if (refresh && !pending.empty()) {
      if (Status st = Refresh(); !st.ok()) return st;
    }
  }
  return out;
}

}  // namespace lagwatch
