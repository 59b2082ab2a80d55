// The shared golden cases of client/cases/ (client/cases/README.md), which the PHP router's
// tests/Unit/CasesTest.php runs too: every case of every file the runners know, each in its own
// SUBCASE named by the case. A case with a field this runner does not know fails; none is skipped.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>

#include "base/contract.h"
#include "base/server_flavor.h"
#include "client/contract_reader.h"
#include "client/read_your_writes.h"
#include "client/record.h"
#include "client/route.h"
#include "client/sql_classify.h"

namespace lagwatch::client {
namespace {

using nlohmann::json;

json Load(const std::string& file) {
  std::ifstream in(std::string(LAGWATCH_CASES_DIR) + "/" + file, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), file);
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str());
  REQUIRE(doc.at("format") == 1);
  std::set<std::string> names;
  for (const json& c : doc.at("cases")) {
    REQUIRE_MESSAGE(names.insert(c.at("name").get<std::string>()).second, c.at("name"));
  }
  return doc;
}

// Fails unless every field of `c` is in `known` (or is "name" or "note").
void OnlyKnownFields(const json& c, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : c.items()) {
    const bool ok =
        key == "name" || key == "note" ||
        std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
    CHECK_MESSAGE(ok, "a field this runner does not know: " << key);
  }
}

// A text of a case: a string, or {"concat": [texts]}, {"repeat": text, "times": n},
// {"hex": "fffe"}.
std::string Text(const json& t) {
  if (t.is_string()) return t.get<std::string>();
  REQUIRE_MESSAGE(t.is_object(), "a text is a string or an object");
  if (t.size() == 1 && t.contains("concat")) {
    std::string out;
    for (const json& part : t["concat"]) out += Text(part);
    return out;
  }
  if (t.size() == 2 && t.contains("repeat") && t.contains("times")) {
    std::string one = Text(t["repeat"]), out;
    for (int64_t i = 0; i < t["times"].get<int64_t>(); ++i) out += one;
    return out;
  }
  if (t.size() == 1 && t.contains("hex")) {
    const std::string hex = t["hex"].get<std::string>();
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    }
    return out;
  }
  FAIL("a text object this runner does not know: " << t.dump());
  return "";
}

PositionsKind Kind(const json& name) {
  auto kind = ParsePositionsKind(name.get<std::string>());
  REQUIRE_MESSAGE(kind.has_value(), name);
  return *kind;
}

const char* FlavorKind(ServerFlavor::Kind k) {
  switch (k) {
    case ServerFlavor::kMySQL:
      return "mysql";
    case ServerFlavor::kMariaDB:
      return "mariadb";
    case ServerFlavor::kPercona:
      return "percona";
    case ServerFlavor::kUnknown:
      break;
  }
  return "unknown";
}

json OrNull(const char* s) { return s ? json(s) : json(nullptr); }

void TokenStatementCase(const json& c) {
  if (c.contains("answer")) {
    OnlyKnownFields(c, {"answer", "reached"});
    const json& v = c["answer"]["value"];
    // Connector/C gives every column as text: a number answers as its digits, NULL as "".
    const std::string text = v.is_null() ? "" : v.is_number_integer() ? v.dump() : Text(v);
    CHECK(CatchUpReached(Kind(c["answer"]["kind"]), text) == c["reached"].get<bool>());
    return;
  }
  OnlyKnownFields(c, {"server", "flavor", "statements"});
  const ServerFlavor f =
      ParseServerFlavor(Text(c["server"]["version"]), Text(c["server"]["comment"]));
  const json& want = c["flavor"];
  CHECK(FlavorKind(f.kind) == want["kind"].get<std::string>());
  CHECK(f.major == want["major"].get<int>());
  CHECK(f.minor == want["minor"].get<int>());
  CHECK(f.patch == want["patch"].get<int>());
  for (const auto& [kind, statement] : c["statements"].items()) {
    CAPTURE(kind);
    CHECK(OrNull(TokenStatement(Kind(json(kind)), f)) == statement);
  }
}

void SqlCase(const json& c) {
  OnlyKnownFields(c, {"sql", "read", "locking"});
  const SqlClass s = ClassifySql(Text(c["sql"]));
  CHECK(s.read == c["read"].get<bool>());
  CHECK(s.locking == c["locking"].get<bool>());
}

void PositionCase(const json& c) {
  if (c.contains("have")) {
    OnlyKnownFields(c, {"have", "want", "includes"});
    auto have = ParsePosition(Kind(c["have"]["kind"]), Text(c["have"]["text"]));
    auto want = ParsePosition(Kind(c["want"]["kind"]), Text(c["want"]["text"]));
    REQUIRE(have.ok());
    REQUIRE(want.ok());
    CHECK(have->Includes(*want) == c["includes"].get<bool>());
    return;
  }
  OnlyKnownFields(c, {"parse", "expect"});
  const json& expect = c["expect"];
  for (const auto& [key, value] : expect.items()) {
    CHECK_MESSAGE((key == "ok" || key == "text" || key == "catch_up"), "expect field " << key);
  }
  auto p = ParsePosition(Kind(c["parse"]["kind"]), Text(c["parse"]["text"]));
  REQUIRE_MESSAGE(p.ok() == expect["ok"].get<bool>(),
                  (p.ok() ? "accepted as " + p->ToString() : p.status().ToString()));
  if (!p.ok()) return;
  if (expect.contains("text")) CHECK(p->ToString() == expect["text"].get<std::string>());
  if (expect.contains("catch_up")) {
    auto q = CatchUpQuery(*p);
    CHECK((q.ok() ? json(*q) : json(nullptr)) == expect["catch_up"]);
  }
}

// A hash as HGETALL returns it, from a case's fields: a string (or a text object) is a bulk
// string; any other JSON value stands for a reply element that is not one (an integer, nil, an
// array: what a hostile writer could leave), built as hiredis would. HashFromReply reads it.
class HashReply {
 public:
  explicit HashReply(const json& fields) {
    for (const auto& [key, value] : fields.items()) {
      Add(String(key));
      if (value.is_string() || value.is_object()) {
        Add(String(Text(value)));
      } else if (value.is_null()) {
        Add(Element(REDIS_REPLY_NIL));
      } else if (value.is_array()) {
        Add(Element(REDIS_REPLY_ARRAY));  // its elements do not matter: it is not a string
      } else {
        Add(Element(REDIS_REPLY_INTEGER));  // integers; RESP3's booleans and doubles alike
      }
    }
    array_.type = REDIS_REPLY_ARRAY;
    array_.elements = pointers_.size();
    array_.element = pointers_.data();
  }
  const redisReply* get() const { return &array_; }

 private:
  redisReply* Element(int type) {
    nodes_.push_back(std::make_unique<redisReply>());
    nodes_.back()->type = type;
    return nodes_.back().get();
  }
  redisReply* String(std::string text) {
    texts_.push_back(std::make_unique<std::string>(std::move(text)));
    redisReply* r = Element(REDIS_REPLY_STRING);
    r->str = texts_.back()->data();
    r->len = texts_.back()->size();
    return r;
  }
  void Add(redisReply* r) { pointers_.push_back(r); }

  std::vector<std::unique_ptr<redisReply>> nodes_;
  std::vector<std::unique_ptr<std::string>> texts_;
  std::vector<redisReply*> pointers_;
  redisReply array_{};
};

// The field a refusal names: the text before the first ':' of its message.
void CheckNamesField(const Status& st, const json& expect) {
  if (expect.contains("field")) {
    const std::string want = expect["field"].get<std::string>() + ":";
    CHECK_MESSAGE(st.message().rfind(want, 0) == 0, st.message());
  }
}

void ReplicaRecordCase(const json& c, const json& defaults) {
  OnlyKnownFields(c, {"replica", "expect"});
  const json& in = c["replica"];
  for (const auto& [key, value] : in.items()) {
    CHECK_MESSAGE((key == "id" || key == "fields" || key == "remove" || key == "exact"),
                  "replica field " << key);
  }
  json fields = in.value("exact", false) ? json::object() : defaults["fields"];
  const json overlay = in.value("fields", json::object());
  for (const auto& [key, value] : overlay.items()) fields[key] = value;
  for (const json& key : in.value("remove", json::array())) fields.erase(key.get<std::string>());
  const std::string id = in.contains("id") ? Text(in["id"]) : Text(defaults["id"]);
  const json& expect = c["expect"];
  HashReply reply(fields);
  std::optional<FieldMap> hash = HashFromReply(reply.get());
  if (!hash) {
    CHECK_FALSE(expect["ok"].get<bool>());
    CHECK_FALSE(expect.contains("field"));  // refused as a reply, before any field is read
    return;
  }
  auto r = ParseReplicaRecord(id, *hash);
  REQUIRE_MESSAGE(r.ok() == expect["ok"].get<bool>(),
                  (r.ok() ? "accepted" : r.status().ToString()));
  if (!r.ok()) return CheckNamesField(r.status(), expect);
  const json record = expect.value("record", json::object());
  for (const auto& [key, want] : record.items()) {
    CAPTURE(key);
    if (key == "delay_ms")
      CHECK(r->delay_ms == want.get<int64_t>());
    else if (key == "delay_lower_ms")
      CHECK(r->delay_lower_ms == want.get<int64_t>());
    else if (key == "state")
      CHECK(contract::kReplicaStates[static_cast<size_t>(r->state)] == want.get<std::string>());
    else if (key == "healthy")
      CHECK(r->healthy == want.get<bool>());
    else if (key == "tier")
      CHECK(r->tier == want.get<std::string>());
    else if (key == "weight")
      CHECK(r->weight == want.get<int>());
    else if (key == "max_delay_ms")
      CHECK((r->max_delay_ms ? json(*r->max_delay_ms) : json(nullptr)) == want);
    else if (key == "seq")
      CHECK(r->seq == want.get<int64_t>());
    else if (key == "measured_at_ms")
      CHECK(r->measured_at_ms == want.get<int64_t>());
    else if (key == "agent")
      CHECK(r->agent == want.get<std::string>());
    else if (key == "usable")
      CHECK(r->usable() == want.get<bool>());
    else if (key == "position") {
      json got = r->position ? json{{"kind", PositionsKindName(r->position->kind())},
                                    {"text", r->position->ToString()}}
                             : json(nullptr);
      CHECK(got == want);
    } else {
      FAIL("a record field this runner does not know: " << key);
    }
  }
}

void PrimaryCase(const json& c) {
  OnlyKnownFields(c, {"primary", "expect"});
  const json& in = c["primary"];
  for (const auto& [key, value] : in.items()) {
    CHECK_MESSAGE((key == "pointer" || key == "key"), "primary field " << key);
  }
  const json& expect = c["expect"];
  HashReply pointer_reply(in["pointer"]);
  std::optional<FieldMap> pointer = HashFromReply(pointer_reply.get());
  std::optional<HashReply> key_reply;
  std::optional<FieldMap> key;
  if (in.contains("key")) {
    key_reply.emplace(in["key"]);
    key = HashFromReply(key_reply->get());
  }
  if (!pointer) {
    CHECK_FALSE(expect["ok"].get<bool>());
    return;
  }
  auto p = ParsePrimary(*pointer, key ? &*key : nullptr);
  REQUIRE_MESSAGE(p.ok() == expect["ok"].get<bool>(),
                  (p.ok() ? "accepted" : p.status().ToString()));
  if (!p.ok()) return CheckNamesField(p.status(), expect);
  const json primary = expect.value("primary", json::object());
  for (const auto& [name, want] : primary.items()) {
    CAPTURE(name);
    if (name == "id")
      CHECK(p->id == want.get<std::string>());
    else if (name == "circuit")
      CHECK(PrimaryCircuitName(p->circuit) == want.get<std::string>());
    else if (name == "topology")
      CHECK(p->topology == want.get<std::string>());
    else if (name == "key_valid")
      CHECK(p->key_valid == want.get<bool>());
    else if (name == "read_only")
      CHECK(p->read_only == want.get<bool>());
    else if (name == "last_write_ms")
      CHECK(p->last_write_ms == want.get<int64_t>());
    else if (name == "consecutive_failures")
      CHECK(p->consecutive_failures == want.get<int64_t>());
    else
      FAIL("a primary field this runner does not know: " << name);
  }
}

// `over`'s fields laid over `base`'s.
json Overlay(json base, const json& over) {
  for (const auto& [key, value] : over.items()) base[key] = value;
  return base;
}

MonoTime At(int64_t ms) { return MonoTime(Millis(ms)); }

// The contract of a routing case, built as ContractReader builds it from what Redis answered:
// every member's hash parsed (a refused one left out, as a missing key is), measured_after the
// fetch minus the keys' TTL; the pointer (null or empty: no key) and, when it names a primary,
// that primary's key, parsed together (a refused pointer: the primary unknown).
Contract RoutingContract(const json& c, const json& defaults, int64_t fetched_ms, int64_t ttl_ms) {
  Contract contract;
  contract.fetched_at = At(fetched_ms);
  std::vector<std::string> ids;
  for (const json& r : c.at("replicas")) ids.push_back(Text(r.at("id")));
  if (c.contains("members")) {
    for (const json& m : c["members"]) contract.members.push_back(Text(m));
  } else {
    contract.members = ids;
  }
  for (const std::string& m : contract.members) CHECK_MESSAGE(IsReplicaId(m), m);
  for (const json& r : c["replicas"]) {
    for (const auto& [key, value] : r.items()) {
      CHECK_MESSAGE((key == "id" || key == "fields"), "replica field " << key);
    }
    const std::string id = Text(r["id"]);
    // The reader reads the keys of members only.
    CHECK_MESSAGE(std::count(contract.members.begin(), contract.members.end(), id) == 1, id);
    CHECK_MESSAGE(std::count(ids.begin(), ids.end(), id) == 1, "two records of " << id);
    HashReply reply(Overlay(defaults["replica_fields"], r.value("fields", json::object())));
    std::optional<FieldMap> hash = HashFromReply(reply.get());
    if (!hash) continue;
    auto record = ParseReplicaRecord(id, *hash);
    if (!record.ok()) continue;
    record->measured_after = contract.fetched_at - Millis(ttl_ms);
    contract.replicas.push_back(std::move(record).value());
  }
  const json pointer = c.contains("pointer") ? c["pointer"] : defaults["pointer"];
  if (pointer.is_null()) return contract;
  HashReply pointer_reply(pointer);
  std::optional<FieldMap> fields = HashFromReply(pointer_reply.get());
  if (!fields || fields->empty()) return contract;
  std::optional<HashReply> key_reply;
  std::optional<FieldMap> key;
  if (c.contains("primary_key") && fields->count("primary") && IsReplicaId(fields->at("primary"))) {
    key_reply.emplace(c["primary_key"]);
    key = HashFromReply(key_reply->get());
  }
  auto primary = ParsePrimary(*fields, key && !key->empty() ? &*key : nullptr);
  if (primary.ok()) contract.primary = std::move(primary).value();
  return contract;
}

void RoutingCase(const json& c, const json& defaults) {
  OnlyKnownFields(c, {"replicas", "members", "pointer", "primary_key", "redis", "now_ms",
                      "fetched_at_ms", "options", "random", "session", "statement", "expect"});
  const json options = Overlay(defaults["options"], c.value("options", json::object()));
  for (const auto& [key, value] : options.items()) {
    CHECK_MESSAGE((key == "ttl_ms" || key == "bounded" || key == "clock_skew_ms"),
                  "option " << key);
  }
  const int64_t ttl_ms = options["ttl_ms"].get<int64_t>();
  const int64_t now_ms = c.value("now_ms", defaults["now_ms"].get<int64_t>());
  const int64_t fetched_ms = c.value("fetched_at_ms", now_ms);

  Contract contract;  // Redis unreadable: ContractReader serves the empty contract
  if (c.contains("redis")) {
    CHECK(c["redis"] == "unreadable");
    for (const char* k : {"replicas", "members", "pointer", "primary_key"})
      CHECK_FALSE(c.contains(k));
  } else {
    contract = RoutingContract(c, defaults, fetched_ms, ttl_ms);
  }

  Session session;
  const json s = c.value("session", json::object());
  CHECK(s.size() <= 1);  // a token, or the time of a write that has none
  for (const auto& [key, value] : s.items()) {
    if (key == "token") {
      OnlyKnownFields(value, {"kind", "text"});
      auto token = ParsePosition(Kind(value["kind"]), Text(value["text"]));
      REQUIRE_MESSAGE(token.ok(), token.status().ToString());
      session.token = *token;
    } else if (key == "write_ms") {
      session.untokened_write_at = At(value.get<int64_t>());
    } else {
      FAIL("a session field this runner does not know: " << key);
    }
  }

  const json& st = c.at("statement");
  OnlyKnownFields(st, {"sql", "read", "locking", "in_transaction", "forced"});
  Statement statement{.in_transaction = st.value("in_transaction", false),
                      .force_primary = st.value("forced", false)};
  if (st.contains("sql")) {
    CHECK_FALSE((st.contains("read") || st.contains("locking")));
    const SqlClass k = ClassifySql(Text(st["sql"]));
    statement.read = k.read;
    statement.locking = k.locking;
  } else {
    statement.read = st.at("read").get<bool>();
    statement.locking = st.value("locking", false);
  }

  // Scripted: the i-th call answers the case's i-th "random" value (0 past the list).
  const std::vector<uint64_t> script = c.value("random", std::vector<uint64_t>{});
  std::vector<uint64_t> totals;
  const RandomBelow random = [&](uint64_t n) {
    const uint64_t v = totals.size() < script.size() ? script[totals.size()] : 0;
    totals.push_back(n);
    CHECK_MESSAGE(v < n, "random value " << v << " for n = " << n);
    return v < n ? v : 0;
  };
  std::optional<Freshness> freshness;
  if (options["bounded"].get<bool>()) {
    freshness =
        Freshness{.now_unix_ms = now_ms, .clock_skew_ms = options["clock_skew_ms"].get<int64_t>()};
  }
  const Decision d = Route(statement, session, contract, random, freshness);
  CHECK_MESSAGE(totals.size() >= script.size(), "random values the route did not ask for");

  const json& expect = c.at("expect");
  REQUIRE((expect.contains("target") && expect.contains("reason")));
  for (const auto& [key, want] : expect.items()) {
    CAPTURE(key);
    if (key == "target") {
      CHECK(TargetName(d.target) == want.get<std::string>());
    } else if (key == "reason") {
      CHECK(ReasonName(d.reason) == want.get<std::string>());
    } else if (key == "replica") {
      CHECK(d.replica == want.get<std::string>());
    } else if (key == "tier") {
      CHECK(d.tier == want.get<std::string>());
    } else if (key == "primary") {
      CHECK(d.primary == want.get<std::string>());
    } else if (key == "fallback") {
      CHECK_MESSAGE(expect["target"] == "ask_replica", "fallback is an ask's (README)");
      CHECK(TargetName(d.fallback) == want.get<std::string>());
    } else if (key == "fresh_until_ms") {
      CHECK((d.fresh_until_ms ? json(*d.fresh_until_ms) : json(nullptr)) == want);
    } else if (key == "degraded") {
      CHECK(d.degraded == want.get<bool>());
    } else if (key == "random_totals") {
      CHECK(json(totals) == want);
    } else if (key == "settled") {
      Session after = session;
      after.Settle(contract);
      CHECK((!after.token && !after.untokened_write_at) == want.get<bool>());
    } else {
      FAIL("an expect field this runner does not know: " << key);
    }
  }
}

// Runs `run` on every case of `file`, each in a SUBCASE named by the case.
template <typename Run>
void RunCases(const std::string& file, Run run) {
  const json doc = Load(file);
  for (const json& c : doc["cases"]) {
    const std::string name = c["name"].get<std::string>();
    SUBCASE(name.c_str()) { run(c); }
  }
}

// Every file of client/cases/ is run here (and by the PHP runner, which checks the same).
TEST_CASE("cases: every file of client/cases is run") {
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(LAGWATCH_CASES_DIR)) {
    if (e.path().extension() == ".json") files.insert(e.path().filename().string());
  }
  CHECK(files == std::set<std::string>{"positions.json", "records.json", "routing.json", "sql.json",
                                       "token_statements.json"});
}

TEST_CASE("cases: token_statements.json") { RunCases("token_statements.json", TokenStatementCase); }
TEST_CASE("cases: sql.json") { RunCases("sql.json", SqlCase); }
TEST_CASE("cases: positions.json") { RunCases("positions.json", PositionCase); }
TEST_CASE("cases: records.json") {
  const json defaults = Load("records.json")["defaults"];
  RunCases("records.json", [&](const json& c) {
    if (c.contains("primary")) return PrimaryCase(c);
    ReplicaRecordCase(c, defaults);
  });
}
TEST_CASE("cases: routing.json") {
  const json defaults = Load("routing.json")["defaults"];
  RunCases("routing.json", [&](const json& c) { RoutingCase(c, defaults); });
}

}  // namespace
}  // namespace lagwatch::client
