#include "agent/discovery.h"

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

using Row = std::vector<std::optional<std::string>>;

// MariaDB 10.11's SHOW SLAVE HOSTS, as the sandbox's primary answers it (a replica with
// report_host=127.0.0.1 on port 28511, server id 10).
QueryResult MariaDbListing(std::vector<Row> rows) {
  return {{"Server_id", "Host", "Port", "Master_id"}, std::move(rows), 0};
}

TEST_CASE("discovery: MariaDB's SHOW SLAVE HOSTS and MySQL's SHOW REPLICAS are read by name") {
  int skipped = -1;
  auto listed =
      ParseReplicaHosts(MariaDbListing({{"10", "127.0.0.1", "28511", "1"}}), 10, &skipped);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].endpoint == Endpoint{"127.0.0.1", 28511});
  CHECK(listed[0].server_id == 10);
  CHECK(skipped == 0);
  // MySQL 8.0.22+ SHOW REPLICAS, the example of its manual
  // (https://dev.mysql.com/doc/refman/8.0/en/show-replicas.html).
  QueryResult mysql{{"Server_id", "Host", "Port", "Source_id", "Replica_UUID"},
                    {{"10", "iconnect2", "3306", "3", "14cb6624-7f93-11e0-b2c0-c80aa9429562"},
                     {"21", "athena", "3306", "3", "07af4990-f41f-11df-a566-7ac56fdaf645"}},
                    0};
  listed = ParseReplicaHosts(mysql, 10, &skipped);
  REQUIRE(listed.size() == 2);
  CHECK(listed[1].endpoint == Endpoint{"athena", 3306});
  CHECK(listed[1].server_id == 21);
}

TEST_CASE("discovery: rows without a usable host or port are skipped and counted, never thrown") {
  int skipped = -1;
  // report_host unset (empty), report_port 0 ("not set" in MySQL's manual), NULLs, hostile text,
  // a port out of range, a short row.
  auto listed = ParseReplicaHosts(MariaDbListing({{"2", "", "3306", "1"},
                                                  {"3", "db3", "0", "1"},
                                                  {"4", std::nullopt, "3306", "1"},
                                                  {"5", "db5", std::nullopt, "1"},
                                                  {"6", "db6\r\nKEYS *", "3306", "1"},
                                                  {"7", "db 7", "3306", "1"},
                                                  {"8", "db8", "70000", "1"},
                                                  {"9", "db9", "x", "1"},
                                                  {"10"},
                                                  {"x", "db11", "3306", "1"}}),
                                  10, &skipped);
  REQUIRE(listed.size() == 1);  // db11: its server id is unreadable, not its address
  CHECK(listed[0].endpoint.host == "db11");
  CHECK(listed[0].server_id == 0);
  CHECK(skipped == 9);
  // No such columns at all (not a listing): nothing, every row skipped.
  listed = ParseReplicaHosts({{"a"}, {{"1"}}, 0}, 10, &skipped);
  CHECK(listed.empty());
  CHECK(skipped == 1);
  // More than max: the rest skipped.
  std::vector<Row> many;
  for (int i = 0; i < 5; ++i) many.push_back({"1", "db" + std::to_string(i), "3306", "1"});
  listed = ParseReplicaHosts(MariaDbListing(many), 3, &skipped);
  CHECK(listed.size() == 3);
  CHECK(skipped == 2);
}

ListedReplica L(const std::string& host, int64_t id = 0) { return {{host, 3306}, id}; }

TEST_CASE("discovery: a replica is kept until unlisted for the grace period; configured ones win") {
  DiscoveredSet set(Millis(1000), 100);
  const MonoTime t0{};
  const std::set<std::string> configured = {"db1:3306"};
  const std::set<int64_t> configured_ids = {1, 2};
  // db1 is configured by name, db2's server id is a configured server's (another name for it).
  CHECK(set.Update({L("db1"), L("db2", 2), L("db3", 3)}, t0, configured, configured_ids));
  REQUIRE(set.replicas().size() == 1);
  CHECK(set.replicas()[0].host == "db3");
  CHECK(set.added().size() == 1);
  // Unlisted, within the grace period: kept, no change.
  CHECK_FALSE(set.Update({}, t0 + Millis(900), configured, configured_ids));
  CHECK(set.replicas().size() == 1);
  // Listed again: the grace restarts.
  CHECK_FALSE(set.Update({L("db3", 3)}, t0 + Millis(950), configured, configured_ids));
  CHECK_FALSE(set.Update({}, t0 + Millis(1900), configured, configured_ids));
  CHECK(set.Update({}, t0 + Millis(2000), configured, configured_ids));
  CHECK(set.replicas().empty());
  REQUIRE(set.dropped().size() == 1);
  CHECK(set.dropped()[0].host == "db3");
  // A discovered replica the configuration names later is dropped from the discovered set.
  CHECK(set.Update({L("db4")}, t0 + Millis(3000), configured, configured_ids));
  CHECK(set.Update({L("db4")}, t0 + Millis(3100), {"db1:3306", "db4:3306"}, configured_ids));
  CHECK(set.replicas().empty());
}

TEST_CASE("discovery: no more than max replicas, whatever the primary lists") {
  DiscoveredSet set(Millis(1000), 2);
  CHECK(set.Update({L("a"), L("b"), L("c")}, MonoTime{}, {}, {}));
  CHECK(set.replicas().size() == 2);
}

}  // namespace
}  // namespace lagwatch
