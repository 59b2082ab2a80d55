#include "base/binlog_event.h"

#include <doctest/doctest.h>

#include "base/binlog_coords.h"
#include "base/test_values.h"

namespace lagwatch {
namespace {

using testing::Coords;

// Events built to the layouts the header cites (the v4 header, then the body, then a CRC32).
std::string Le(uint64_t v, int width) {
  std::string out;
  for (int i = 0; i < width; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

std::string Event(uint8_t type, const std::string& body, uint32_t log_pos, bool crc = true,
                  uint16_t flags = 0, uint32_t server_id = 1) {
  const size_t size = kBinlogHeaderBytes + body.size() + (crc ? kBinlogChecksumBytes : 0);
  std::string ev = Le(1764806400, 4) + static_cast<char>(type) + Le(server_id, 4) + Le(size, 4) +
                   Le(log_pos, 4) + Le(flags, 2) + body;
  if (crc) ev += Le(BinlogCrc32(ev), 4);
  return ev;
}

std::string MariaGtid(uint64_t seq, uint32_t domain, uint8_t flags = 0) {
  return Le(seq, 8) + Le(domain, 4) + static_cast<char>(flags) + std::string(6, '\0');
}

std::string Query(const std::string& statement, const std::string& db = "shop") {
  // thread id, execution time, schema length, error code, status variables length (none).
  return Le(7, 4) + Le(0, 4) + static_cast<char>(db.size()) + Le(0, 2) + Le(0, 2) + db + '\0' +
         statement;
}

std::string Xid(uint64_t xid) { return Le(xid, 8); }

std::array<uint8_t, 16> Uuid(uint8_t fill) {
  std::array<uint8_t, 16> u{};
  u.fill(fill);
  return u;
}

std::string MysqlGtid(const std::array<uint8_t, 16>& uuid, uint64_t gno,
                      std::optional<uint64_t> immediate = std::nullopt,
                      std::optional<uint64_t> original = std::nullopt) {
  std::string body = std::string(1, '\1') + std::string(uuid.begin(), uuid.end()) + Le(gno, 8);
  body += std::string(1, '\2') + Le(10, 8) + Le(11, 8);  // logical clock: typecode 2, two numbers
  if (immediate) {
    const bool two = original && *original != *immediate;
    body += Le(*immediate | (two ? uint64_t{1} << 55 : 0), 7);
    if (two) body += Le(*original, 7);
    body += std::string(1, '\0');  // transaction length 0, then nothing more
  }
  return body;
}

MonoTime At(int ms) { return MonoTime(Millis(ms)); }

Position Gtid(const char* text) { return Position(GtidPos::Parse(text).value()); }
Position Set(const std::string& text) { return Position(GtidSet::Parse(text).value()); }

constexpr const char* kUuidA = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa";

TEST_CASE("BinlogCrc32 is the CRC-32 of zlib (its check value for \"123456789\")") {
  CHECK(BinlogCrc32("123456789") == 0xcbf43926u);
  CHECK(BinlogCrc32("") == 0u);
}

TEST_CASE("ParseBinlogEvent reads the header, checks the size and the checksum") {
  const std::string rotate =
      Event(kRotateEvent, Le(4, 8) + "mysql-bin.000007", 0, true, kBinlogArtificialFlag);
  auto ev = ParseBinlogEvent(rotate, true);
  REQUIRE(ev.ok());
  CHECK(ev->header.type == kRotateEvent);
  CHECK(ev->header.flags == kBinlogArtificialFlag);
  CHECK(ev->file == "mysql-bin.000007");
  CHECK(ev->position == 4);

  std::string corrupt = rotate;
  corrupt[kBinlogHeaderBytes + 9] ^= 1;
  CHECK(ParseBinlogEvent(corrupt, true).status().message().find("checksum") != std::string::npos);
  // Read as if the stream had no checksums, the trailer is part of the file name.
  CHECK(ParseBinlogEvent(rotate, false)->file.size() == 16 + 4);
  CHECK(!ParseBinlogEvent(rotate.substr(0, rotate.size() - 1), true).ok());
  CHECK(!ParseBinlogEvent(rotate.substr(0, 10), true).ok());
  CHECK(!ParseBinlogEvent("", false).ok());
}

TEST_CASE("a heartbeat's position comes from its header, or after it when the header says 0") {
  auto ev = ParseBinlogEvent(Event(kHeartbeatEvent, "mysql-bin.000002", 1234), true);
  REQUIRE(ev.ok());
  CHECK(ev->position == 1234);
  CHECK(ev->file == "mysql-bin.000002");
  ev = ParseBinlogEvent(Event(kHeartbeatEvent, Le(uint64_t{5} << 32, 8) + "b.000001", 0), true);
  REQUIRE(ev.ok());
  CHECK(ev->position == uint64_t{5} << 32);
  CHECK(ev->file == "b.000001");
}

TEST_CASE("a format description names its checksum algorithm, trailer or not") {
  // binlog version 4, server version (50 bytes), created, header length 19, post-header lengths.
  std::string body = Le(4, 2) + std::string("10.11.19-MariaDB").append(34, '\0') + Le(0, 4) +
                     static_cast<char>(19) + std::string(40, '\x08');
  auto with_crc = ParseBinlogEvent(Event(kFormatDescriptionEvent, body + '\1', 0, true), false);
  REQUIRE(with_crc.ok());
  CHECK(with_crc->checksum_alg == 1);
  // Off: the 4 checksum bytes are still there, unchecked.
  auto off =
      ParseBinlogEvent(Event(kFormatDescriptionEvent, body + '\0' + Le(0, 4), 0, false), true);
  REQUIRE(off.ok());
  CHECK(off->checksum_alg == 0);
  CHECK(!ParseBinlogEvent(Event(kFormatDescriptionEvent, body + '\7', 0, true), false).ok());
}

TEST_CASE("MariaDB GTID: a transaction moves the position when it ends, from its GTID's arrival") {
  BinlogDecoder d(PositionsKind::kMariaDbGtid, Gtid("0-1-4"), true);
  auto step = d.Feed(Event(kMariaGtidEvent, MariaGtid(5, 0), 900, true, 0, 1), At(100));
  REQUIRE(step.ok());
  CHECK(step->alive);
  CHECK(!step->position);
  step = d.Feed(Event(kQueryEvent, Query("INSERT INTO t VALUES (1)"), 980), At(101));
  REQUIRE(step.ok());
  CHECK(!step->position);
  step = d.Feed(Event(kXidEvent, Xid(77), 1011), At(102));
  REQUIRE(step.ok());
  REQUIRE(step->position);
  CHECK(*step->position == Gtid("0-1-5"));
  CHECK(step->first_arrival == At(100));
  CHECK(step->origin == 1u);  // the server id in the GTID event's header
  CHECK(d.position() == Gtid("0-1-5"));
  // Written first on server 2 (a replica's binary log keeps the id of each event's origin).
  REQUIRE(d.Feed(Event(kMariaGtidEvent, MariaGtid(6, 0), 1050, true, 0, 2), At(103)).ok());
  step = d.Feed(Event(kXidEvent, Xid(78), 1100, true, 0, 2), At(104));
  REQUIRE(step.ok());
  REQUIRE(step->position);
  CHECK(step->origin == 2u);
  CHECK_FALSE(d.Feed(Event(kHeartbeatEvent, "mysql-bin.000001", 1100), At(105))->origin);
}

TEST_CASE("MariaDB GTID: a standalone group ends with its statement; BEGIN ... COMMIT ends at it") {
  BinlogDecoder d(PositionsKind::kMariaDbGtid, Gtid("0-1-4,1-2-9"), true);
  REQUIRE(d.Feed(Event(kMariaGtidEvent, MariaGtid(10, 1, 0x01), 0, true, 0, 2), At(5)).ok());
  auto step = d.Feed(Event(kQueryEvent, Query("CREATE TABLE t (a INT)"), 0), At(6));
  REQUIRE(step.ok());
  REQUIRE(step->position);
  CHECK(*step->position == Gtid("0-1-4,1-2-10"));

  REQUIRE(d.Feed(Event(kMariaGtidEvent, MariaGtid(5, 0), 0), At(7)).ok());
  auto begin = d.Feed(Event(kQueryEvent, Query("BEGIN"), 0), At(8));
  REQUIRE(begin.ok());
  CHECK(!begin->position);
  CHECK(!d.Feed(Event(kQueryEvent, Query("UPDATE m SET a = 1"), 0), At(9))->position);
  step = d.Feed(Event(kQueryEvent, Query("COMMIT"), 0), At(10));
  REQUIRE(step->position);
  CHECK(*step->position == Gtid("0-1-5,1-2-10"));
  CHECK(step->first_arrival == At(7));
}

TEST_CASE("MariaDB GTID: a sequence number that does not move forward breaks the stream") {
  BinlogDecoder d(PositionsKind::kMariaDbGtid, Gtid("0-1-4"), true);
  REQUIRE(d.Feed(Event(kMariaGtidEvent, MariaGtid(4, 0), 0), At(1)).ok());
  auto step = d.Feed(Event(kXidEvent, Xid(1), 0), At(2));
  CHECK(!step.ok());
  CHECK(step.status().code() == Status::Code::kDataError);
  // Broken: nothing more is read until the stream is restarted.
  CHECK(!d.Feed(Event(kHeartbeatEvent, "b.000001", 4), At(3)).ok());
  CHECK(d.position() == Gtid("0-1-4"));
}

TEST_CASE(
    "MariaDB GTID: a GTID list moves domains forward only, and a GTID inside a group is bad") {
  BinlogDecoder d(PositionsKind::kMariaDbGtid, Gtid("0-1-4"), true);
  // count 2: domain 0 at 3 (behind: kept at 4), domain 5 at 8 (new).
  std::string list = Le(2, 4) + Le(0, 4) + Le(1, 4) + Le(3, 8) + Le(5, 4) + Le(1, 4) + Le(8, 8);
  auto step = d.Feed(Event(kMariaGtidListEvent, list, 0), At(1));
  REQUIRE(step.ok());
  CHECK(d.position() == Gtid("0-1-4,5-1-8"));
  CHECK(!d.Feed(Event(kMariaGtidListEvent, Le(3, 4) + Le(0, 4), 0), At(2)).ok());

  BinlogDecoder e(PositionsKind::kMariaDbGtid, Gtid("0-1-4"), true);
  REQUIRE(e.Feed(Event(kMariaGtidEvent, MariaGtid(5, 0), 0), At(1)).ok());
  CHECK(!e.Feed(Event(kMariaGtidEvent, MariaGtid(6, 0), 0), At(2)).ok());
}

TEST_CASE("binary log coordinates: the end of each transaction, rotations, and start events") {
  BinlogDecoder d(PositionsKind::kBinlog, Coords("mysql-bin.000003", 400), true);
  // The dump's start: an artificial Rotate to where it was asked, the file's format
  // description (position 0 or an earlier one): neither moves the position.
  auto step = d.Feed(
      Event(kRotateEvent, Le(400, 8) + "mysql-bin.000003", 0, true, kBinlogArtificialFlag), At(1));
  REQUIRE(step.ok());
  CHECK(!step->position);
  REQUIRE(d.Feed(Event(kHeartbeatEvent, "mysql-bin.000003", 400), At(2))->heartbeat);
  REQUIRE(d.Feed(Event(kMariaGtidEvent, MariaGtid(9, 0), 470), At(3)).ok());
  CHECK(!d.Feed(Event(kQueryEvent, Query("INSERT INTO t VALUES (2)"), 560), At(4))->position);
  step = d.Feed(Event(kXidEvent, Xid(3), 591), At(5));
  REQUIRE(step->position);
  CHECK(*step->position == Coords("mysql-bin.000003", 591));
  CHECK(step->first_arrival == At(3));
  // The Rotate that ends the file, then the new file's head.
  step = d.Feed(Event(kRotateEvent, Le(4, 8) + "mysql-bin.000004", 0), At(6));
  REQUIRE(step->position);
  CHECK(*step->position == Coords("mysql-bin.000004", 4));
  step = d.Feed(Event(kMariaBinlogCheckpointEvent, Le(16, 4) + "mysql-bin.000004", 300), At(7));
  REQUIRE(step->position);
  CHECK(*step->position == Coords("mysql-bin.000004", 300));
  // A transaction that ends before the position: the bytes lie.
  REQUIRE(d.Feed(Event(kMariaGtidEvent, MariaGtid(10, 0), 250), At(8)).ok());
  CHECK(!d.Feed(Event(kXidEvent, Xid(4), 280), At(9)).ok());
}

TEST_CASE("MySQL GTID: each transaction's uuid:number joins the set; commit times kept") {
  BinlogDecoder d(PositionsKind::kMysqlGtid, Set("aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-5"), true);
  REQUIRE(d.Feed(Event(kMysqlGtidEvent,
                       MysqlGtid(Uuid(0xaa), 6, 1764806400123456, 1764806400100000), 0),
                 At(1))
              .ok());
  CHECK(!d.Feed(Event(kQueryEvent, Query("BEGIN"), 0), At(2))->position);
  auto step = d.Feed(Event(kXidEvent, Xid(1), 0), At(3));
  REQUIRE(step.ok());
  REQUIRE(step->position);
  CHECK(step->position->ToString() == std::string(kUuidA) + ":1-6");
  REQUIRE(step->mysql_gtid);
  CHECK(step->mysql_gtid->immediate_commit_us == 1764806400123456u);
  CHECK(step->mysql_gtid->original_commit_us == 1764806400100000u);
  CHECK(step->origin == 1u);
  // A DDL: the GTID then its statement, no BEGIN and no XID.
  REQUIRE(d.Feed(Event(kMysqlGtidEvent, MysqlGtid(Uuid(0xbb), 1, 5, 5), 0), At(4)).ok());
  step = d.Feed(Event(kQueryEvent, Query("CREATE TABLE u (a INT)"), 0), At(5));
  REQUIRE(step->position);
  CHECK(step->position->ToString() ==
        std::string(kUuidA) + ":1-6,\nbbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb:1");
  CHECK(step->mysql_gtid->original_commit_us == 5u);
  // A transaction already in the set, and an anonymous one, have no place.
  BinlogDecoder again(PositionsKind::kMysqlGtid, Set(kUuidA + std::string(":1-5")), true);
  REQUIRE(again.Feed(Event(kMysqlGtidEvent, MysqlGtid(Uuid(0xaa), 3), 0), At(1)).ok());
  CHECK(!again.Feed(Event(kXidEvent, Xid(1), 0), At(2)).ok());
  BinlogDecoder anon(PositionsKind::kMysqlGtid, Set(""), true);
  REQUIRE(anon.Feed(Event(kMysqlAnonymousGtidEvent, MysqlGtid(Uuid(0), 0), 0), At(1)).ok());
  CHECK(!anon.Feed(Event(kXidEvent, Xid(1), 0), At(2)).ok());
}

TEST_CASE("MySQL GTID events: a number out of range or a clock that is not one is bad input") {
  CHECK(!ParseBinlogEvent(Event(kMysqlGtidEvent, MysqlGtid(Uuid(1), 0), 0), true).ok());
  std::string body = MysqlGtid(Uuid(1), 2);
  body[25] = 7;  // the logical clock's type code
  CHECK(!ParseBinlogEvent(Event(kMysqlGtidEvent, body, 0), true).ok());
  // Just the uuid and number (a server before MySQL 5.7's logical clock): read.
  auto old = ParseBinlogEvent(
      Event(kMysqlGtidEvent, std::string(1, '\1') + std::string(16, 'x') + Le(9, 8), 0), true);
  REQUIRE(old.ok());
  CHECK(old->mysql_gtid->gno == 9);
  CHECK(!old->mysql_gtid->immediate_commit_us);
}

TEST_CASE("GtidSet's binary encoding: MySQL's layout, both ways, tags refused") {
  GtidSet set = GtidSet::Parse(std::string(kUuidA) + ":1-5:7").value();
  auto bytes = set.EncodeBinary();
  REQUIRE(bytes.ok());
  // 1 uuid; the uuid; 2 intervals; [1, 6) and [7, 8).
  CHECK(*bytes ==
        Le(1, 8) + std::string(16, '\xaa') + Le(2, 8) + Le(1, 8) + Le(6, 8) + Le(7, 8) + Le(8, 8));
  auto back = GtidSet::DecodeBinary(*bytes);
  REQUIRE(back.ok());
  CHECK(*back == set);
  CHECK(GtidSet::DecodeBinary(Le(0, 8))->empty());
  CHECK(!GtidSet::DecodeBinary(bytes->substr(0, bytes->size() - 1)).ok());
  CHECK(!GtidSet::DecodeBinary(Le(uint64_t{1} << 56, 8)).ok());
  CHECK(!GtidSet::DecodeBinary(Le(1, 8) + std::string(16, 'a') + Le(1, 8) + Le(5, 8) + Le(5, 8))
             .ok());
  CHECK(!GtidSet::Parse(std::string(kUuidA) + ":tag:1").value().EncodeBinary().ok());
}

TEST_CASE("GtidSet::Add merges touching and overlapping intervals and keeps uuids in order") {
  GtidSet set;
  REQUIRE(set.Add(Uuid(0xbb), 3, 3).ok());
  REQUIRE(set.Add(Uuid(0xaa), 1, 1).ok());
  REQUIRE(set.Add(Uuid(0xbb), 1, 1).ok());
  REQUIRE(set.Add(Uuid(0xbb), 2, 2).ok());
  REQUIRE(set.Add(Uuid(0xaa), 5, 9).ok());
  REQUIRE(set.Add(Uuid(0xaa), 3, 6).ok());
  CHECK(set.ToString() ==
        std::string(kUuidA) + ":1:3-9,\nbbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb:1-3");
  CHECK(set == GtidSet::Parse(set.ToString()).value());
  CHECK(!set.Add(Uuid(0xaa), 0, 1).ok());
  CHECK(!set.Add(Uuid(0xaa), 5, 4).ok());
  CHECK(!set.Add(Uuid(0xaa), 1, GtidSet::kMaxGno + 1).ok());
}

}  // namespace
}  // namespace lagwatch
