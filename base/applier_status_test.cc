#include "base/applier_status.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/mysql_errors.h"
#include "base/vertical_result.h"

namespace lagwatch {
namespace {

constexpr char kUuid[] = "73f86016-978b-11ee-ade5-8d2a2a562feb";

QueryResult Load(const std::string& name) {
  QueryResult r = LoadVerticalResult(std::string(LAGWATCH_TESTDATA_DIR) + "/" + name);
  REQUIRE_MESSAGE(!r.rows.empty(), name);
  return r;
}

// The MySQL 8.0 replica of base/testdata/mysql-8.0-replication-*: four workers, two applying.
ApplierTables MySql80Tables() {
  return {Load("mysql-8.0-replication-applier-status-by-worker.txt"),
          Load("mysql-8.0-replication-applier-status-by-coordinator.txt"),
          Load("mysql-8.0-replication-connection-status.txt"), "2023-02-07 10:12:33.750000"};
}

std::string Gtid(int n) { return std::string(kUuid) + ":" + std::to_string(n); }

TEST_CASE("a MySQL 8.0 multithreaded replica: four workers, two applying, the oldest by start") {
  auto st = ParseApplierTables(MySql80Tables());
  REQUIRE(st.ok());
  CHECK(st->replica_now == "2023-02-07 10:12:33.750000");
  REQUIRE(st->channels.size() == 1);
  const ApplierChannel& ch = st->channels[0];
  CHECK(ch.name == "");
  CHECK(ch.workers == 4);
  CHECK(ch.workers_on == 4);
  CHECK(ch.applying == 2);
  // Worker 3's transaction 1204 started applying before worker 1's 1205.
  REQUIRE(ch.oldest_applying.has_value());
  CHECK(*ch.oldest_applying == ApplierTransaction{Gtid(1204), "2023-02-07 10:12:33.100000",
                                                  "2023-02-07 10:12:33.100000",
                                                  "2023-02-07 10:12:33.180000"});
  CHECK(ch.oldest_applying_age_us == 570'000);  // 10:12:33.750000 - 10:12:33.180000
  REQUIRE(ch.coordinator.has_value());
  CHECK(ch.coordinator->service_state == "ON");
  CHECK(ch.coordinator->processing == ApplierTransaction{Gtid(1206), "2023-02-07 10:12:33.102000",
                                                         "2023-02-07 10:12:33.102000",
                                                         "2023-02-07 10:12:33.700000"});
  CHECK(ch.coordinator->last_processed ==
        ApplierTransaction{Gtid(1205), "2023-02-07 10:12:33.101000", "2023-02-07 10:12:33.101000",
                           "2023-02-07 10:12:33.201000"});
  CHECK(ch.receiver_state == "ON");
  CHECK(ch.last_heartbeat == "2023-02-07 10:12:30.004512");
  CHECK(ch.received_heartbeats == 1523);
}

TEST_CASE("the statement's one-round-trip reply reads as the three tables it selects from") {
  const QueryResult reply = Load("mysql-8.0-applier-status-reply.txt");
  auto from_reply = ParseApplierReply(reply);
  auto from_tables = ParseApplierTables(MySql80Tables());
  REQUIRE(from_reply.ok());
  REQUIRE(from_tables.ok());
  CHECK(*from_reply == *from_tables);

  // Split back, each table has the rows of the manual's table, under its own column names, with
  // the cells of the columns the statement reads.
  auto split = SplitApplierReply(reply);
  REQUIRE(split.ok());
  const ApplierTables full = MySql80Tables();
  CHECK(split->replica_now == full.replica_now);
  for (auto [part, whole] : {std::pair{&split->workers, &full.workers},
                             {&split->coordinators, &full.coordinators},
                             {&split->connections, &full.connections}}) {
    REQUIRE(part->rows.size() == whole->rows.size());
    CHECK(part->columns.size() >= 3);
    for (size_t c = 0; c < part->columns.size(); ++c) {
      CAPTURE(part->columns[c]);
      const int in_whole = whole->Column(part->columns[c]);
      REQUIRE(in_whole >= 0);  // every column the statement names is in the manual's table
      for (size_t row = 0; row < part->rows.size(); ++row) {
        CHECK(part->rows[row][c] == whole->rows[row][in_whole]);
      }
    }
  }
}

TEST_CASE("the statement selects every column it splits by from each table, in one UNION ALL") {
  const std::string& sql = ApplierStatusStatement();
  CHECK(sql.starts_with("SELECT 'worker' AS SOURCE_TABLE, CHANNEL_NAME"));
  for (const char* table : {"performance_schema.replication_applier_status_by_worker",
                            "performance_schema.replication_applier_status_by_coordinator",
                            "performance_schema.replication_connection_status"}) {
    CHECK(sql.find(std::string("FROM ") + table) != std::string::npos);
  }
  size_t unions = 0;
  for (size_t at = sql.find("UNION ALL"); at != std::string::npos;
       at = sql.find("UNION ALL", at + 1)) {
    ++unions;
  }
  CHECK(unions == 2);
  // Every column of the split tables is named in the statement.
  auto split = SplitApplierReply(QueryResult{});
  REQUIRE(split.ok());
  for (const QueryResult* t : {&split->workers, &split->coordinators, &split->connections}) {
    for (const std::string& c : t->columns) {
      CAPTURE(c);
      CHECK(sql.find(", " + c) != std::string::npos);
    }
  }
  CHECK(sql.find("NOW(6) AS REPLICA_NOW") != std::string::npos);
}

TEST_CASE(
    "the oldest applying transaction is the one that started applying first, not the "
    "first committed") {
  ApplierTables t = MySql80Tables();
  // Worker 1's 1205 (committed after 1204) now started applying before worker 3's 1204.
  t.workers.rows[0][t.workers.Column("APPLYING_TRANSACTION_START_APPLY_TIMESTAMP")] =
      "2023-02-07 10:12:33.150000";
  auto st = ParseApplierTables(t);
  REQUIRE(st.ok());
  CHECK(st->channels[0].oldest_applying->gtid == Gtid(1205));
  CHECK(st->channels[0].oldest_applying_age_us == 600'000);
}

TEST_CASE(
    "a MySQL 8.4 single-threaded replica with two channels: one worker row each, no "
    "coordinator") {
  ApplierTables t{Load("mysql-8.4-replication-applier-status-by-worker-two-channels.txt"),
                  QueryResult{},  // the coordinator table is empty on a single-threaded replica
                  Load("mysql-8.4-replication-connection-status-two-channels.txt"),
                  "2024-05-14 08:30:02.620456"};
  auto st = ParseApplierTables(t);
  REQUIRE(st.ok());
  REQUIRE(st->channels.size() == 2);
  const ApplierChannel& one = st->channels[0];
  const ApplierChannel& two = st->channels[1];
  CHECK(one.name == "source_1");
  CHECK(two.name == "source_2");
  for (const ApplierChannel* ch : {&one, &two}) {
    CHECK(ch->workers == 1);
    CHECK_FALSE(ch->coordinator.has_value());
  }
  CHECK(one.workers_on == 1);
  CHECK(one.applying == 1);
  REQUIRE(one.oldest_applying.has_value());
  CHECK(one.oldest_applying->gtid == "046e41f8-a223-11e4-a975-0811960cc264:38");
  CHECK(one.oldest_applying->started == "2024-05-14 08:30:02.120456");
  CHECK(one.oldest_applying_age_us == 500'000);
  CHECK(one.receiver_state == "ON");
  CHECK(one.last_heartbeat == "2024-05-14 08:29:58.004001");
  CHECK(one.received_heartbeats == 87);
  // Stopped on an error: its thread is gone, nothing is applying.
  CHECK(two.workers_on == 0);
  CHECK(two.applying == 0);
  CHECK_FALSE(two.oldest_applying.has_value());
  CHECK_FALSE(two.oldest_applying_age_us.has_value());
  CHECK(two.receiver_state == "CONNECTING");
  CHECK(two.received_heartbeats == 12);

  // The channel shown is the one lagwatch judges, by name; with two there is no default.
  CHECK(st->Channel("source_2") == &two);
  CHECK(st->Channel("") == nullptr);
  CHECK(st->Channel("other") == nullptr);
}

TEST_CASE("the manual's replication_connection_status example: no heartbeat yet is none") {
  ApplierTables t;
  t.connections = Load("mysql-replication-connection-status-manual-example.txt");
  auto st = ParseApplierTables(t);
  REQUIRE(st.ok());
  REQUIRE(st->channels.size() == 2);
  for (const ApplierChannel& ch : st->channels) {
    CAPTURE(ch.name);
    CHECK(ch.last_heartbeat == "");  // 0000-00-00 00:00:00
    CHECK(ch.received_heartbeats == 0);
    CHECK(ch.receiver_state == "ON");
    CHECK(ch.workers == 0);  // no row of the worker table was given
  }
  CHECK(st->replica_now == "");
  // One channel alone is shown whatever lagwatch judges.
  t.connections.rows.pop_back();
  st = ParseApplierTables(t);
  REQUIRE(st.ok());
  CHECK(st->Channel("something else") == &st->channels[0]);
}

TEST_CASE("no rows is no channel; a reply row from no table, or no SOURCE_TABLE, is a data error") {
  auto none = ParseApplierReply(QueryResult{});
  REQUIRE(none.ok());
  CHECK(none->channels.empty());

  QueryResult reply = Load("mysql-8.0-applier-status-reply.txt");
  reply.rows[2][0] = "slave";
  auto bad = ParseApplierReply(reply);
  CHECK(bad.status().code() == Status::Code::kDataError);
  CHECK(bad.status().message().find("'slave'") != std::string::npos);
  reply.rows[2][0] = std::nullopt;
  CHECK(ParseApplierReply(reply).status().code() == Status::Code::kDataError);

  QueryResult headless = Load("mysql-8.0-applier-status-reply.txt");
  headless.columns[0] = "KIND";
  auto no_source = ParseApplierReply(headless);
  CHECK(no_source.status().code() == Status::Code::kDataError);
  CHECK(no_source.status().message().find("SOURCE_TABLE") != std::string::npos);
}

TEST_CASE(
    "MySQL 5.7's worker table (LAST_SEEN_TRANSACTION, no APPLYING_TRANSACTION) is a data "
    "error naming the column") {
  // https://dev.mysql.com/doc/refman/5.7/en/performance-schema-replication-applier-status-by-worker-table.html
  ApplierTables t;
  t.workers.columns = {
      "CHANNEL_NAME",          "WORKER_ID",         "THREAD_ID",          "SERVICE_STATE",
      "LAST_SEEN_TRANSACTION", "LAST_ERROR_NUMBER", "LAST_ERROR_MESSAGE", "LAST_ERROR_TIMESTAMP"};
  t.workers.rows.push_back({"", "1", "25", "ON", Gtid(7), "0", "", "0000-00-00 00:00:00"});
  auto st = ParseApplierTables(t);
  CHECK(st.status().code() == Status::Code::kDataError);
  CHECK(st.status().message() ==
        "replication_applier_status_by_worker has no APPLYING_TRANSACTION column");

  for (QueryResult* table : {&t.workers, &t.coordinators, &t.connections}) {
    *table = QueryResult{};
    table->columns = {"SERVICE_STATE", "APPLYING_TRANSACTION"};
    table->rows.push_back({"ON", ""});
    auto no_channel = ParseApplierTables(t);
    CHECK(no_channel.status().code() == Status::Code::kDataError);
    CHECK(no_channel.status().message().find("has no CHANNEL_NAME column") != std::string::npos);
    *table = QueryResult{};
  }
}

TEST_CASE("hostile cells are skipped fields: NULLs, junk numbers and timestamps, short rows") {
  ApplierTables t = MySql80Tables();
  const int start = t.workers.Column("APPLYING_TRANSACTION_START_APPLY_TIMESTAMP");
  const int orig = t.workers.Column("APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP");
  const int trx = t.workers.Column("APPLYING_TRANSACTION");
  const int state = t.workers.Column("SERVICE_STATE");
  // Worker 3 (the oldest): its start is junk, so worker 1's readable start is the oldest's.
  t.workers.rows[2][start] = "2023-02-30 10:12:33.180000";
  t.workers.rows[2][orig] = "yesterday";
  // Worker 2: NULL transaction and state (idle, not ON); worker 4 a row cut short.
  t.workers.rows[1][trx] = std::nullopt;
  t.workers.rows[1][state] = std::nullopt;
  t.workers.rows[3].resize(2);
  const int count = t.connections.Column("COUNT_RECEIVED_HEARTBEATS");
  const int beat = t.connections.Column("LAST_HEARTBEAT_TIMESTAMP");
  t.connections.rows[0][count] = "-5";
  t.connections.rows[0][beat] = "2023-02-07 10:12:30.0045123";  // seven fraction digits
  t.coordinators.rows[0][t.coordinators.Column("PROCESSING_TRANSACTION")] = "";
  auto st = ParseApplierTables(t);
  REQUIRE(st.ok());
  const ApplierChannel& ch = st->channels.at(0);
  CHECK(ch.workers == 4);
  CHECK(ch.workers_on == 2);  // NULL and the cut row are not ON
  CHECK(ch.applying == 2);
  REQUIRE(ch.oldest_applying.has_value());
  CHECK(ch.oldest_applying->gtid == Gtid(1205));
  CHECK(ch.oldest_applying_age_us == 500'000);
  CHECK_FALSE(ch.received_heartbeats.has_value());
  CHECK(ch.last_heartbeat == "");
  REQUIRE(ch.coordinator.has_value());
  CHECK_FALSE(ch.coordinator->processing.has_value());  // an empty GTID is none

  // Only unreadable starts: the earliest original commit decides, and no age is known.
  t.workers.rows[0][start] = "0000-00-00 00:00:00.000000";
  t.workers.rows[2][orig] = "2023-02-07 10:12:33.100000";
  st = ParseApplierTables(t);
  REQUIRE(st.ok());
  CHECK(st->channels[0].oldest_applying->gtid == Gtid(1204));
  CHECK_FALSE(st->channels[0].oldest_applying_age_us.has_value());

  // A start after the replica's NOW(6) (clock stepped back, or hostile): no age, not negative.
  t = MySql80Tables();
  t.replica_now = "2023-02-07 10:12:33.000000";
  st = ParseApplierTables(t);
  REQUIRE(st.ok());
  CHECK_FALSE(st->channels[0].oldest_applying_age_us.has_value());
  t.replica_now = "now";
  st = ParseApplierTables(t);
  REQUIRE(st.ok());
  CHECK(st->replica_now == "");
  CHECK_FALSE(st->channels[0].oldest_applying_age_us.has_value());
}

TEST_CASE("server timestamps: MySQL's shape with 0 to 6 fraction digits; the zero value is none") {
  CHECK(ParseServerTimestampUs("1970-01-01 00:00:00") == 0);
  CHECK(ParseServerTimestampUs("1970-01-01 00:00:01.5") == 1'500'000);
  CHECK(ParseServerTimestampUs("1970-01-02 00:00:00.000001") == 86'400'000'001);
  CHECK(ParseServerTimestampUs("2023-02-07 10:12:33.123456") == 1'675'764'753'123'456);
  CHECK(ParseServerTimestampUs("2038-01-19 03:14:07.999999") == 2'147'483'647'999'999);
  CHECK(ParseServerTimestampUs("2024-02-29 23:59:59") == 1'709'251'199'000'000);
  CHECK(ParseServerTimestampUs("1969-12-31 23:59:59") == -1'000'000);  // a zone west of UTC
  for (const char* none :
       {"0000-00-00 00:00:00", "0000-00-00 00:00:00.000000", "0000-00-00 00:00:00.0"}) {
    CAPTURE(none);
    CHECK_FALSE(ParseServerTimestampUs(none).has_value());
  }
  for (const char* junk :
       {"", "2023-02-07", "2023-02-07 10:12:33.", "2023-02-07 10:12:33.1234567",
        "2023-02-07T10:12:33", "2023-02-07 10:12:33Z", "2023-13-07 10:12:33", "2023-02-29 10:12:33",
        "2023-02-07 24:00:00", "2023-02-07 10:60:00", "2023-02-07 10:12:60", "0999-02-07 10:12:33",
        "+023-02-07 10:12:33", "2023-02-07 10:12:3x", "2023-02-07 10:12:33.12a",
        "2023/02/07 10:12:33", " 2023-02-07 10:12:33", "2023-02-07 10:12:33 "}) {
    CAPTURE(junk);
    CHECK_FALSE(ParseServerTimestampUs(junk).has_value());
  }
}

ServerFlavor Flavor(std::string_view version, std::string_view comment) {
  return ParseServerFlavor(version, comment);
}

TEST_CASE("the applier tables are asked of MySQL and Percona Server 8.0 and later only") {
  // Version strings as the MySQL and MariaDB manuals and packages print them
  // (base/server_flavor_test.cc).
  CHECK(HasApplierTables(Flavor("8.0.36", "MySQL Community Server - GPL")));
  CHECK(HasApplierTables(Flavor("8.0.0-dmr-log", "MySQL Community Server (GPL)")));
  CHECK(HasApplierTables(Flavor("8.4.3", "MySQL Community Server - GPL")));
  CHECK(HasApplierTables(Flavor("9.1.0", "MySQL Community Server - GPL")));
  CHECK(HasApplierTables(Flavor("8.0.35-27", "Percona Server (GPL), Release '27', Revision 'x'")));
  CHECK_FALSE(HasApplierTables(Flavor("5.7.44-log", "MySQL Community Server (GPL)")));
  CHECK_FALSE(HasApplierTables(Flavor("10.11.6-MariaDB-0+deb12u1-log", "Debian 12")));
  CHECK_FALSE(HasApplierTables(Flavor("11.4.2-MariaDB", "mariadb.org binary distribution")));
  CHECK_FALSE(HasApplierTables(Flavor("", "")));
  CHECK_FALSE(HasApplierTables(ServerFlavor{}));
}

TEST_CASE(
    "the gate: asked at the status interval on MySQL 8.0+; a refusal stops it until the next "
    "connection") {
  ApplierGate gate;
  CHECK_FALSE(gate.Ask(true));  // the flavor is not known yet
  CHECK(gate.why_not() == "");

  gate.SetFlavor(Flavor("8.0.36", "MySQL Community Server - GPL"));
  CHECK(gate.Ask(true));
  CHECK_FALSE(gate.Ask(false));  // never between status intervals
  CHECK(gate.why_not() == "");

  CHECK(std::string(gate.Refuse(kErTableAccessDenied,
                                "SELECT command denied to user 'lagwatch_probe'@'10.0.0.9' for "
                                "table 'replication_applier_status_by_worker'")) == "denied");
  CHECK_FALSE(gate.Ask(true));
  CHECK(gate.why_not().find("refused on this connection (SELECT command denied") == 0);
  CHECK(gate.why_not().find("performance_schema.*") != std::string::npos);
  // Not on this connection, whatever its server says of itself again.
  gate.SetFlavor(Flavor("8.0.36", "MySQL Community Server - GPL"));
  CHECK_FALSE(gate.Ask(true));

  gate.Reset();  // a new connection: asked again once its server is known
  CHECK_FALSE(gate.Ask(true));
  gate.SetFlavor(Flavor("8.0.36", "MySQL Community Server - GPL"));
  CHECK(gate.Ask(true));
  gate.Reset();
  gate.SetFlavor(Flavor("10.11.6-MariaDB-0+deb12u1-log", "Debian 12"));
  CHECK_FALSE(gate.Ask(true));
  CHECK(gate.why_not().find("MariaDB") != std::string::npos);
  gate.Reset();
  gate.SetFlavor(Flavor("5.7.44-log", "MySQL Community Server (GPL)"));
  CHECK_FALSE(gate.Ask(true));
  CHECK(gate.why_not() ==
        "not asked: MySQL 5.7.44-log (MySQL Community Server (GPL)) is not "
        "MySQL 8.0+");
  gate.Reset();
  gate.SetFlavor(ServerFlavor{});
  CHECK_FALSE(gate.Ask(true));
  CHECK(gate.why_not().find("unknown server") != std::string::npos);
}

TEST_CASE("refusals are counted by what they lack: a privilege, a table or column, or other") {
  CHECK(std::string(ApplierErrorReason(kErTableAccessDenied)) == "denied");     // 1142
  CHECK(std::string(ApplierErrorReason(kErColumnAccessDenied)) == "denied");    // 1143
  CHECK(std::string(ApplierErrorReason(kErDbAccessDenied)) == "denied");        // 1044
  CHECK(std::string(ApplierErrorReason(kErSpecificAccessDenied)) == "denied");  // 1227
  CHECK(std::string(ApplierErrorReason(kErNoSuchTable)) == "no_table");         // 1146
  CHECK(std::string(ApplierErrorReason(kErBadField)) == "no_table");            // 1054
  CHECK(std::string(ApplierErrorReason(kErBadDb)) == "no_table");               // 1049
  CHECK(std::string(ApplierErrorReason(kErParseError)) == "server_error");
  CHECK(std::string(ApplierErrorReason(0)) == "server_error");
  std::vector<std::string> reasons(std::begin(kApplierErrorReasons),
                                   std::end(kApplierErrorReasons));
  CHECK(reasons == std::vector<std::string>{"denied", "no_table", "server_error", "bad_data"});
}

}  // namespace
}  // namespace lagwatch
