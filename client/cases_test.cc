// The shared golden cases of client/cases/ (client/cases/README.md), which the PHP router's
// tests/Unit/CasesTest.php runs too: every case of every file the runners know, each in its own
// SUBCASE named by the case. A case with a field this runner does not know fails; none is skipped.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/server_flavor.h"
#include "client/read_your_writes.h"
#include "client/record.h"
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
  CHECK(files == std::set<std::string>{"positions.json", "sql.json", "token_statements.json"});
}

TEST_CASE("cases: token_statements.json") { RunCases("token_statements.json", TokenStatementCase); }
TEST_CASE("cases: sql.json") { RunCases("sql.json", SqlCase); }
TEST_CASE("cases: positions.json") { RunCases("positions.json", PositionCase); }

}  // namespace
}  // namespace lagwatch::client
