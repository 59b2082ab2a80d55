#include "base/redis_cluster.h"

#include <hiredis/hiredis.h>

#include <doctest/doctest.h>

#include "base/redis_pipeline.h"

namespace lagwatch {
namespace {

// A reply as hiredis parses it from RESP bytes.
RedisReply Parse(const std::string& resp) {
  redisReader* reader = redisReaderCreate();
  REQUIRE(redisReaderFeed(reader, resp.data(), resp.size()) == REDIS_OK);
  void* raw = nullptr;
  REQUIRE(redisReaderGetReply(reader, &raw) == REDIS_OK);
  redisReaderFree(reader);
  REQUIRE(raw != nullptr);
  return RedisReply(static_cast<redisReply*>(raw));
}

TEST_CASE("redis cluster: key slots are CRC16 of the key or its hash tag, as Redis computes them") {
  // Values from Redis's cluster specification and CLUSTER KEYSLOT on Redis 7.0.15.
  CHECK(RedisKeySlot("123456789") == 12739);  // 0x31C3, the CRC16 check value, mod 16384
  CHECK(RedisKeySlot("foo") == 12182);
  CHECK(RedisKeySlot("bar") == 5061);
  CHECK(RedisKeySlot("somekey") == 11058);
  CHECK(RedisKeySlot("{user1000}.following") == RedisKeySlot("{user1000}.followers"));
  CHECK(RedisKeySlot("{user1000}.following") == RedisKeySlot("user1000"));
  // An empty tag or no closing brace: the whole key.
  CHECK(RedisKeySlot("foo{}{bar}") == 8363);
  CHECK(RedisKeySlot("foo{{bar}}zap") == RedisKeySlot("{bar"));
  CHECK(RedisKeySlot("foo{bar}{zap}") == RedisKeySlot("bar"));
  CHECK(RedisKeySlot("slave_delay:10.0.0.12:3306") == 2298);
  CHECK(RedisKeySlot("") == 0);
}

TEST_CASE("redis cluster: CLUSTER SLOTS is read as ranges and masters") {
  // Redis 7.0's shape: [first, last, [ip, port, id, metadata], replicas...].
  auto r = Parse(
      "*2\r\n"
      "*4\r\n:0\r\n:8191\r\n*4\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nid\r\n*0\r\n"
      "*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$3\r\nid4\r\n"
      "*3\r\n:8192\r\n:16383\r\n*3\r\n$0\r\n\r\n:7002\r\n$3\r\nid2\r\n");
  auto ranges = ParseClusterSlots(*r, Endpoint{"10.0.0.9", 7002});
  REQUIRE(ranges.ok());
  REQUIRE(ranges->size() == 2);
  CHECK((*ranges)[0] ==
        RedisSlotRange{0, 8191, Endpoint{"127.0.0.1", 7001}, {Endpoint{"127.0.0.1", 7004}}});
  // A master that does not know its address is the node that answered.
  CHECK((*ranges)[1] == RedisSlotRange{8192, 16383, Endpoint{"10.0.0.9", 7002}, {}});
  // A replica that does not know its address is left out (it is not the node that answered).
  auto unknown = Parse(
      "*1\r\n*4\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nid\r\n"
      "*3\r\n$1\r\n?\r\n:7004\r\n$3\r\nid4\r\n");
  auto one = ParseClusterSlots(*unknown, Endpoint{"10.0.0.9", 7001});
  REQUIRE(one.ok());
  CHECK((*one)[0].replicas.empty());
}

TEST_CASE("redis cluster: a CLUSTER SLOTS reply of another shape is refused, not trusted") {
  const Endpoint at{"127.0.0.1", 7000};
  CHECK_FALSE(ParseClusterSlots(*Parse("+OK\r\n"), at).ok());
  CHECK_FALSE(ParseClusterSlots(*Parse("*1\r\n:3\r\n"), at).ok());
  CHECK_FALSE(
      ParseClusterSlots(*Parse("*1\r\n*3\r\n:5\r\n:1\r\n*2\r\n$1\r\na\r\n:1\r\n"), at).ok());
  CHECK_FALSE(
      ParseClusterSlots(*Parse("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\na\r\n:1\r\n"), at).ok());
  CHECK_FALSE(
      ParseClusterSlots(*Parse("*1\r\n*3\r\n:0\r\n:10\r\n*2\r\n$1\r\na\r\n:70000\r\n"), at).ok());
  CHECK_FALSE(ParseClusterSlots(*Parse("*1\r\n*3\r\n:0\r\n:10\r\n$1\r\na\r\n"), at).ok());
}

TEST_CASE("redis cluster: MOVED and ASK redirections are read, anything else is not one") {
  auto moved = ParseRedisRedirect("MOVED 3999 127.0.0.1:6381");
  REQUIRE(moved);
  CHECK_FALSE(moved->ask);
  CHECK(moved->slot == 3999);
  CHECK(moved->to == Endpoint{"127.0.0.1", 6381});
  auto ask = ParseRedisRedirect("ASK 12182 [::1]:7002");
  REQUIRE(ask);
  CHECK(ask->ask);
  CHECK(ask->to == Endpoint{"::1", 7002});
  CHECK_FALSE(ParseRedisRedirect("ERR unknown command"));
  CHECK_FALSE(ParseRedisRedirect("MOVED 16384 127.0.0.1:6381"));
  CHECK_FALSE(ParseRedisRedirect("MOVED 1 127.0.0.1"));
  CHECK_FALSE(ParseRedisRedirect("MOVED 1 :6381"));
  CHECK_FALSE(ParseRedisRedirect("MOVED 1 host:0"));
  CHECK_FALSE(ParseRedisRedirect("MOVED x host:1"));
  CHECK_FALSE(ParseRedisRedirect("MOVED"));
}

}  // namespace
}  // namespace lagwatch
