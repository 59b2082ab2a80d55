#include "base/slave_status.h"

#include <doctest/doctest.h>

#include <string>

#include "base/vertical_result.h"

namespace lagwatch {
namespace {

QueryResult Row(std::vector<std::string> columns, std::vector<std::optional<std::string>> cells) {
  QueryResult r;
  r.columns = std::move(columns);
  r.rows.push_back(std::move(cells));
  return r;
}

TEST_CASE("ParseSlaveStatus reads the threads, SBM, relay log space and the last error") {
  auto st = ParseSlaveStatus(Row({"Slave_IO_Running", "Slave_SQL_Running", "Seconds_Behind_Master",
                                  "Relay_Log_Space", "Last_IO_Error", "Last_SQL_Error"},
                                 {"Connecting", "No", std::nullopt, "4096", "", "Error 1062"}));
  REQUIRE(st.ok());
  CHECK(st->known);
  CHECK(st->configured);
  CHECK(st->io_state == "Connecting");
  CHECK_FALSE(st->io_running);
  CHECK_FALSE(st->sql_running);
  CHECK_FALSE(st->seconds_behind_master.has_value());  // NULL while the SQL thread is stopped
  CHECK(st->relay_log_space == 4096);
  CHECK(st->last_error == "Error 1062");
}

TEST_CASE("ParseSlaveStatus: no row is not a replica; missing columns or cells are data errors") {
  QueryResult empty;
  empty.columns = {"Slave_IO_Running", "Slave_SQL_Running"};
  auto none = ParseSlaveStatus(empty);
  REQUIRE(none.ok());
  CHECK(none->known);
  CHECK_FALSE(none->configured);

  auto no_columns = ParseSlaveStatus(Row({"Slave_IO_Running"}, {"Yes"}));
  CHECK(no_columns.status().code() == Status::Code::kDataError);

  // A row shorter than its columns (MysqlConn never makes one) reads as missing cells.
  auto short_row = ParseSlaveStatus(
      Row({"Slave_IO_Running", "Slave_SQL_Running", "Seconds_Behind_Master"}, {"Yes"}));
  REQUIRE(short_row.ok());
  CHECK(short_row->io_running);
  CHECK_FALSE(short_row->sql_running);
  CHECK_FALSE(short_row->seconds_behind_master.has_value());

  auto junk = ParseSlaveStatus(
      Row({"Slave_IO_Running", "Slave_SQL_Running", "Seconds_Behind_Master", "Relay_Log_Space"},
          {"Yes", "Yes", "-5x", "lots"}));
  REQUIRE(junk.ok());
  CHECK_FALSE(junk->seconds_behind_master.has_value());
  CHECK_FALSE(junk->relay_log_space.has_value());
}

TEST_CASE("ParseSlaveStatus: neither column family is a data error naming both") {
  for (auto columns : {std::vector<std::string>{"Seconds_Behind_Master"},
                       {"Replica_IO_Running", "Slave_SQL_Running"},
                       {"Slave_IO_Running", "Replica_SQL_Running"},
                       {"slave_io_running", "slave_sql_running"}}) {
    auto st = ParseSlaveStatus(Row(columns, {"Yes", "Yes"}));
    CHECK(st.status().code() == Status::Code::kDataError);
    CHECK(st.status().message().find("Slave_IO_Running/Slave_SQL_Running") != std::string::npos);
    CHECK(st.status().message().find("Replica_IO_Running/Replica_SQL_Running") !=
          std::string::npos);
  }
  QueryResult no_row;
  no_row.columns = {"Replica_IO_Running", "Replica_SQL_Running"};
  auto none = ParseSlaveStatus(no_row);
  REQUIRE(none.ok());
  CHECK_FALSE(none->configured);
  CHECK(none->column_family == ColumnFamily::kReplica);  // known from the columns alone
  CHECK(none->row_count == 0);
}

TEST_CASE("ParseSlaveStatus: junk, huge, negative and empty numbers stay nullopt") {
  const std::vector<std::string> columns = {
      "Replica_IO_Running", "Replica_SQL_Running", "Seconds_Behind_Source", "Source_Port",
      "Source_Server_Id",   "Exec_Source_Log_Pos", "Read_Source_Log_Pos",   "Auto_Position"};
  for (const char* junk : {"", "x", "99999999999999999999", "1e3", " 1", "0x10"}) {
    CAPTURE(junk);
    auto st = ParseSlaveStatus(Row(columns, {"Yes", "Yes", junk, junk, junk, junk, junk, junk}));
    REQUIRE(st.ok());
    CHECK_FALSE(st->seconds_behind_master.has_value());
    CHECK_FALSE(st->source_port.has_value());
    CHECK_FALSE(st->source_server_id.has_value());
    CHECK_FALSE(st->exec_source_log_pos.has_value());
    CHECK_FALSE(st->read_source_log_pos.has_value());
    CHECK_FALSE(st->auto_position.has_value());
  }
  auto negative = ParseSlaveStatus(Row(columns, {"Yes", "Yes", "-1", "-1", "-1", "-1", "-1", "2"}));
  REQUIRE(negative.ok());
  CHECK(negative->seconds_behind_master == -1);            // signed, as before
  CHECK_FALSE(negative->exec_source_log_pos.has_value());  // a position has no sign
  CHECK_FALSE(negative->auto_position.has_value());        // only 0 or 1
  auto max =
      ParseSlaveStatus(Row(columns, {"Yes", "Yes", "9223372036854775807", "65535", "4294967295",
                                     "18446744073709551615", "18446744073709551615", "0"}));
  REQUIRE(max.ok());
  CHECK(max->seconds_behind_master == INT64_MAX);
  CHECK(max->source_server_id == 4294967295);
  CHECK(max->exec_source_log_pos == UINT64_MAX);
  CHECK(max->auto_position == false);
}

const std::string kTestdata = LAGWATCH_TESTDATA_DIR;

QueryResult Fixture(const char* name) { return LoadVerticalResult(kTestdata + "/" + name); }

// `r` with every column named in the other family: "Slave" <-> "Replica", "Master" <-> "Source"
// in each name, the way MySQL 8.0.22 renamed them.
QueryResult Renamed(QueryResult r) {
  for (std::string& c : r.columns) {
    for (auto [from, to] : {std::pair<std::string, std::string>{"Slave", "Replica"},
                            {"Master", "Source"},
                            {"Replica", "Slave"},
                            {"Source", "Master"}}) {
      if (size_t at = c.find(from); at != std::string::npos) {
        c.replace(at, from.size(), to);
        break;
      }
    }
  }
  return r;
}

// The same status from the other family's names.
void CheckSameAsRenamed(const QueryResult& r, const ReplicationStatus& st) {
  auto other = ParseSlaveStatus(Renamed(r));
  REQUIRE(other.ok());
  CHECK(other->column_family != st.column_family);
  ReplicationStatus same = *other;
  same.column_family = st.column_family;
  CHECK(same == st);
}

// A fixture of base/testdata/ and what ParseSlaveStatus must read from it.
struct FixtureCase {
  const char* file;
  size_t columns;
  ColumnFamily family;
  bool running;  // both threads
  std::optional<int64_t> seconds_behind;
  int64_t relay_log_space;
  const char* source_host;
  int64_t source_port, source_server_id;
  const char* exec_file;  // also the read file, but in the 10.11 fixture
  uint64_t exec_pos, read_pos;
  const char* using_gtid;
  std::optional<bool> auto_position;
  const char* executed_gtid_set;
};

const FixtureCase kFixtures[] = {
    // https://dev.mysql.com/doc/refman/5.7/en/show-slave-status.html
    {"mysql-5.7-show-slave-status.txt", 57, ColumnFamily::kSlave, true, 0, 1858, "localhost", 13000,
     1, "source-bin.000002", 1307, 1307, "", true, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"},
    // https://dev.mysql.com/doc/refman/8.0/en/show-replica-status.html,
    // https://dev.mysql.com/doc/refman/8.4/en/show-replica-status.html and
    // https://dev.mysql.com/doc/refman/9.5/en/show-replica-status.html print the same example; its
    // columns are those of show_slave_status_metadata() in MySQL's sql/rpl_replica.cc.
    {"mysql-8.x-9.x-show-replica-status.txt", 60, ColumnFamily::kReplica, true, 0, 1355,
     "127.0.0.1", 13000, 1, "master-bin.000001", 927, 927, "", true,
     "73f86016-978b-11ee-ade5-8d2a2a562feb:1-3"},
    // https://mariadb.com/kb/en/show-replica-status/ (SHOW SLAVE STATUS, and SHOW ALL SLAVES
    // STATUS: Connection_name and Slave_SQL_State first, more columns at the end)
    {"mariadb-kb-show-slave-status.txt", 44, ColumnFamily::kSlave, true, 0, 1497,
     "db01.example.com", 3306, 101, "mariadb-bin.000010", 548, 548, "No", std::nullopt, ""},
    {"mariadb-kb-show-all-slaves-status.txt", 52, ColumnFamily::kSlave, true, 0, 4557,
     "db01.example.com", 3306, 101, "mariadb-bin.000010", 3608, 3608, "No", std::nullopt, ""},
    // mariadbd 10.11.19 (Debian 12), a replica configured and never started (see the file): no
    // SBM, server id 0, nothing executed or read yet.
    {"mariadb-10.11-show-replica-status.txt", 54, ColumnFamily::kSlave, false, std::nullopt, 256,
     "127.0.0.1", 1, 0, "", 0, 4, "Slave_Pos", std::nullopt, ""},
};

TEST_CASE("ParseSlaveStatus reads the MySQL manuals' and the MariaDB KB's examples") {
  for (const FixtureCase& f : kFixtures) {
    CAPTURE(f.file);
    const QueryResult r = Fixture(f.file);
    REQUIRE(r.columns.size() == f.columns);
    auto st = ParseSlaveStatus(r);
    REQUIRE(st.ok());
    CHECK(st->column_family == f.family);
    CHECK(st->row_count == 1);
    CHECK(st->io_state == (f.running ? "Yes" : "No"));
    CHECK(st->io_running == f.running);
    CHECK(st->sql_running == f.running);
    CHECK(st->seconds_behind_master == f.seconds_behind);
    CHECK(st->relay_log_space == f.relay_log_space);
    CHECK(st->last_error.empty());
    CHECK(st->source_host == f.source_host);
    CHECK(st->source_port == f.source_port);
    CHECK(st->source_server_id == f.source_server_id);
    CHECK(st->exec_source_log_file == f.exec_file);
    CHECK(st->exec_source_log_pos == f.exec_pos);
    CHECK(st->read_source_log_file == (f.running ? f.exec_file : ""));
    CHECK(st->read_source_log_pos == f.read_pos);
    CHECK(st->using_gtid == f.using_gtid);
    CHECK(st->gtid_io_pos.empty());
    CHECK(st->auto_position == f.auto_position);
    CHECK(st->executed_gtid_set == f.executed_gtid_set);
    CheckSameAsRenamed(r, *st);
  }
}

TEST_CASE("ParseSlaveStatus reads the first of several rows and counts them") {
  QueryResult r = Row({"Connection_name", "Slave_IO_Running", "Slave_SQL_Running", "Master_Host"},
                      {"a", "Yes", "No", "db-a"});
  r.rows.push_back({"b", "No", "Yes", "db-b"});
  auto st = ParseSlaveStatus(r);
  REQUIRE(st.ok());
  CHECK(st->row_count == 2);
  CHECK(st->io_running);
  CHECK_FALSE(st->sql_running);
  CHECK(st->source_host == "db-a");
}

// MySQL 8.0, two channels (base/testdata, citing
// https://dev.mysql.com/doc/refman/8.0/en/replication-channels.html and
// https://dev.mysql.com/doc/refman/8.0/en/show-replica-status.html): source_2 first, from
// 127.0.0.1:13001 (server id 2, reconnecting, SQL thread stopped on an error), then source_1, the
// manual's example, from 127.0.0.1:13000 (server id 1, both threads running).
const char kMysqlTwoChannels[] = "mysql-8.0-show-replica-status-two-channels.txt";
// MariaDB SHOW ALL SLAVES STATUS, two connections (base/testdata, citing
// https://mariadb.com/kb/en/show-replica-status/ and
// https://mariadb.com/kb/en/multi-source-replication/): the default connection first, from
// db02.example.com:3306 (server id 102, IO thread connecting), then 'main', the KB's example,
// from db01.example.com:3306 (server id 101, running).
const char kMariaDbTwoConnections[] = "mariadb-show-all-slaves-status-two-connections.txt";

TEST_CASE("ParseSlaveStatus judges MySQL's channel from the primary, not the first row") {
  const QueryResult r = Fixture(kMysqlTwoChannels);
  REQUIRE(r.rows.size() == 2);
  const ChannelSource primary{1, "127.0.0.1", 13000};
  auto st = ParseSlaveStatus(r, &primary);
  REQUIRE(st.ok());
  CHECK(st->row_count == 2);
  CHECK(st->channel_name == "source_1");
  CHECK(st->channel_match == ChannelMatch::kServerId);
  CHECK(st->io_running);
  CHECK(st->sql_running);  // source_2's stopped SQL thread is not this replica's
  CHECK(st->last_error.empty());
  CHECK(st->seconds_behind_master == 0);
  CHECK(st->source_port == 13000);
  // Its positions are that row's too.
  CHECK(st->exec_source_log_file == "master-bin.000001");
  CHECK(st->exec_source_log_pos == 927);
  CHECK(st->executed_gtid_set == "73f86016-978b-11ee-ade5-8d2a2a562feb:1-3");

  // Judged against the other source: its IO thread is not connected, so its Source_Server_Id is
  // not trusted and its host:port decides.
  const ChannelSource other{2, "127.0.0.1", 13001};
  auto st2 = ParseSlaveStatus(r, &other);
  REQUIRE(st2.ok());
  CHECK(st2->channel_name == "source_2");
  CHECK(st2->channel_match == ChannelMatch::kAddress);
  CHECK_FALSE(st2->sql_running);
  CHECK(st2->exec_source_log_file == "other-bin.000003");
  CHECK(st2->exec_source_log_pos == 3922);
  CHECK(st2->last_error.find("Duplicate entry") != std::string::npos);
}

TEST_CASE("ParseSlaveStatus judges MariaDB's connection from the primary, by id or address") {
  const QueryResult r = Fixture(kMariaDbTwoConnections);
  REQUIRE(r.rows.size() == 2);
  const ChannelSource by_id{101, "10.1.1.1", 3306};  // the configured name is not the one used
  auto st = ParseSlaveStatus(r, &by_id);
  REQUIRE(st.ok());
  CHECK(st->channel_name == "main");
  CHECK(st->channel_match == ChannelMatch::kServerId);
  CHECK(st->io_state == "Yes");
  CHECK(st->source_host == "db01.example.com");
  CHECK(st->exec_source_log_pos == 3608);
  CHECK(st->relay_log_space == 4557);
  // The primary's server id not known yet: its configured host (ASCII case aside) and port.
  const ChannelSource by_address{std::nullopt, "DB01.example.com", 3306};
  auto st2 = ParseSlaveStatus(r, &by_address);
  REQUIRE(st2.ok());
  CHECK(st2->channel_name == "main");
  CHECK(st2->channel_match == ChannelMatch::kAddress);
}

TEST_CASE("ParseSlaveStatus: no channel from the primary reads the first row, matched none") {
  for (const char* file : {kMysqlTwoChannels, kMariaDbTwoConnections}) {
    CAPTURE(file);
    const QueryResult r = Fixture(file);
    const ChannelSource nobody{7, "10.9.9.9", 3306};
    auto st = ParseSlaveStatus(r, &nobody);
    REQUIRE(st.ok());
    CHECK(st->channel_match == ChannelMatch::kNone);
    CHECK(st->row_count == 2);
    CHECK(st->channel_name == ParseSlaveStatus(r)->channel_name);  // the first row's
    CHECK(*st == *ParseSlaveStatus(r));                            // as without a primary to match
    CHECK(DescribeChannel(*st) == "none of its 2 replication channels replicates from the primary");
  }
  // A name that points elsewhere now: the IO thread is connected to server id 101, not 5.
  const ChannelSource renamed{5, "db01.example.com", 3306};
  auto st = ParseSlaveStatus(Fixture(kMariaDbTwoConnections), &renamed);
  REQUIRE(st.ok());
  CHECK(st->channel_match == ChannelMatch::kNone);
}

TEST_CASE("ParseSlaveStatus: one row is judged whatever its source, as with one channel") {
  const ChannelSource nobody{7, "10.9.9.9", 3306};
  for (const FixtureCase& f : kFixtures) {
    CAPTURE(f.file);
    const QueryResult r = Fixture(f.file);
    auto matched = ParseSlaveStatus(r, &nobody);
    REQUIRE(matched.ok());
    CHECK(matched->channel_match == ChannelMatch::kOnly);
    CHECK(*matched == *ParseSlaveStatus(r));
    CHECK(DescribeChannel(*matched).empty());
  }
}

TEST_CASE("ParseSlaveStatus: a match by server id wins over an earlier one by address") {
  QueryResult r = Row({"Channel_Name", "Replica_IO_Running", "Replica_SQL_Running", "Source_Host",
                       "Source_Port", "Source_Server_Id"},
                      {"by_name", "No", "Yes", "db1", "3306", "1"});
  r.rows.push_back({"by_id", "Yes", "Yes", "10.0.0.1", "3306", "1"});
  const ChannelSource primary{1, "db1", 3306};
  auto st = ParseSlaveStatus(r, &primary);
  REQUIRE(st.ok());
  CHECK(st->channel_name == "by_id");
  CHECK(st->channel_match == ChannelMatch::kServerId);
  CHECK(DescribeChannel(*st) ==
        "channel 'by_id' (one of 2) replicates from the primary (matched by server id)");
}

TEST_CASE("MatchSource: a fresh server id decides; else the exact host and port") {
  ReplicationStatus st;
  st.io_running = true;
  st.source_host = "db1";
  st.source_port = 3306;
  st.source_server_id = 1;
  CHECK(MatchSource(st, {1, "other", 1}) == ChannelMatch::kServerId);
  CHECK(MatchSource(st, {2, "db1", 3306}) == ChannelMatch::kNone);  // the name points elsewhere
  CHECK(MatchSource(st, {std::nullopt, "db1", 3306}) == ChannelMatch::kAddress);
  CHECK(MatchSource(st, {0, "db1", 3306}) == ChannelMatch::kAddress);  // 0: not known
  CHECK(MatchSource(st, {std::nullopt, "db1", 3307}) == ChannelMatch::kNone);
  CHECK(MatchSource(st, {std::nullopt, "db1.example.com", 3306}) == ChannelMatch::kNone);
  st.io_running = false;  // the id is the last source's until it connects
  CHECK(MatchSource(st, {1, "other", 1}) == ChannelMatch::kNone);
  CHECK(MatchSource(st, {2, "db1", 3306}) == ChannelMatch::kAddress);
  st.source_server_id = 0;  // never connected
  st.io_running = true;
  CHECK(MatchSource(st, {1, "db1", 3306}) == ChannelMatch::kAddress);
  st.source_host.clear();
  CHECK(MatchSource(st, {std::nullopt, "", 3306}) == ChannelMatch::kNone);
}

TEST_CASE("NeedsAllConnections: MariaDB without its default connection from the primary") {
  ServerFlavor mariadb;
  mariadb.kind = ServerFlavor::kMariaDB;
  ServerFlavor mysql;
  mysql.kind = ServerFlavor::kMySQL;
  const ChannelSource primary{101, "db01.example.com", 3306};
  QueryResult none;
  none.columns = {"Slave_IO_Running", "Slave_SQL_Running"};
  CHECK(NeedsAllConnections(none, mariadb, primary));  // only named connections, or none
  CHECK_FALSE(NeedsAllConnections(none, mysql, primary));
  const QueryResult from_primary = Fixture("mariadb-kb-show-slave-status.txt");
  CHECK_FALSE(NeedsAllConnections(from_primary, mariadb, primary));
  CHECK(NeedsAllConnections(from_primary, mariadb, {999, "db09", 3306}));
  CHECK_FALSE(NeedsAllConnections(from_primary, mysql, {999, "db09", 3306}));
  CHECK_FALSE(NeedsAllConnections(Row({"x"}, {"y"}), mariadb, primary));  // unparsable: as is
}

TEST_CASE("ParseSlaveStatus: a row with both families reads the Replica_* names") {
  auto st = ParseSlaveStatus(Row({"Slave_IO_Running", "Slave_SQL_Running", "Replica_IO_Running",
                                  "Replica_SQL_Running", "Master_Host", "Source_Host"},
                                 {"No", "No", "Yes", "Yes", "old", "new"}));
  REQUIRE(st.ok());
  CHECK(st->column_family == ColumnFamily::kReplica);
  CHECK(st->io_running);
  CHECK(st->source_host == "new");
}

}  // namespace
}  // namespace lagwatch
