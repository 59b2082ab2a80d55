#include "agent/assessment.h"

#include <doctest/doctest.h>

#include <memory>

#include "agent/recorded_primary_test.h"
#include "base/fake_thread_counters.h"
#include "base/vertical_result.h"

namespace lagwatch {
namespace {

using testing::P;
using testing::T;

using Primary = testing::RecordedPrimary;

QueryResult ProbeRow(std::optional<std::string> seq, std::optional<std::string> pos) {
  QueryResult r;
  r.columns = {"seq", "pos"};
  r.rows.push_back({std::move(seq), std::move(pos)});
  return r;
}

QueryResult SlaveStatus(const char* io, const char* sql) {
  QueryResult r;
  r.columns = {"Slave_IO_Running", "Slave_SQL_Running", "Seconds_Behind_Master", "Relay_Log_Space",
               "Last_SQL_Error"};
  r.rows.push_back({io, sql, std::string("0"), std::string("1024"), std::string("")});
  return r;
}

ProbeInput Probe(int sent_ms, int received_ms, Result<QueryResult> reply) {
  ProbeInput in;
  in.reply = std::move(reply);
  in.obs.sent = T(sent_ms);
  in.obs.received = T(received_ms);
  in.max_delay_ms = 200;
  return in;
}

TEST_CASE("assessment: a caught-up replica's row gives position bounds and a healthy input") {
  Primary primary(2100);
  Assessment a = Assess(Probe(2120, 2122, ProbeRow("4", "0-1-4")), primary.log, primary.history);
  CHECK(a.probe_status.ok());
  CHECK(a.measured);
  REQUIRE(a.bounds);
  CHECK(a.bounds->upper_source == BoundSource::kPosition);
  CHECK(a.obs.seq == 4u);
  CHECK(a.health.delay_ms == 22);  // the newest sample was sent at 2100
  CHECK(a.health.reachable);
  CHECK(a.health.threads_running);  // no status poll yet: unknown counts as running
  CHECK(a.health.caught_up_with_primary);
  CHECK(a.health.max_delay_ms == 200);
}

TEST_CASE("assessment: while the primary is read-only, no bound is fresher than fresh_not_after") {
  Primary primary(2100);
  // Caught up with the sample sent at 2100 (22 ms at 2122), but another server may have taken
  // writes since 2040: the bound is from 2040.
  ProbeInput in = Probe(2120, 2122, ProbeRow("4", "0-1-4"));
  in.fresh_not_after = T(2040);
  Assessment a = Assess(in, primary.log, primary.history);
  REQUIRE(a.bounds);
  CHECK(a.bounds->fresh_at == T(2040));
  CHECK(a.health.delay_ms == 82);
  // A later limit leaves the bound as it was.
  in = Probe(2120, 2122, ProbeRow("4", "0-1-4"));
  in.fresh_not_after = T(2110);
  CHECK(Assess(in, primary.log, primary.history).health.delay_ms == 22);
  // No answer: the kept bound is relocated, then limited the same way.
  in = Probe(2120, 2270, Status::DeadlineExceeded("no answer in time"));
  in.bounds = LagBounds{T(2000)};
  in.previous_applied = P("0-1-4");
  in.fresh_not_after = T(2040);
  a = Assess(in, primary.log, primary.history);
  REQUIRE(a.bounds);
  CHECK(a.bounds->fresh_at == T(2040));
}

TEST_CASE("assessment: a replica behind by two heartbeats has the delay of what it lacks") {
  Primary primary(2100);
  Assessment a = Assess(Probe(2120, 2122, ProbeRow("2", "0-1-2")), primary.log, primary.history);
  REQUIRE(a.health.delay_ms);
  // It has 0-1-2, the primary's position in the sample sent at 1450; the next one, sent at 1500,
  // had 0-1-3. So it is fresh as of 1450: at most 672 ms behind at 2122.
  CHECK(*a.health.delay_ms == 672);
  CHECK(a.bounds->lower >= Millis(600));
  CHECK_FALSE(a.health.caught_up_with_primary);
}

TEST_CASE("assessment: an unreachable replica keeps its previous bounds, which keep growing") {
  Primary primary(2100);
  ProbeInput in = Probe(2120, 2270, Status::DeadlineExceeded("no answer in time"));
  in.bounds = LagBounds{T(2000)};
  const Assessment a = Assess(in, primary.log, primary.history);
  CHECK_FALSE((a.measured || a.health.reachable));
  CHECK(a.probe_status.code() == Status::Code::kDeadlineExceeded);
  CHECK(a.health.delay_ms == 270);
}

TEST_CASE("assessment: an unanswered probe's bound grows from what the replica lacks") {
  // The replica answered with 0-1-4 (fresh as of 2000), then hung. The primary wrote nothing new
  // until 2500: each sample up to 2450 still had only what the replica has.
  Primary primary(2600);
  ProbeInput in = Probe(2420, 2470, Status::DeadlineExceeded("no answer in time"));
  in.bounds = LagBounds{T(2000)};
  in.previous_applied = P("0-1-4");
  Assessment a = Assess(in, primary.log, primary.history);
  CHECK_FALSE(a.measured);
  REQUIRE(a.bounds);
  CHECK(a.bounds->upper_source == BoundSource::kPosition);
  CHECK(a.health.delay_ms == 20);  // from the sample at 2450, not 470 from the last answer
  // A position older than what the kept bound proves moves nothing.
  in.previous_applied = P("0-1-3");
  a = Assess(in, primary.log, primary.history);
  CHECK(a.health.delay_ms == 470);
}

TEST_CASE("assessment: a malformed seq is a data error but the position still bounds the lag") {
  Primary primary(2100);
  Assessment a = Assess(Probe(2120, 2122, ProbeRow("junk", "0-1-4")), primary.log, primary.history);
  CHECK(a.probe_status.code() == Status::Code::kDataError);
  CHECK(a.measured);
  CHECK_FALSE(a.obs.seq);
  CHECK(a.health.delay_ms == 22);
}

TEST_CASE("assessment: a reply without our row is a data error with no bounds") {
  Primary primary(2100);
  QueryResult empty;
  empty.columns = {"seq", "pos"};
  Assessment a = Assess(Probe(2120, 2122, empty), primary.log, primary.history);
  CHECK(a.probe_status.code() == Status::Code::kDataError);
  CHECK_FALSE(a.bounds);
  CHECK_FALSE(a.health.delay_ms);
}

TEST_CASE("assessment: a stopped SQL thread in the status reply makes the input not running") {
  Primary primary(2100);
  ProbeInput in = Probe(2120, 2122, ProbeRow("4", "0-1-4"));
  in.status_reply = SlaveStatus("Yes", "No");
  Assessment a = Assess(in, primary.log, primary.history);
  CHECK(a.status_polled);
  CHECK(a.status.known);
  CHECK_FALSE(a.health.threads_running);
  CHECK(a.status.relay_log_space == 1024u);

  // An IO thread that is still connecting is running.
  in.status_reply = SlaveStatus("Connecting", "Yes");
  CHECK(Assess(in, primary.log, primary.history).health.threads_running);
}

TEST_CASE(
    "assessment: a refused status poll names the missing privilege and keeps the old status") {
  Primary primary(2100);
  ProbeInput in = Probe(2120, 2122, ProbeRow("4", "0-1-4"));
  in.status.known = true;
  in.status.sql_running = true;
  in.status.io_state = "Yes";
  in.status_reply = Result<QueryResult>(Status::ServerError("Access denied"));
  in.status_access_denied = true;
  Assessment a = Assess(in, primary.log, primary.history);
  REQUIRE(a.status_error);
  CHECK(a.status_error->message().find("SLAVE MONITOR") != std::string::npos);
  CHECK_FALSE(a.status_polled);
  CHECK(a.status.known);
  CHECK(a.health.threads_running);
}

TEST_CASE("primary known: a sample overdue by more than one interval makes the primary unknown") {
  Primary primary(2100);
  const Millis hb(500), sampling(50);
  CHECK(PrimaryKnown(T(2120), primary.log, primary.history, hb, sampling));
  primary.history.BeginSample(T(2150));
  CHECK(PrimaryKnown(T(2190), primary.log, primary.history, hb, sampling));
  CHECK_FALSE(PrimaryKnown(T(2201), primary.log, primary.history, hb, sampling));
}

TEST_CASE("primary known: an agent kept from running does not take its delay for the primary's") {
  Primary primary(2100);
  const Millis hb(500), sampling(50);
  auto sampler = std::make_shared<FakeCounters>();
  primary.history.BeginSample(T(2150), sampler);
  // 100 ms later the sampler has not read the answer: it was held back (runnable) for all of it.
  sampler->runnable = true;
  CHECK(PrimaryKnown(T(2250), primary.log, primary.history, hb, sampling));
  // It ran for 60 ms of that, then slept on a lock: 40 ms awaited, within one interval.
  sampler->runnable = false;
  sampler->busy = Millis(60);
  CHECK(PrimaryKnown(T(2250), primary.log, primary.history, hb, sampling));
  // Asleep, waiting for the answer, for 51 ms more: overdue.
  CHECK_FALSE(PrimaryKnown(T(2301), primary.log, primary.history, hb, sampling));
}

TEST_CASE("primary known: without positions, three heartbeat intervals without an ack") {
  HeartbeatLog log;
  log.RecordSent(1, T(500));
  log.RecordAcked(1, T(502));
  PositionHistory none;
  CHECK(PrimaryKnown(T(2002), log, none, Millis(500), Millis(50)));
  CHECK_FALSE(PrimaryKnown(T(2003), log, none, Millis(500), Millis(50)));
  log.RecordFailure(T(600));
  CHECK_FALSE(PrimaryKnown(T(700), log, none, Millis(500), Millis(50)));
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

// The MySQL 8.0/8.4/9.x manuals' SHOW REPLICA STATUS example (base/testdata): its SQL thread has
// executed master-bin.000001 up to 927, from the source with server id 1.
QueryResult ManualReplicaStatus() {
  return LoadVerticalResult(std::string(LAGWATCH_TESTDATA_DIR) +
                            "/mysql-8.x-9.x-show-replica-status.txt");
}

// A primary whose binary log is master-bin.000001 at 900 until the heartbeat at 500 ms, at 927
// until the one at 1000 ms, then at 954: sampled every 50 ms.
struct CoordsPrimary {
  HeartbeatLog log;
  PositionHistory history;
  CoordsPrimary() {
    history.SetSource(PositionsKind::kBinlog, 1);
    for (int k = 1; k <= 2; ++k) {
      log.RecordSent(static_cast<uint64_t>(k), T(500 * k));
      log.RecordAcked(static_cast<uint64_t>(k), T(500 * k + 2));
    }
    for (int t = 0; t <= 1000; t += 50) {
      const uint64_t pos = 900 + 27 * static_cast<uint64_t>(t / 500);
      history.Add(ParseBinlogCoords("master-bin.000001", pos).value(), T(t), T(t + 1));
    }
  }
};

ProbeInput CoordsProbe() {
  QueryResult seq;
  seq.columns = {"seq"};
  seq.rows.push_back({std::string("1")});
  ProbeInput in = Probe(1020, 1022, seq);
  in.positions = PositionsKind::kBinlog;
  in.primary_server_id = 1;
  in.status_reply = ManualReplicaStatus();
  return in;
}

TEST_CASE(
    "assessment, binlog: executed source coordinates from SHOW REPLICA STATUS bound the lag") {
  CoordsPrimary primary;
  const Assessment a = Assess(CoordsProbe(), primary.log, primary.history);
  CHECK(a.probe_status.ok());
  CHECK_FALSE(a.position_error);
  CHECK_FALSE(a.chained);
  REQUIRE(a.bounds);
  CHECK(a.bounds->upper_source == BoundSource::kPosition);
  // At 927, the position of the samples sent 500-950; 954 was seen at 1001.
  CHECK(a.health.delay_ms == 72);
  CHECK(a.bounds->lower == Millis(19));
  REQUIRE(a.applied);
  CHECK(a.applied->ToString() == "master-bin.000001:927");
}

TEST_CASE("assessment, binlog: an unanswered probe moves the bound by the coordinates sampled") {
  // The replica last read master-bin.000001:927, the primary's position from the sample at 500
  // to the one at 950; the one at 1000 read 954.
  CoordsPrimary primary;
  ProbeInput in = Probe(1020, 1040, Status::DeadlineExceeded("no answer in time"));
  in.positions = PositionsKind::kBinlog;
  in.primary_server_id = 1;
  in.bounds = LagBounds{T(500)};
  in.previous_applied = Position(ParseBinlogCoords("master-bin.000001", 927).value());
  const Assessment a = Assess(in, primary.log, primary.history);
  CHECK_FALSE(a.measured);
  REQUIRE(a.bounds);
  CHECK(a.bounds->upper_source == BoundSource::kPosition);
  CHECK(a.health.delay_ms == 90);  // from the sample at 950, not 540 from the kept bound
}

TEST_CASE("assessment, binlog: a replica of another source is compared by heartbeat only") {
  CoordsPrimary primary;
  ProbeInput in = CoordsProbe();
  in.primary_server_id = 2;  // the manual's replica reads from server id 1
  const Assessment a = Assess(in, primary.log, primary.history);
  CHECK(a.chained);
  CHECK_FALSE(a.position_error);
  REQUIRE(a.bounds);
  CHECK(a.bounds->upper_source == BoundSource::kHeartbeat);
  CHECK(a.health.delay_ms == 522);  // seq 1, sent at 500
  // The primary's server id unknown: not compared either.
  in.primary_server_id.reset();
  CHECK(Assess(in, primary.log, primary.history).chained);
}

TEST_CASE("assessment, binlog: of two channels, the primary's coordinates bound the lag") {
  // MySQL 8.0 with two channels (base/testdata, from
  // https://dev.mysql.com/doc/refman/8.0/en/replication-channels.html): the first, source_2,
  // from another source at other-bin.000003:3922; the second, source_1, the manual's example.
  CoordsPrimary primary;
  ProbeInput in = CoordsProbe();
  in.status_reply = LoadVerticalResult(std::string(LAGWATCH_TESTDATA_DIR) +
                                       "/mysql-8.0-show-replica-status-two-channels.txt");
  in.primary_source = {1, "127.0.0.1", 13000};
  const Assessment a = Assess(in, primary.log, primary.history);
  CHECK(a.status.channel_name == "source_1");
  CHECK_FALSE(a.chained);
  CHECK_FALSE(a.position_error);
  REQUIRE(a.applied);
  CHECK(a.applied->ToString() == "master-bin.000001:927");
  CHECK(a.health.delay_ms == 72);  // as with the manual's one channel
  CHECK(a.health.threads_running);
  // No channel from the primary: the first row's coordinates are another source's and are not
  // compared (heartbeat only), and its stopped threads do not make the replica stopped.
  in.primary_source = {9, "10.9.9.9", 3306};
  const Assessment none = Assess(in, primary.log, primary.history);
  CHECK(none.status.channel_match == ChannelMatch::kNone);
  CHECK(none.chained);
  CHECK_FALSE(none.applied);
  CHECK(none.bounds->upper_source == BoundSource::kHeartbeat);
  CHECK(none.health.threads_running);
}

TEST_CASE("assessment, binlog: coordinates that go backwards or cannot be read are not used") {
  CoordsPrimary primary;
  ProbeInput in = CoordsProbe();
  in.previous_applied = Position(ParseBinlogCoords("master-bin.000001", 2000).value());
  Assessment a = Assess(in, primary.log, primary.history);
  REQUIRE(a.position_error);
  CHECK(a.position_error->message().find("does not include the previous") != std::string::npos);
  CHECK(a.bounds->upper_source == BoundSource::kHeartbeat);
  CHECK(a.applied->ToString() == "master-bin.000001:927");  // compared with from now on

  // MySQL's GTID_ONLY channels show "INVALID" after a restart; another base name cannot be
  // compared with the primary's coordinates.
  for (const char* file : {"INVALID", "relay-bin.000001", "master-bin", ""}) {
    in = CoordsProbe();
    QueryResult status = ManualReplicaStatus();
    for (size_t i = 0; i < status.columns.size(); ++i) {
      if (status.columns[i] == "Relay_Source_Log_File") status.rows[0][i] = std::string(file);
    }
    in.status_reply = status;
    a = Assess(in, primary.log, primary.history);
    CAPTURE(file);
    REQUIRE(a.position_error);
    CHECK(a.bounds->upper_source == BoundSource::kHeartbeat);
    CHECK(a.probe_status.ok());
  }
}

TEST_CASE("assessment, binlog: MySQL 5.7's SHOW SLAVE STATUS names give the same coordinates") {
  // The 5.7 manual's example: Relay_Master_Log_File source-bin.000002, Exec_Master_Log_Pos 1307,
  // Master_Server_Id 1.
  PositionHistory history;
  history.SetSource(PositionsKind::kBinlog, 1);
  history.Add(ParseBinlogCoords("source-bin.000002", 1307).value(), T(900), T(901));
  history.Add(ParseBinlogCoords("source-bin.000003", 4).value(), T(950), T(951));
  ProbeInput in = CoordsProbe();
  in.status_reply =
      LoadVerticalResult(std::string(LAGWATCH_TESTDATA_DIR) + "/mysql-5.7-show-slave-status.txt");
  Primary primary(0);
  const Assessment a = Assess(in, primary.log, history);
  CHECK_FALSE(a.position_error);
  REQUIRE(a.bounds);
  CHECK(a.bounds->upper_source == BoundSource::kPosition);
  CHECK(a.health.delay_ms == 122);  // fresh as of the sample at 900
  // Behind only in an older file (the new one may hold no transaction yet): no lower bound.
  CHECK(a.bounds->lower == Millis(0));
}

TEST_CASE("assessment, mysql_gtid: the replica's gtid_executed set against the primary's sets") {
  const std::string uuid = "73f86016-978b-11ee-ade5-8d2a2a562feb";
  const std::string other = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
  Primary primary(0);
  PositionHistory history;
  history.SetSource(PositionsKind::kMysqlGtid, 1);
  for (int t = 0; t <= 1000; t += 50) {
    const std::string set = other + ":1-9,\n" + uuid + ":1-" + std::to_string(3 + t / 500);
    history.Add(GtidSet::Parse(set).value(), T(t), T(t + 1));
  }
  ProbeInput in = Probe(1020, 1022, ProbeRow(std::nullopt, other + ":1-9,\n" + uuid + ":1-4"));
  in.positions = PositionsKind::kMysqlGtid;
  Assessment a = Assess(in, primary.log, history);
  CHECK_FALSE(a.position_error);
  CHECK(a.health.delay_ms == 72);  // has :1-4, the samples sent 500-950

  // A gap (transaction 5 of the other uuid missing) is behind every sample.
  in.reply = ProbeRow(std::nullopt, other + ":1-4:6-9,\n" + uuid + ":1-5");
  a = Assess(in, primary.log, history);
  CHECK_FALSE(a.bounds);
  CHECK_FALSE(a.position_error);

  // A malformed set is counted; the probe is still measured (here: no heartbeat row, no bounds).
  in.reply = ProbeRow(std::string("1"), uuid + ":1-x");
  a = Assess(in, primary.log, history);
  REQUIRE(a.position_error);
  CHECK(a.position_error->code() == Status::Code::kDataError);
  CHECK(a.probe_status.ok());
  CHECK(a.measured);
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

TEST_CASE("assessment: a bound that reaches back into the primary's outage is flagged") {
  // Samples every 50 ms to 1000, none while the primary hung, then 0-1-3 from 3000 on.
  Primary primary(0);
  PositionHistory history(4096, SampleGapAfter(Millis(50)));
  for (int t = 0; t <= 1000; t += 50) history.Add(P("0-1-2"), T(t), T(t + 1));
  for (int t = 3000; t <= 3100; t += 50) history.Add(P("0-1-3"), T(t), T(t + 1));
  // Has everything from before the outage, not yet what came after: fresh as of 1000.
  Assessment a = Assess(Probe(3110, 3112, ProbeRow(std::nullopt, "0-1-2")), primary.log, history);
  CHECK(a.health.delay_ms == 2112);
  CHECK(a.health.bound_spans_outage);
  CHECK(a.health.delay_lower_ms == 109);  // proven: it lacks what was seen at 3001
  // Behind from before the outage: not flagged.
  a = Assess(Probe(3110, 3112, ProbeRow(std::nullopt, "0-1-1")), primary.log, history);
  CHECK_FALSE(a.health.bound_spans_outage);
  // Caught up after it: not flagged either.
  a = Assess(Probe(3110, 3112, ProbeRow(std::nullopt, "0-1-3")), primary.log, history);
  CHECK_FALSE(a.health.bound_spans_outage);
  CHECK(a.health.delay_ms == 12);
}

TEST_CASE("assessment: the server's id and read_only are read from the probe's row") {
  Primary primary(2100);
  QueryResult row = ProbeRow("4", "0-1-4");
  row.columns.insert(row.columns.end(), {"sid", "ro"});
  row.rows[0].insert(row.rows[0].end(), {std::string("12"), std::string("1")});
  Assessment a = Assess(Probe(2120, 2122, row), primary.log, primary.history);
  CHECK(a.server_id == 12);
  CHECK(a.read_only == true);
  row.rows[0][3] = "0";
  CHECK(Assess(Probe(2120, 2122, row), primary.log, primary.history).read_only == false);
  // Anything else is not read: neither a guess nor an error (the bounds still count).
  row.rows[0][2] = "twelve";
  row.rows[0][3] = "ON";
  a = Assess(Probe(2120, 2122, row), primary.log, primary.history);
  CHECK(a.probe_status.ok());
  CHECK_FALSE(a.server_id.has_value());
  CHECK_FALSE(a.read_only.has_value());
  // An older reply without the columns reads as unknown.
  a = Assess(Probe(2120, 2122, ProbeRow("4", "0-1-4")), primary.log, primary.history);
  CHECK_FALSE(a.server_id.has_value());
  CHECK_FALSE(a.read_only.has_value());
}

TEST_CASE("assessment: a probe's read_only is read alone, as the prober records it at once") {
  QueryResult row = ProbeRow("4", "0-1-4");
  row.columns.push_back("ro");
  row.rows[0].push_back(std::string("1"));
  CHECK(ProbedReadOnly(row) == true);
  row.rows[0][2] = "0";
  CHECK(ProbedReadOnly(row) == false);
  for (const char* bad : {"2", "-1", "ON", ""}) {
    row.rows[0][2] = bad;
    CHECK_FALSE(ProbedReadOnly(row).has_value());
  }
  row.rows[0][2].reset();  // NULL
  CHECK_FALSE(ProbedReadOnly(row).has_value());
  CHECK_FALSE(ProbedReadOnly(ProbeRow("4", "0-1-4")).has_value());
  CHECK_FALSE(ProbedReadOnly(QueryResult{}).has_value());
}

}  // namespace
}  // namespace lagwatch
