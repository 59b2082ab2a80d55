#include "base/redis_cluster.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "base/strings.h"

namespace lagwatch {
namespace {

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the one Redis Cluster uses for slots.
constexpr std::array<uint16_t, 256> Crc16Table() {
  std::array<uint16_t, 256> t{};
  for (int i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int b = 0; b < 8; ++b) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
    t[static_cast<size_t>(i)] = crc;
  }
  return t;
}
constexpr std::array<uint16_t, 256> kCrc16 = Crc16Table();

uint16_t Crc16(std::string_view s) {
  uint16_t crc = 0;
  for (unsigned char c : s) {
    crc = static_cast<uint16_t>((crc << 8) ^ kCrc16[((crc >> 8) ^ c) & 0xff]);
  }
  return crc;
}

std::string Text(const redisReply& r) { return std::string(r.str, r.len); }

// A master's address in a CLUSTER SLOTS node entry: [ip, port, id, ...]; nullopt when malformed.
std::optional<Endpoint> NodeAddress(const redisReply* node, const Endpoint& reached_as) {
  if (!node || node->type != REDIS_REPLY_ARRAY || node->elements < 2) return std::nullopt;
  const redisReply* ip = node->element[0];
  const redisReply* port = node->element[1];
  if (ip->type != REDIS_REPLY_STRING || port->type != REDIS_REPLY_INTEGER) return std::nullopt;
  if (port->integer < 1 || port->integer > 65535) return std::nullopt;
  std::string host = Text(*ip);
  // A node that does not know how it is reached says "" (or "?" before Redis 7).
  if (host.empty() || host == "?") host = reached_as.host;
  return Endpoint{std::move(host), static_cast<int>(port->integer)};
}

}  // namespace

uint16_t RedisKeySlot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<uint16_t>(Crc16(key) & (kRedisClusterSlots - 1));
}

Result<std::vector<RedisSlotRange>> ParseClusterSlots(const redisReply& r,
                                                      const Endpoint& reached_as) {
  if (r.type != REDIS_REPLY_ARRAY) return Status::DataError("CLUSTER SLOTS: not an array");
  std::vector<RedisSlotRange> out;
  for (size_t i = 0; i < r.elements; ++i) {
    const redisReply* e = r.element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
        e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER) {
      return Status::DataError("CLUSTER SLOTS: entry " + std::to_string(i) + " is not a range");
    }
    const long long first = e->element[0]->integer, last = e->element[1]->integer;
    if (first < 0 || last < first || last >= kRedisClusterSlots) {
      return Status::DataError("CLUSTER SLOTS: range " + std::to_string(first) + "-" +
                               std::to_string(last) + " is out of 0-16383");
    }
    auto master = NodeAddress(e->element[2], reached_as);
    if (!master) {
      return Status::DataError("CLUSTER SLOTS: entry " + std::to_string(i) +
                               " has no master address");
    }
    out.push_back({static_cast<uint16_t>(first), static_cast<uint16_t>(last), *master});
  }
  return out;
}

std::optional<RedisRedirect> ParseRedisRedirect(std::string_view error) {
  RedisRedirect r;
  if (error.starts_with("MOVED ")) {
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    r.ask = true;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const size_t space = error.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto slot = ParseInt<int>(error.substr(0, space));
  if (!slot || *slot < 0 || *slot >= kRedisClusterSlots) return std::nullopt;
  r.slot = static_cast<uint16_t>(*slot);
  const std::string_view address = error.substr(space + 1);
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  auto port = ParseInt<int>(address.substr(colon + 1));
  if (!port || *port < 1 || *port > 65535) return std::nullopt;
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return std::nullopt;
  r.to = Endpoint{std::string(host), *port};
  return r;
}

Result<std::unique_ptr<RedisCluster>> RedisCluster::Open(const RedisConfig& config,
                                                         Millis timeout) {
  std::unique_ptr<RedisCluster> c(new RedisCluster(config, timeout));
  if (Status st = c->Refresh(); !st.ok()) return st;
  return c;
}

Status RedisCluster::LoadMapFrom(RedisConnection& conn, const Endpoint& node) {
  RedisReply r = conn.Run({"CLUSTER", "SLOTS"});
  if (!r) return conn.error();
  if (r->type == REDIS_REPLY_ERROR) {
    return Status::ServerError("Redis " + node.Id() + ": CLUSTER SLOTS: " + Text(*r));
  }
  auto ranges = ParseClusterSlots(*r, node);
  if (!ranges.ok())
    return Status::DataError("Redis " + node.Id() + ": " + ranges.status().message());
  std::vector<int16_t> slots(kRedisClusterSlots, -1);
  std::vector<Endpoint> masters;
  for (const RedisSlotRange& range : *ranges) {
    auto it = std::find(masters.begin(), masters.end(), range.master);
    const auto index = static_cast<int16_t>(it - masters.begin());
    if (it == masters.end()) masters.push_back(range.master);
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
  // Connections to servers that are no longer masters go: a demoted master refuses writes.
  std::set<std::string> kept;
  for (const Endpoint& m : masters_) kept.insert(m.Id());
  for (auto it = conns_.begin(); it != conns_.end();) {
    it = kept.count(it->first) ? std::next(it) : conns_.erase(it);
  }
  return Status::Ok();
}

Status RedisCluster::Refresh() {
  std::vector<Endpoint> nodes = masters_;
  for (const Endpoint& seed : config_.cluster) {
    if (std::find(nodes.begin(), nodes.end(), seed) == nodes.end()) nodes.push_back(seed);
  }
  if (nodes.empty()) return Status::InvalidArgument("no Redis Cluster node configured");
  std::string tried;
  const char* tls_reason = nullptr;
  for (const Endpoint& node : nodes) {
    auto conn = Connection(node);
    Status st = conn.ok() ? LoadMapFrom(**conn, node) : conn.status();
    if (st.ok()) return st;
    if (!tls_reason && st.code() == Status::Code::kTls) tls_reason = st.tls_reason();
    Drop(node);
    tried += (tried.empty() ? "" : "; ") + st.message();
  }
  std::string msg = "no Redis Cluster node gave the slot map: " + tried;
  return tls_reason ? Status::Tls(tls_reason, std::move(msg)) : Status::Unavailable(std::move(msg));
}

Result<RedisConnection*> RedisCluster::Connection(const Endpoint& master) {
  auto it = conns_.find(master.Id());
  if (it != conns_.end() && it->second->error().ok()) return it->second.get();
  auto conn = RedisConnectTo(master, config_, timeout_);
  if (!conn.ok()) return conn.status();
  RedisConnection* raw = conn->get();
  conns_[master.Id()] = std::move(conn).value();
  return raw;
}

void RedisCluster::Drop(const Endpoint& master) { conns_.erase(master.Id()); }

Status RedisCluster::Abandon(Status why) {
  // Other masters' connections may still have replies of this Run on their way: none is of use.
  conns_.clear();
  return why;
}

const Endpoint* RedisCluster::MasterOf(const std::string& key) const {
  if (masters_.empty()) return nullptr;
  if (key.empty()) return &masters_.front();
  const int16_t i = slot_master_[RedisKeySlot(key)];
  return i < 0 ? nullptr : &masters_[static_cast<size_t>(i)];
}

std::vector<Endpoint> RedisCluster::masters() const { return masters_; }

std::string RedisCluster::Describe() const {
  std::string out;
  for (const Endpoint& m : masters_) out += (out.empty() ? "" : ",") + m.Id();
  return out;
}

Result<std::vector<std::vector<RedisReply>>> RedisCluster::Run(
    const std::vector<RedisUnit>& units) {
  std::vector<std::vector<RedisReply>> out(units.size());
  struct Pending {
    size_t unit;
    std::optional<Endpoint> to;  // a redirection's node (else the slot map's)
    bool asking = false;         // ASK: to `to`, once, after ASKING
    int redirects = 0;
  };
  std::vector<Pending> pending;
  for (size_t i = 0; i < units.size(); ++i) pending.push_back({i, std::nullopt, false, 0});
  bool refreshed_for_failure = false;
  while (!pending.empty()) {
    // Every node's units, pipelined: all sent before any reply is read.
    std::map<std::string, std::pair<Endpoint, std::vector<Pending>>> by_node;
    for (Pending& p : pending) {
      const Endpoint* to = p.to ? &*p.to : MasterOf(units[p.unit].key);
      if (!to) return Status::Unavailable("Redis Cluster: no slot map");
      auto& entry = by_node[to->Id()];
      entry.first = *to;
      entry.second.push_back(std::move(p));
    }
    pending.clear();
    bool refresh = false;
    std::vector<std::pair<RedisConnection*, std::vector<Pending>*>> sent;
    for (auto& [id, entry] : by_node) {
      auto conn = Connection(entry.first);
      if (!conn.ok()) {
        // Nothing was sent to it: the map is read again (a failover may have promoted its
        // replica) and its units go where the new map says, once.
        if (refreshed_for_failure) return conn.status();
        refreshed_for_failure = refresh = true;
        Drop(entry.first);
        for (Pending& p : entry.second) {
          pending.push_back({p.unit, std::nullopt, false, p.redirects + 1});
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
          if (!redirect && r->type == REDIS_REPLY_ERROR) redirect = ParseRedisRedirect(Text(*r));
          replies.push_back(std::move(r));
        }
        if (redirect && p.redirects < kMaxRedirects) {
          // MOVED: the map is read again after this round (the slot moved for good), and the
          // unit goes where the node said at once; ASK: there once, the map unchanged.
          if (!redirect->ask) refresh = true;
          pending.push_back({p.unit, redirect->to, redirect->ask, p.redirects + 1});
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
