// Fuzzes what lagwatch reads from HAProxy and from its checks: the runtime API's replies
// (ParseServersState, ParseShowInfo: exporters/haproxy_runtime.h), the agent-check request
// (ParseAgentSend: exporters/haproxy_agent_check.h) and the HTTP check request (ParseHttpCheck:
// exporters/haproxy_http_check.h).
//
// Input: the whole text is a reply to `show servers state reads` and to `show info`; its first
// three lines are an agent-send line, and an HTTP check's path, query and X-Haproxy-Server-State
// header.
// Properties: a servers state that parses has only names HAProxy accepts, in range, none twice,
// and every command built from it is one `set server` or `shutdown sessions` of backend reads,
// with nothing that could end or chain a command; a show info that parses has a Pid; a check
// target that parses names a server by a name HAProxy accepts, and the agent-send line written
// back from it parses to the same target.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "exporters/haproxy_agent_check.h"
#include "exporters/haproxy_http_check.h"
#include "exporters/haproxy_runtime.h"
#include "fuzz/check.h"

namespace lagwatch {
namespace {

void CheckCommand(const std::string& c, const std::string& name) {
  FUZZ_CHECK(c.find_first_of(";\n\r") == std::string::npos, c);
  FUZZ_CHECK(c == "set server reads/" + name + " state ready" ||
                 c == "set server reads/" + name + " state drain" ||
                 c == "set server reads/" + name + " state maint" ||
                 c == "shutdown sessions server reads/" + name ||
                 c.starts_with("set server reads/" + name + " weight "),
             c);
}

void CheckParsedTarget(const CheckTarget& t) {
  const std::string name = t.server.ToString();
  FUZZ_CHECK(IsHaproxyName(name), name);
  FUZZ_CHECK(!t.max_delay_ms || (*t.max_delay_ms >= 0 && *t.max_delay_ms <= 86'400'000), name);
  const std::string line =
      name + (t.max_delay_ms ? " max_delay_ms=" + std::to_string(*t.max_delay_ms) : "");
  auto again = ParseAgentSend(line);
  FUZZ_CHECK(again && again->server.id == t.server.id && again->server.entry == t.server.entry &&
                 again->max_delay_ms == t.max_delay_ms,
             line);
}

}  // namespace
}  // namespace lagwatch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lagwatch;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto servers = ParseServersState(text, "reads"); servers.ok()) {
    std::set<std::string> names;
    for (const HaproxyServerState& s : *servers) {
      FUZZ_CHECK(IsHaproxyName(s.name), s.name);
      FUZZ_CHECK(names.insert(s.name).second, "twice: " + s.name);
      FUZZ_CHECK(s.op_state >= 0 && s.op_state <= 3 && s.admin_state >= 0 &&
                     s.admin_state <= 0xff && s.weight >= 0 && s.weight <= 256,
                 s.name);
      for (auto v : {HaproxyAnswer::Verdict::kUp, HaproxyAnswer::Verdict::kDrain,
                     HaproxyAnswer::Verdict::kDown, HaproxyAnswer::Verdict::kMaint}) {
        HaproxyAnswer a;
        a.verdict = v;
        a.weight = s.weight * 3;
        for (auto e : {HaproxyEntry::kReplica, HaproxyEntry::kPrimary}) {
          for (const std::string& c : HaproxyCommandsFor("reads", s, a, e)) CheckCommand(c, s.name);
          HaproxyServerState applied = s;
          ApplyToState(a, e, applied);
          FUZZ_CHECK(HaproxyCommandsFor("reads", applied, a, e).empty(),
                     "commands left after applying them: " + s.name);
        }
      }
    }
  }
  if (auto info = ParseShowInfo(text); info.ok()) {
    FUZZ_CHECK(info->pid >= 1 && info->uptime_sec >= 0, std::to_string(info->pid));
  }
  const auto lines = fuzz::Lines(text);
  if (auto t = ParseAgentSend(lines[0])) CheckParsedTarget(*t);
  HttpRequest request{std::string(lines[0]), lines.size() > 1 ? std::string(lines[1]) : "", {}};
  if (lines.size() > 2) request.headers.emplace_back("X-Haproxy-Server-State", lines[2]);
  if (auto t = ParseHttpCheck(request); t.ok()) CheckParsedTarget(*t);
  return 0;
}
