#include "agent/topology.h"

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

// A server at 10.0.0.<n>:3306 with server_id n that answered.
ServerRole Server(int n, bool read_only, bool replicates) {
  ServerRole r;
  r.endpoint = {"10.0.0." + std::to_string(n), 3306};
  r.answered = true;
  r.server_id = n;
  r.read_only = read_only;
  r.replicates = replicates;
  return r;
}
ServerRole Primary(int n) { return Server(n, false, false); }
// A read-only replica of server `source` (named by host, port and server id).
ServerRole ReplicaOf(int n, int source) {
  ServerRole r = Server(n, true, true);
  r.source_host = "10.0.0." + std::to_string(source);
  r.source_port = 3306;
  r.source_server_id = source;
  r.source_connected = true;
  return r;
}

TEST_CASE("the one writable server that replicates from nobody is the primary") {
  const std::vector<ServerRole> roles = {Primary(1), ReplicaOf(2, 1), ReplicaOf(3, 1)};
  const Topology t = DecideTopology(roles);
  CHECK(t.state == TopologyState::kOk);
  CHECK(t.primary == size_t{0});
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kPrimary);
  CHECK(RelationTo(roles, 2, 0) == SourceRelation::kPrimary);
}

TEST_CASE("a promoted replica is the primary wherever it stands in the configuration") {
  // Switchover: 1 read-only and re-pointed to 2, 2 writable with replication reset, 3 re-pointed.
  const std::vector<ServerRole> roles = {ReplicaOf(1, 2), Primary(2), ReplicaOf(3, 2)};
  const Topology t = DecideTopology(roles);
  CHECK(t.state == TopologyState::kOk);
  CHECK(t.primary == size_t{1});
  CHECK(RelationTo(roles, 0, 1) == SourceRelation::kPrimary);
  CHECK(RelationTo(roles, 2, 1) == SourceRelation::kPrimary);
}

TEST_CASE("no writable server, or none that answered, leaves the primary unknown") {
  ServerRole old = Server(1, true, false);  // read-only, replicates from nobody: a switchover
  CHECK(DecideTopology({old, ReplicaOf(2, 1)}).state == TopologyState::kUnknown);
  ServerRole dead = Primary(1);
  dead.answered = false;
  CHECK(DecideTopology({dead, ReplicaOf(2, 1)}).state == TopologyState::kUnknown);
  // What a server has not said yet does not count either way.
  ServerRole unpolled = Primary(1);
  unpolled.replicates.reset();
  CHECK(DecideTopology({unpolled, ReplicaOf(2, 1)}).state == TopologyState::kUnknown);
  ServerRole unread = Primary(1);
  unread.read_only.reset();
  CHECK(DecideTopology({unread, ReplicaOf(2, 1)}).state == TopologyState::kUnknown);
}

TEST_CASE("two writable servers are ambiguous: a split brain is never resolved by guessing") {
  const Topology t = DecideTopology({Primary(1), Primary(2), ReplicaOf(3, 1)});
  CHECK(t.state == TopologyState::kAmbiguous);
  CHECK_FALSE(t.primary.has_value());
  CHECK(t.writable == std::vector<size_t>{0, 1});
}

TEST_CASE("a split brain does not end when one side stops answering in time") {
  // 1 and 2 both writable; 1's probe times out: it is held writable, and still counts against 2.
  ServerRole quiet = Primary(1);
  quiet.answered = false;
  quiet.held_writable = true;
  Topology t = DecideTopology({quiet, Primary(2), ReplicaOf(3, 1)});
  CHECK(t.state == TopologyState::kAmbiguous);
  CHECK(t.writable == std::vector<size_t>{0, 1});
  // Held alone it is not the primary (nothing answered writable): unknown, as before.
  t = DecideTopology({quiet, ReplicaOf(2, 1), ReplicaOf(3, 1)});
  CHECK(t.state == TopologyState::kUnknown);
  CHECK(t.writable.empty());
  // Once no longer held (down, or silent past the hold), the other is the primary.
  quiet.held_writable = false;
  t = DecideTopology({quiet, Primary(2), ReplicaOf(3, 1)});
  CHECK(t.state == TopologyState::kOk);
  CHECK(t.primary == size_t{1});
}

TEST_CASE("a writable replica is not taken for the primary, and is named") {
  ServerRole careless = ReplicaOf(2, 1);
  careless.read_only = false;  // read_only forgotten on a replica
  const Topology t = DecideTopology({Primary(1), careless});
  CHECK(t.state == TopologyState::kOk);
  CHECK(t.primary == size_t{0});
  CHECK(t.writable_replicas == std::vector<size_t>{1});
  // ... and with the primary gone it is still not one.
  ServerRole dead = Primary(1);
  dead.answered = false;
  CHECK(DecideTopology({dead, careless}).state == TopologyState::kUnknown);
}

TEST_CASE("a replica of another configured replica is chained; a longer chain too") {
  const std::vector<ServerRole> roles = {Primary(1), ReplicaOf(2, 1), ReplicaOf(3, 2),
                                         ReplicaOf(4, 3)};
  CHECK(RelationTo(roles, 2, 0) == SourceRelation::kChained);
  CHECK(RelationTo(roles, 3, 0) == SourceRelation::kChained);
}

TEST_CASE("a replica whose source is outside the configuration, or not the primary, is in doubt") {
  // Re-pointed to a server lagwatch does not watch.
  std::vector<ServerRole> roles = {Primary(1), ReplicaOf(2, 9)};
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kUnknown);
  // Still on the old primary (read-only, replicating from nobody) after the switchover.
  roles = {Server(1, true, false), Primary(2), ReplicaOf(3, 1)};
  CHECK(RelationTo(roles, 2, 1) == SourceRelation::kUnknown);
  // Naming no source at all, or itself.
  ServerRole blank = ReplicaOf(2, 1);
  blank.source_host.clear();
  blank.source_server_id.reset();
  roles = {Primary(1), blank};
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kUnknown);
  roles = {Primary(1), ReplicaOf(2, 2)};
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kUnknown);
  // A cycle of replicas leads nowhere.
  roles = {Primary(1), ReplicaOf(2, 3), ReplicaOf(3, 2)};
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kUnknown);
}

TEST_CASE("a source is matched by server id first, then by host and port as configured") {
  // Master_Server_Id 0 (not connected yet): the host and port decide, case-insensitively.
  ServerRole r = ReplicaOf(2, 1);
  r.source_server_id = 0;
  r.source_host = "10.0.0.1";
  std::vector<ServerRole> roles = {Primary(1), r};
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kPrimary);
  roles[0].endpoint.host = "DB1.example";
  roles[1].source_host = "db1.example";
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kPrimary);
  // Another port is another server; names are not resolved.
  roles[1].source_port = 3307;
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kUnknown);
  roles[1].source_port = 3306;
  roles[1].source_host = "10.0.0.1";  // the same machine under another name: not matched
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kUnknown);
  // While connected, the server id wins over a host that points elsewhere, and an id no
  // configured server has is a server outside the configuration, whatever its host and port.
  r = ReplicaOf(2, 1);
  r.source_host = "elsewhere";
  roles = {Primary(1), r};
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kPrimary);
  r = ReplicaOf(2, 9);
  r.source_host = "10.0.0.1";
  roles = {Primary(1), r};
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kUnknown);
  // Not connected (just re-pointed, or its source is down): the id is the previous source's.
  r = ReplicaOf(2, 1);
  r.source_connected = false;
  r.source_host = "10.0.0.9";
  roles = {Primary(1), r};
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kUnknown);
  r.source_host = "10.0.0.1";  // re-pointed to the primary, connecting: matched by name
  roles = {Primary(1), r};
  CHECK(RelationTo(roles, 1, 0) == SourceRelation::kPrimary);
}

}  // namespace
}  // namespace lagwatch
