#include "agent/topology_monitor.h"

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

Endpoint E(int n) { return {"10.0.0." + std::to_string(n), 3306}; }

ServerRole Role(int n, bool read_only, std::optional<int> source = std::nullopt) {
  ServerRole r;
  r.endpoint = E(n);
  r.answered = true;
  r.server_id = n;
  r.read_only = read_only;
  r.replicates = source.has_value();
  if (source) {
    r.source_host = E(*source).host;
    r.source_port = 3306;
    r.source_server_id = *source;
    r.source_connected = true;
  }
  return r;
}

struct Fixture {
  std::vector<Endpoint> moves;
  std::vector<TopologyMonitor::Change> changes;
  std::vector<Endpoint> warnings;
  std::vector<Endpoint> doubts;
  TopologyMonitor monitor{
      {E(1), E(2), E(3)},
      E(1),
      [this](const Endpoint& p) { moves.push_back(p); },
      [this](const TopologyMonitor::Change& c) { changes.push_back(c); },
      [this](const TopologyMonitor::Notice& n) {
        auto& to = n.kind == TopologyMonitor::Notice::Kind::kWritableReplica ? warnings : doubts;
        to.push_back(n.role.endpoint);
      }};
};

TEST_CASE("topology: a split brain stays ambiguous while the primary's probe times out") {
  Fixture f;
  f.monitor.Report(Role(1, false));
  f.monitor.Report(Role(3, true, 1));
  f.monitor.Report(Role(2, false));  // promoted while 1 is still writable
  CHECK(f.monitor.ViewOf(E(1).Id()).state == TopologyState::kAmbiguous);
  // 1 answers no more in time: held writable, so 2 is not taken for the primary.
  ServerRole quiet = Role(1, false);
  quiet.answered = false;
  quiet.read_only.reset();
  quiet.held_writable = true;
  f.monitor.Report(quiet);
  CHECK(f.moves.empty());
  CHECK(f.monitor.ViewOf(E(2).Id()).state == TopologyState::kAmbiguous);
  // The hold ends (1 silent past it, or down): 2 is the primary.
  quiet.held_writable = false;
  f.monitor.Report(quiet);
  CHECK(f.moves == std::vector<Endpoint>{E(2)});
  CHECK(f.monitor.primary() == E(2));
}

TEST_CASE("topology: the configured primary confirmed, then a switchover moves it once") {
  Fixture f;
  f.monitor.Report(Role(2, true, 1));
  f.monitor.Report(Role(3, true, 1));
  CHECK(f.monitor.state() == TopologyState::kUnknown);  // the primary has not said yet
  f.monitor.Report(Role(1, false));
  CHECK(f.monitor.state() == TopologyState::kOk);
  CHECK(f.moves.empty());
  CHECK(f.monitor.ViewOf(E(1).Id()).is_primary);
  CHECK(f.monitor.ViewOf(E(2).Id()).relation == SourceRelation::kPrimary);

  // The old primary goes read-only: no writable server, nothing moves.
  f.monitor.Report(Role(1, true));
  CHECK(f.monitor.state() == TopologyState::kUnknown);
  CHECK(f.monitor.primary() == E(1));
  // Server 2 is promoted; server 3 still replicates from 1, which replicates from nobody.
  f.monitor.Report(Role(2, false));
  CHECK(f.moves == std::vector<Endpoint>{E(2)});
  CHECK(f.monitor.primary() == E(2));
  CHECK(f.monitor.epoch() == 1);
  REQUIRE(f.changes.back().previous.has_value());
  CHECK(*f.changes.back().previous == E(1));
  CHECK(f.monitor.ViewOf(E(2).Id()).is_primary);
  CHECK_FALSE(f.monitor.ViewOf(E(1).Id()).is_primary);
  CHECK(f.monitor.ViewOf(E(3).Id()).relation == SourceRelation::kUnknown);
  // Said once each: the old primary replicates from nobody, 3 from a server that does not lead to
  // the new primary.
  CHECK(f.doubts == std::vector<Endpoint>{E(1), E(3)});
  // Re-pointed: 3 and the old primary are the new one's replicas.
  f.monitor.Report(Role(3, true, 2));
  f.monitor.Report(Role(1, true, 2));
  CHECK(f.monitor.ViewOf(E(3).Id()).relation == SourceRelation::kPrimary);
  CHECK(f.monitor.ViewOf(E(1).Id()).relation == SourceRelation::kPrimary);
  CHECK(f.moves.size() == 1);
  CHECK(f.monitor.epoch() == 1);
  CHECK(f.doubts.size() == 2);
}

TEST_CASE(
    "topology: a replica re-pointed outside the configuration is in doubt, said once per "
    "time") {
  Fixture f;
  f.monitor.Report(Role(1, false));
  f.monitor.Report(Role(2, true, 1));
  ServerRole away = Role(2, true, 7);  // server 7 is not configured
  f.monitor.Report(away);
  f.monitor.Report(away);
  CHECK(f.monitor.ViewOf(E(2).Id()).relation == SourceRelation::kUnknown);
  CHECK(f.doubts == std::vector<Endpoint>{E(2)});
  ServerRole garbled = away;  // no id yet, a host no configured server has
  garbled.source_server_id = 0;
  garbled.source_host = "db-7.invalid";
  f.monitor.Report(garbled);
  CHECK(f.doubts.size() == 1);  // still the same doubt
  f.monitor.Report(Role(2, true, 1));
  CHECK(f.monitor.ViewOf(E(2).Id()).relation == SourceRelation::kPrimary);
  f.monitor.Report(garbled);
  CHECK(f.doubts == std::vector<Endpoint>{E(2), E(2)});
}

TEST_CASE("topology: two writable servers are ambiguous and move nothing") {
  Fixture f;
  f.monitor.Report(Role(1, false));
  f.monitor.Report(Role(3, true, 1));
  const size_t changes = f.changes.size();
  f.monitor.Report(Role(2, false));
  // Decided at once (no replica is judged healthy), announced once server 1, whose report may be
  // older than server 2's, says again that it is writable.
  CHECK(f.monitor.ViewOf(E(3).Id()).state == TopologyState::kAmbiguous);
  CHECK(f.monitor.state() == TopologyState::kOk);
  CHECK(f.changes.size() == changes);
  CHECK(f.monitor.ViewOf(E(1).Id()).confirm);
  CHECK_FALSE(f.monitor.ViewOf(E(2).Id()).confirm);
  CHECK_FALSE(f.monitor.ViewOf(E(3).Id()).confirm);
  f.monitor.Report(Role(1, false));
  CHECK_FALSE(f.monitor.ViewOf(E(1).Id()).confirm);
  CHECK(f.monitor.state() == TopologyState::kAmbiguous);
  CHECK(f.moves.empty());
  CHECK(f.changes.back().state == TopologyState::kAmbiguous);
  CHECK(f.changes.back().writable == std::vector<Endpoint>{E(1), E(2)});
  CHECK(f.monitor.ViewOf(E(3).Id()).state == TopologyState::kAmbiguous);
  // One of them goes read-only again: resolved, still the same primary.
  f.monitor.Report(Role(2, true, 1));
  CHECK(f.monitor.state() == TopologyState::kOk);
  CHECK(f.moves.empty());
}

TEST_CASE("topology: an ambiguity the old primary's next report ends is never announced") {
  Fixture f;
  f.monitor.Report(Role(1, false));
  f.monitor.Report(Role(3, true, 1));
  const size_t changes = f.changes.size();
  // A switchover in order: 1 went read-only just before 2 became writable, but 1's last report
  // is older than 2's.
  f.monitor.Report(Role(2, false));
  CHECK(f.monitor.ViewOf(E(3).Id()).state == TopologyState::kAmbiguous);
  f.monitor.Report(Role(1, true));
  CHECK(f.moves == std::vector<Endpoint>{E(2)});
  REQUIRE(f.changes.size() == changes + 1);
  CHECK(f.changes.back().state == TopologyState::kOk);
  REQUIRE(f.changes.back().previous.has_value());
  for (const auto& c : f.changes) CHECK(c.state != TopologyState::kAmbiguous);
  // And one that the new server's own next report ends (it went read-only again): nothing at all.
  Fixture g;
  g.monitor.Report(Role(1, false));
  const size_t before = g.changes.size();
  g.monitor.Report(Role(2, false));
  g.monitor.Report(Role(2, true));
  CHECK(g.changes.size() == before);
  CHECK(g.monitor.state() == TopologyState::kOk);
  CHECK(g.monitor.ViewOf(E(3).Id()).state == TopologyState::kOk);
}

TEST_CASE("topology: a writable replica is warned about once and never taken for the primary") {
  Fixture f;
  f.monitor.Report(Role(1, false));
  f.monitor.Report(Role(2, false, 1));
  f.monitor.Report(Role(2, false, 1));
  CHECK(f.warnings == std::vector<Endpoint>{E(2)});
  CHECK(f.monitor.primary() == E(1));
  CHECK(f.monitor.state() == TopologyState::kOk);
}

TEST_CASE("topology: a replica whose status was never read counts as the primary's") {
  Fixture f;
  f.monitor.Report(Role(1, false));
  ServerRole unread = Role(2, true, 1);
  unread.replicates.reset();  // the probe account may not read its replication status
  unread.source_host.clear();
  f.monitor.Report(unread);
  CHECK(f.monitor.ViewOf(E(2).Id()).relation == SourceRelation::kPrimary);
}

TEST_CASE("topology: reports of servers not configured are ignored") {
  Fixture f;
  ServerRole stranger = Role(9, false);
  f.monitor.Report(stranger);
  CHECK(f.moves.empty());
  CHECK(f.changes.empty());
  CHECK(f.monitor.ViewOf(E(9).Id()).relation == SourceRelation::kUnknown);
}

TEST_CASE("topology: servers added and removed at run time keep what the others said") {
  Fixture f;
  f.monitor.Report(Role(1, false));
  f.monitor.Report(Role(2, true, 1));
  f.monitor.Report(Role(3, true, 1));
  const size_t changes = f.changes.size();
  f.monitor.SetServers({E(4), E(1), E(3)});  // 2 removed, 4 added
  CHECK(f.changes.size() == changes);        // nothing a caller must hear about changed
  CHECK(f.monitor.state() == TopologyState::kOk);
  CHECK(f.monitor.primary() == E(1));
  CHECK(f.monitor.ViewOf(E(3).Id()).relation == SourceRelation::kPrimary);
  // The removed server is forgotten; the new one reports like any other.
  CHECK(f.monitor.ViewOf(E(2).Id()).relation == SourceRelation::kUnknown);
  f.monitor.Report(Role(4, true, 1));
  CHECK(f.monitor.ViewOf(E(4).Id()).relation == SourceRelation::kPrimary);
  // Server 4 promoted: a move among the new list.
  f.monitor.Report(Role(1, true));
  f.monitor.Report(Role(4, false));
  CHECK(f.monitor.primary() == E(4));
  CHECK(f.moves == std::vector<Endpoint>{E(4)});
  // A list without the current primary is refused: nothing changes.
  f.monitor.SetServers({E(1), E(3)});
  CHECK(f.monitor.primary() == E(4));
  CHECK(f.monitor.ViewOf(E(3).Id()).relation == SourceRelation::kUnknown);  // still from 1
}

}  // namespace
}  // namespace lagwatch
