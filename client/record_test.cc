#include "client/record.h"

#include <doctest/doctest.h>

#include <string>

namespace lagwatch::client {
namespace {

constexpr char kUuid[] = "3e11fa47-71ca-11e1-9e33-c80aa9429562";

// A healthy tier1 record as the agent writes it.
FieldMap Healthy() {
  return {{"delay_ms", "12"},
          {"delay_lower_ms", "3"},
          {"state", "ok"},
          {"healthy", "1"},
          {"tier", "tier1"},
          {"weight", "100"},
          {"max_delay_ms", "200"},
          {"seq", "4711"},
          {"measured_at_ms", "1796004314440"},
          {"agent", "1"},
          {"agent:1", "{\"e\":\"...\"}"},
          {"position", "0-1-120,1-2-7"},
          {"position_kind", "mariadb_gtid"}};
}

FieldMap With(FieldMap f, const std::string& field, const std::string& value) {
  f[field] = value;
  return f;
}

FieldMap Without(FieldMap f, const std::string& field) {
  f.erase(field);
  return f;
}

TEST_CASE("a record as the agent writes it parses, bookkeeping fields ignored") {
  auto r = ParseReplicaRecord("10.0.0.12:3306", Healthy());
  REQUIRE(r.ok());
  CHECK(r->id == "10.0.0.12:3306");
  CHECK(r->delay_ms == 12);
  CHECK(r->delay_lower_ms == 3);
  CHECK(r->state == ReplicaState::kOk);
  CHECK(r->healthy);
  CHECK(r->tier == "tier1");
  CHECK(r->weight == 100);
  CHECK(r->max_delay_ms == 200);
  CHECK(r->seq == 4711);
  CHECK(r->measured_at_ms == 1796004314440);
  CHECK(r->agent == "1");
  REQUIRE(r->position);
  CHECK(r->position->kind() == PositionsKind::kMariaDbGtid);
  CHECK(r->position->ToString() == "0-1-120,1-2-7");
  CHECK(r->usable());
}

TEST_CASE("positions of each kind parse; none, empty or absent mean no position") {
  auto mysql =
      ParseReplicaRecord("db:3306", With(With(Healthy(), "position", std::string(kUuid) + ":1-57"),
                                         "position_kind", "mysql_gtid"));
  REQUIRE(mysql.ok());
  CHECK(mysql->position->kind() == PositionsKind::kMysqlGtid);

  auto binlog = ParseReplicaRecord(
      "db:3306",
      With(With(Healthy(), "position", "mysql-bin.000012:4567"), "position_kind", "binlog"));
  REQUIRE(binlog.ok());
  CHECK(binlog->position->ToString() == "mysql-bin.000012:4567");

  auto none =
      ParseReplicaRecord("db:3306", With(With(Healthy(), "position", ""), "position_kind", "none"));
  REQUIRE(none.ok());
  CHECK_FALSE(none->position);

  auto unknown = ParseReplicaRecord("db:3306", With(Healthy(), "position", ""));
  REQUIRE(unknown.ok());
  CHECK_FALSE(unknown->position);

  // An agent from before the fields: usable on its lag alone.
  auto old =
      ParseReplicaRecord("db:3306", Without(Without(Healthy(), "position"), "position_kind"));
  REQUIRE(old.ok());
  CHECK_FALSE(old->position);
  CHECK(old->usable());
}

TEST_CASE("no limit is -1; unhealthy records parse and are not usable") {
  auto tier3 = ParseReplicaRecord(
      "db:3306", With(With(Healthy(), "max_delay_ms", "-1"), "delay_ms", "3600000"));
  REQUIRE(tier3.ok());
  CHECK_FALSE(tier3->max_delay_ms);
  CHECK(tier3->usable());

  auto stopped =
      ParseReplicaRecord("db:3306", With(With(Healthy(), "healthy", "0"), "state", "stopped"));
  REQUIRE(stopped.ok());
  CHECK_FALSE(stopped->usable());

  auto primary_unknown = ParseReplicaRecord(
      "db:3306", With(With(Healthy(), "state", "primary_unknown"), "delay_ms", "0"));
  REQUIRE(primary_unknown.ok());
  CHECK(primary_unknown->usable());
}

TEST_CASE("malformed fields refuse the record and name the field") {
  struct Case {
    const char* field;
    const char* value;  // nullptr: field removed
  };
  const Case cases[] = {
      {"delay_ms", "12a"},
      {"delay_ms", ""},
      {"delay_ms", " 12"},
      {"delay_ms", "1e3"},
      {"delay_ms", "-5"},
      {"delay_ms", nullptr},
      {"delay_ms", "99999999999999999999999"},
      {"healthy", "2"},
      {"healthy", "01"},
      {"healthy", "yes"},
      {"healthy", nullptr},
      {"weight", "1001"},
      {"weight", "-1"},
      {"weight", "0.5"},
      {"max_delay_ms", "-2"},
      {"state", "OK"},
      {"state", "ok "},
      {"state", nullptr},
      {"tier", ""},
      {"tier", "tier 1"},
      {"tier", nullptr},
      {"seq", "x"},
      {"measured_at_ms", "-1"},
      {"position_kind", "gtid"},
      {"position", "0-1"},
      {"position", "garbage"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.field);
    CAPTURE(c.value);
    FieldMap f = c.value ? With(Healthy(), c.field, c.value) : Without(Healthy(), c.field);
    auto r = ParseReplicaRecord("db:3306", f);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kDataError);
    CHECK(r.status().message().find(c.field) != std::string::npos);
  }
}

TEST_CASE("records that contradict the contract are refused") {
  // healthy=1 over the limit: the two must agree.
  CHECK_FALSE(ParseReplicaRecord("db:3306", With(Healthy(), "delay_ms", "201")).ok());
  // healthy=1 is only ever published with ok or primary_unknown.
  CHECK_FALSE(ParseReplicaRecord("db:3306", With(Healthy(), "state", "stopped")).ok());
  CHECK_FALSE(ParseReplicaRecord("db:3306", With(Healthy(), "state", "unverified")).ok());
  // A position under kind none.
  CHECK_FALSE(ParseReplicaRecord("db:3306", With(Healthy(), "position_kind", "none")).ok());
  // A position of another kind's syntax.
  CHECK_FALSE(ParseReplicaRecord("db:3306", With(Healthy(), "position", "bin.000001:4")).ok());
}

TEST_CASE("hostile values are refused without harm, quoted escaped and cut") {
  const std::string control = std::string("ok\n\x1b[31m\0", 9);
  auto r = ParseReplicaRecord("db:3306", With(Healthy(), "state", control));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find('\n') == std::string::npos);
  CHECK(r.status().message().find('\x1b') == std::string::npos);

  const std::string huge(1 << 20, '9');
  auto big = ParseReplicaRecord("db:3306", With(Healthy(), "delay_ms", huge));
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().message().size() < 300);

  auto huge_position = ParseReplicaRecord(
      "db:3306",
      With(With(Healthy(), "position", std::string(2 << 20, '1')), "position_kind", "mysql_gtid"));
  CHECK_FALSE(huge_position.ok());

  CHECK_FALSE(ParseReplicaRecord("db:3306", FieldMap{}).ok());
  CHECK_FALSE(ParseReplicaRecord("not an id", Healthy()).ok());
}

TEST_CASE("replica ids are host:port as lagwatch spells them") {
  CHECK(IsReplicaId("10.0.0.12:3306"));
  CHECK(IsReplicaId("db-1.example.com:3307"));
  CHECK(IsReplicaId("::1:3306"));
  CHECK_FALSE(IsReplicaId("db:03306"));
  CHECK_FALSE(IsReplicaId("db:0"));
  CHECK_FALSE(IsReplicaId("db:65536"));
  CHECK_FALSE(IsReplicaId("db"));
  CHECK_FALSE(IsReplicaId(":3306"));
  CHECK_FALSE(IsReplicaId("db 1:3306"));
  CHECK_FALSE(IsReplicaId("db:3306\n"));
}

TEST_CASE("the primary's circuit is the worse of the pointer's and the key's state") {
  const FieldMap pointer = {{"primary", "10.0.0.13:3306"}, {"state", "up"}, {"topology", "ok"}};
  auto up = ParsePrimary(pointer, nullptr);
  REQUIRE(up.ok());
  CHECK(up->id == "10.0.0.13:3306");
  CHECK(up->circuit == PrimaryCircuit::kUp);
  CHECK_FALSE(up->key_valid);

  const FieldMap key = {{"state", "down"},
                        {"read_only", "0"},
                        {"last_write_ms", "1796004314440"},
                        {"consecutive_failures", "3"},
                        {"topology", "ok"}};
  auto down = ParsePrimary(pointer, &key);
  REQUIRE(down.ok());
  CHECK(down->circuit == PrimaryCircuit::kDown);
  CHECK(down->key_valid);
  CHECK(down->consecutive_failures == 3);

  // A malformed key is ignored; the pointer stands.
  const FieldMap bad_key = {{"state", "sideways"}};
  auto ignored = ParsePrimary(pointer, &bad_key);
  REQUIRE(ignored.ok());
  CHECK(ignored->circuit == PrimaryCircuit::kUp);
  CHECK_FALSE(ignored->key_valid);

  CHECK_FALSE(ParsePrimary({{"primary", "x"}, {"state", "up"}, {"topology", "ok"}}, nullptr).ok());
  CHECK_FALSE(
      ParsePrimary({{"primary", "db:3306"}, {"state", "meh"}, {"topology", "ok"}}, nullptr).ok());
  CHECK_FALSE(ParsePrimary({{"primary", "db:3306"}, {"state", "up"}}, nullptr).ok());
}

}  // namespace
}  // namespace lagwatch::client
