#include "base/redis_cluster.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "base/redis_pipeline.h"
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

// A master's address in a CLUSTER SLOTS node entry: [ip, port, id, ...]; nullopt when malformed.
std::optional<Endpoint> NodeAddress(const redisReply* node, const Endpoint& reached_as) {
  if (!node || node->type != REDIS_REPLY_ARRAY || node->elements < 2) return std::nullopt;
  const redisReply* ip = node->element[0];
  const redisReply* port = node->element[1];
  if (ip->type != REDIS_REPLY_STRING || port->type != REDIS_REPLY_INTEGER) return std::nullopt;
  if (port->integer < 1 || port->integer > 65535) return std::nullopt;
  std::string host = ReplyText(*ip);
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
    RedisSlotRange range{static_cast<uint16_t>(first), static_cast<uint16_t>(last), *master, {}};
    for (size_t k = 3; k < e->elements; ++k) {
      // A replica that does not know its address cannot be told from the node that answered.
      const redisReply* node = e->element[k];
      if (node->type == REDIS_REPLY_ARRAY && node->elements >= 2 &&
          node->element[0]->type == REDIS_REPLY_STRING && node->element[0]->len > 0 &&
          std::string_view(node->element[0]->str, node->element[0]->len) != "?") {
        if (auto replica = NodeAddress(node, reached_as)) range.replicas.push_back(*replica);
      }
    }
    out.push_back(std::move(range));
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

}  // namespace lagwatch
