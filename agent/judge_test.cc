#include "agent/judge.h"

#include <doctest/doctest.h>

#include "agent/recorded_primary_test.h"
#include "agent/role_report.h"
#include "base/vertical_result.h"

namespace lagwatch {
namespace {

WallTime W(int ms) { return WallTime(Millis(1'700'000'000'000 + ms)); }
using testing::P;
using testing::T;

using Primary = testing::RecordedPrimary;

Config TestConfig() {
  Config c;
  c.agent_id = 7;
  c.health.recover_probes = 2;
  c.health.recover_ratio = 0.8;
  return c;
}

ReplicaConfig Replica() { return {{"10.0.0.2", 3306}, "tier1", 30, {}}; }
TierConfig Tier() { return {"tier1", 200, true}; }

ProbeReplies Row(int sent_ms, int received_ms, std::string seq, std::string pos) {
  ProbeReplies r;
  QueryResult q;
  q.columns = {"seq", "pos"};
  q.rows.push_back({std::move(seq), std::move(pos)});
  r.reply = std::move(q);
  r.obs.sent = T(sent_ms);
  r.obs.received = T(received_ms);
  r.received_wall = W(received_ms);
  return r;
}

ProbeReplies NoAnswer(int sent_ms, int received_ms) {
  ProbeReplies r;
  r.reply = Status::DeadlineExceeded("no answer in time");
  r.obs.sent = T(sent_ms);
  r.obs.received = T(received_ms);
  r.received_wall = W(received_ms);
  return r;
}

const ProbeContext kGtid{PositionsKind::kMariaDbGtid, 1, true, {}, {}, {}, {}};

// One probe through both steps.
Judgement Probe(ReplicaJudge& judge, const Primary& p, ProbeReplies replies,
                bool source_verified = true) {
  const WallTime wall = replies.received_wall;
  Assessment a = judge.Observe(std::move(replies), kGtid, p.log, p.history);
  return judge.Decide(std::move(a), source_verified, wall);
}

TEST_CASE(
    "judge: a probe whose heartbeat row and position disagree is probed again, not believed") {
  // Heartbeat k at 500k ms, acknowledged 2 ms later; samples every 50 ms, 0-1-5 from 2,500; the
  // primary as recorded by 2,560.
  Primary p(2560);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  Judgement j = Probe(judge, p, Row(2460, 2462, "4", "0-1-4"));
  REQUIRE(j.verdict.healthy);
  REQUIRE(judge.has_fresh_bound());
  const MonoTime fresh = *judge.bounds()->fresh_at;
  // The row says heartbeat 5 (acknowledged at 2,502) is missing, the position read after it in
  // the same statement that 0-1-5 is there: the replica applied it in between.
  Assessment a = judge.Observe(Row(2560, 2562, "4", "0-1-5"), kGtid, p.log, p.history);
  CHECK(a.inconsistent);
  CHECK(a.recheck);
  // Nothing of it is kept but the position and status it read.
  REQUIRE(judge.has_fresh_bound());
  CHECK(*judge.bounds()->fresh_at == fresh);
  // Probed again at once, it agrees: decided as usual.
  j = Probe(judge, p, Row(2564, 2566, "5", "0-1-5"));
  CHECK(j.verdict.healthy);
  CHECK(j.record.delay_ms == 16);  // the sample at 2,550
  // A disagreement that holds on the probe after is believed: the heartbeat alone.
  Primary later(3060);
  a = judge.Observe(Row(3060, 3062, "5", "0-1-6"), kGtid, later.log, later.history);
  REQUIRE(a.inconsistent);
  CHECK(a.recheck);
  a = judge.Observe(Row(3064, 3066, "5", "0-1-6"), kGtid, later.log, later.history);
  CHECK(a.inconsistent);
  CHECK_FALSE(a.recheck);
  j = judge.Decide(std::move(a), true, W(3066));
  CHECK(j.record.delay_ms == 566);  // heartbeat 5, sent at 2,500
  CHECK_FALSE(j.verdict.healthy);
  // And so is the next one: a premise broken for good is not probed twice each time.
  a = judge.Observe(Row(3070, 3072, "5", "0-1-6"), kGtid, later.log, later.history);
  CHECK(a.inconsistent);
  CHECK_FALSE(a.recheck);
}

TEST_CASE("judge: a record states its bound at the next whole ms and at the answer's own µs") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  // Answered 0.3 ms into ms 2122: 22.3 ms since the newest sample was sent.
  ProbeReplies r = Row(2120, 2122, "4", "0-1-4");
  r.obs.received += Micros(300);
  r.received_wall += Micros(300);
  const Judgement j = Probe(judge, p, std::move(r));
  // delay_ms holds at the next whole ms (23.0 ms), measured_at_ms that ms.
  CHECK(j.record.measured_at_ms == UnixMillis(W(2123)));
  CHECK(j.record.delay_ms == 23);
  // delay_us holds at the answer itself, not carried 0.7 ms forward.
  CHECK(j.record.measured_at_us == UnixMicros(W(2122) + Micros(300)));
  CHECK(j.record.delay_us == 22'300);
  // Where there is no bound, the µs fields state delay_ms's moment.
  ReplicaJudge unknown(Replica(), Tier(), TestConfig());
  const WallTime wall = W(2150) + Micros(400);
  ProbeReplies none = NoAnswer(2100, 2150);
  none.received_wall = wall;
  Assessment a = unknown.Observe(std::move(none), kGtid, p.log, p.history);
  const Judgement k = unknown.Decide(std::move(a), true, wall);
  CHECK(k.record.measured_at_us == k.record.measured_at_ms * 1000);
  CHECK(k.record.delay_us == k.record.delay_ms * 1000);
}

TEST_CASE("judge: a caught-up replica is ok and healthy, and its record says so") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  const Judgement j = Probe(judge, p, Row(2120, 2122, "4", "0-1-4"));
  CHECK(j.verdict.state == ReplicaState::kOk);
  CHECK(j.verdict.healthy);
  CHECK(j.verdict.changed);
  CHECK(j.record.id == "10.0.0.2:3306");
  CHECK(j.record.state == "ok");
  CHECK(j.record.delay_ms == 22);  // the newest sample was sent at 2100
  CHECK(j.record.tier == "tier1");
  CHECK(j.record.weight == 30);
  CHECK(j.record.max_delay_ms == 200);
  CHECK(j.record.seq == 4);
  CHECK(j.record.agent_id == 7);
  CHECK(j.record.measured_at_ms == UnixMillis(W(2122)));
  CHECK(j.record.position == "0-1-4");
  CHECK(j.record.position_kind == "mariadb_gtid");
  CHECK(judge.judged_delay_ms() == 22);
  REQUIRE(judge.has_fresh_bound());
}

TEST_CASE("judge: kept healthy while the primary is unknown, behind by what elsewhere may hold") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  auto probe = [&](int at_ms, std::optional<MonoTime> others) {
    ProbeContext c = kGtid;
    c.primary_known = false;
    c.others_writable_after = others;
    Assessment a = judge.Observe(Row(at_ms - 2, at_ms, "4", "0-1-4"), c, p.log, p.history);
    return judge.Decide(std::move(a), true, W(at_ms));
  };
  // Caught up with the last sample (2100); 300 ms of silence since. Every other server was last
  // found read-only at 2380 or later: published 20 ms behind, not 300, and not 0.
  Judgement j = probe(2400, T(2380));
  CHECK(j.record.state == "primary_unknown");
  CHECK(j.record.healthy);
  CHECK(j.record.delay_ms == 20);
  // No other server answers: nothing can be written elsewhere.
  j = probe(2450, std::nullopt);
  CHECK(j.record.healthy);
  CHECK(j.record.delay_ms == 0);
  // A crossing verdict says the same.
  REQUIRE(judge.has_fresh_bound());
  j = judge.AtCrossing(T(2460), W(2460), false, true, T(2410));
  CHECK(j.record.state == "primary_unknown");
  CHECK(j.record.delay_ms == 50);
}

TEST_CASE("judge: a record states its bound at the next whole ms after the answer") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  // Answered at 2121.3 ms: fresh up to the sample sent at 2100, so 21.3 ms stale at most then,
  // and 22 at 2122, the millisecond the record states. Truncating both would say 21 at 2121,
  // when the replica may not yet have applied what made it fresh (it was read after 2121).
  // A caught-up reply `past_us` after the whole ms `received_ms`.
  auto answered = [&](int sent_ms, int received_ms, int past_us) {
    ProbeReplies r = Row(sent_ms, received_ms, "4", "0-1-4");
    r.obs.received += std::chrono::microseconds(past_us);
    r.received_wall += std::chrono::microseconds(past_us);
    return Probe(judge, p, std::move(r));
  };
  const Judgement j = answered(2120, 2121, 300);
  CHECK(j.record.measured_at_ms == UnixMillis(W(2122)));
  CHECK(j.record.delay_ms == 22);
  CHECK(j.record.measured_mono == T(2122));
  // Just past a whole ms the bound is carried almost a whole ms, and rounded up.
  const Judgement k = answered(2320, 2322, 1);
  CHECK(k.record.measured_at_ms == UnixMillis(W(2323)));
  CHECK(k.record.delay_ms == 223);
}

TEST_CASE("judge: lag is immediate, recovery takes two probes under 80 % of the limit") {
  // The primary's records as they stand at each probe.
  const Primary p(2100), later(3000);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  CHECK(Probe(judge, p, Row(2120, 2122, "4", "0-1-4")).verdict.healthy);
  // Another replica's view, behind by two heartbeats: 672 ms, over 200 ms at once.
  judge.ForgetApplied();
  const Judgement lagging = Probe(judge, p, Row(2120, 2122, "2", "0-1-2"));
  CHECK(lagging.record.delay_ms == 672);
  CHECK(lagging.verdict.state == ReplicaState::kLagging);
  CHECK_FALSE(lagging.verdict.healthy);
  CHECK(lagging.previous.healthy);
  // Caught up again: within the ratio once (still unhealthy, recovering), then twice.
  const Judgement first = Probe(judge, later, Row(3020, 3022, "6", "0-1-6"));
  CHECK_FALSE(first.verdict.healthy);
  CHECK(judge.health().recovering());
  const Judgement second = Probe(judge, later, Row(3030, 3032, "6", "0-1-6"));
  CHECK(second.verdict.healthy);
  CHECK(second.verdict.changed);
}

TEST_CASE("judge: no answer bounds the replica from the first commit it lacks, never 0") {
  // The primary's records as they stand at each probe.
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  Probe(judge, Primary(2100), Row(2120, 2122, "4", "0-1-4"));  // fresh as of the 2100 sample
  // Unanswered while the primary still had nothing more than 0-1-4 (its 2450 sample).
  Judgement j = Probe(judge, Primary(2450), NoAnswer(2320, 2470));
  CHECK(j.verdict.state == ReplicaState::kUnreachable);
  CHECK_FALSE(j.verdict.healthy);
  CHECK(j.record.delay_ms == 2470 - 2450);
  CHECK(j.record.position == "0-1-4");  // the last position read still holds
  // 0-1-5 was committed by the 2500 sample: from then on the bound grows.
  j = Probe(judge, Primary(2700), NoAnswer(2520, 2720));
  CHECK(j.verdict.state == ReplicaState::kUnreachable);
  CHECK(j.record.delay_ms == 2720 - 2450);
  j = Probe(judge, Primary(2900), NoAnswer(2720, 2920));
  CHECK(j.record.delay_ms == 2920 - 2450);
  // Back: the first answer decides at once (no recovery streak after unreachable).
  const Judgement back = Probe(judge, Primary(2950), Row(2960, 2962, "5", "0-1-5"));
  CHECK(back.back_from_unreachable);
  CHECK(back.record.delay_ms == 12);
  CHECK(back.verdict.healthy);
}

TEST_CASE("judge: lag grows while answers prove the replica further behind as fast as time") {
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  Probe(judge, Primary(2100), Row(2120, 2122, "4", "0-1-4"));
  CHECK_FALSE(judge.lag_growing());  // one answer says nothing of a trend
  // Stuck at 0-1-4 while 0-1-5 (acknowledged at 2502) waits: 118, then 318 ms behind.
  Probe(judge, Primary(2700), Row(2620, 2622, "4", "0-1-4"));
  CHECK_FALSE(judge.lag_growing());  // from 0: grew 118 in 500 ms
  Probe(judge, Primary(2900), Row(2820, 2822, "4", "0-1-4"));
  CHECK(judge.lag_growing());
  // It applied 0-1-5: 18 ms behind 0-1-6 now, catching up.
  Probe(judge, Primary(3100), Row(3020, 3022, "5", "0-1-5"));
  CHECK_FALSE(judge.lag_growing());
  // A move forgets the trend.
  Probe(judge, Primary(3300), Row(3220, 3222, "5", "0-1-5"));
  Probe(judge, Primary(3400), Row(3320, 3322, "5", "0-1-5"));
  REQUIRE(judge.lag_growing());
  judge.StartOver();
  CHECK_FALSE(judge.lag_growing());
}

TEST_CASE("judge: advancing an unanswered replica's bound moves it by what it lacks only") {
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  Probe(judge, Primary(2100), Row(2120, 2122, "4", "0-1-4"));
  REQUIRE(judge.has_fresh_bound());
  judge.Advance(T(2400), Primary(2400).history, nullptr);
  CHECK(*judge.bounds()->fresh_at == T(2400));  // the primary still had only 0-1-4
  judge.Advance(T(2700), Primary(2700).history, nullptr);
  CHECK(*judge.bounds()->fresh_at == T(2450));  // 0-1-5 came with the 2500 sample
  // A new connection forgets the position: nothing to advance from.
  ReplicaJudge other(Replica(), Tier(), TestConfig());
  Probe(other, Primary(2100), Row(2120, 2122, "4", "0-1-4"));
  other.ForgetApplied();
  other.Advance(T(2400), Primary(2400).history, nullptr);
  CHECK(*other.bounds()->fresh_at == T(2100));
}

TEST_CASE("judge: an unanswered replica is bounded from what its own binary log proved") {
  // The probes read server id 12; 0-1-5 and 0-1-6 were committed by the 2500 and 3000 samples.
  auto answer = [](ReplicaJudge& judge) {
    ProbeReplies r = Row(2120, 2122, "4", "0-1-4");
    r.reply->columns.push_back("sid");
    r.reply->rows[0].push_back("12");
    Probe(judge, Primary(2100), std::move(r));
  };
  auto unanswered = [](ReplicaJudge& judge, std::optional<AppliedProof> proof) {
    ProbeContext context = kGtid;
    context.witnessed = std::move(proof);
    Assessment a =
        judge.Observe(NoAnswer(3020, 3170), context, Primary(3200).log, Primary(3200).history);
    return judge.Decide(std::move(a), true, W(3170));
  };
  // The delay_ms a fresh judge publishes for the unanswered probe, given `proof` (after a new
  // connection, with `reconnected`).
  auto delay_with = [&](AppliedProof proof, bool reconnected = false) {
    ReplicaJudge judge(Replica(), Tier(), TestConfig());
    answer(judge);
    if (reconnected) judge.ForgetApplied();
    return unanswered(judge, std::move(proof)).record.delay_ms;
  };
  // Its binary log showed 0-1-5 applied after the last answer: the first commit it may lack
  // is 0-1-6, so fresh at the 2950 sample, not at 2450.
  CHECK(delay_with({12, P("0-1-5")}) == 3170 - 2950);
  // A proof of another server (the probes' connection reached another one) proves nothing here.
  CHECK(delay_with({13, P("0-1-5")}) == 3170 - 2450);
  // Nor once the connection that read the server id is gone.
  CHECK(delay_with({12, P("0-1-5")}, /*reconnected=*/true) == 3170 - 2100);
  // A proof behind the last answer never moves the bound back.
  CHECK(delay_with({12, P("0-1-3")}) == 3170 - 2450);
  // At a crossing too.
  ReplicaJudge crossing(Replica(), Tier(), TestConfig());
  answer(crossing);
  crossing.Advance(T(3200), Primary(3200).history, nullptr, AppliedProof{12, P("0-1-5")});
  CHECK(*crossing.bounds()->fresh_at == T(2950));
  crossing.Advance(T(3200), Primary(3200).history, nullptr, AppliedProof{13, P("0-1-6")});
  CHECK(*crossing.bounds()->fresh_at == T(2950));
}

TEST_CASE("judge: a replica whose source is in doubt is unverified whatever its lag") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  const Judgement j = Probe(judge, p, Row(2120, 2122, "4", "0-1-4"), /*source_verified=*/false);
  CHECK(j.verdict.state == ReplicaState::kUnverified);
  CHECK_FALSE(j.verdict.healthy);
}

// A probe whose status poll answered `status` (a file of base/testdata), judged against the
// primary `source`.
Judgement ProbeWithStatus(ReplicaJudge& judge, const Primary& p, ProbeReplies replies,
                          const char* status, const ChannelSource& source) {
  if (status) {
    replies.status_reply = LoadVerticalResult(std::string(LAGWATCH_TESTDATA_DIR) + "/" + status);
  }
  ProbeContext context = kGtid;
  context.primary_source = source;
  const WallTime wall = replies.received_wall;
  Assessment a = judge.Observe(std::move(replies), context, p.log, p.history);
  return judge.Decide(std::move(a), true, wall);
}

// MySQL 8.0 with two channels (base/testdata, from
// https://dev.mysql.com/doc/refman/8.0/en/replication-channels.html): source_2 first, from
// 127.0.0.1:13001 (server id 2), its SQL thread stopped; then source_1 from 127.0.0.1:13000
// (server id 1), running.
const char kTwoChannels[] = "mysql-8.0-show-replica-status-two-channels.txt";
// MariaDB SHOW ALL SLAVES STATUS (base/testdata, from
// https://mariadb.com/kb/en/multi-source-replication/): neither from 127.0.0.1:13000 nor id 1.
const char kTwoConnections[] = "mariadb-show-all-slaves-status-two-connections.txt";

TEST_CASE("judge: of two channels the primary's is judged, though the first is stopped") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  const ChannelSource primary{1, "127.0.0.1", 13000};
  const Judgement j =
      ProbeWithStatus(judge, p, Row(2120, 2122, "4", "0-1-4"), kTwoChannels, primary);
  CHECK(j.verdict.state == ReplicaState::kOk);
  CHECK(j.verdict.healthy);
  CHECK(judge.status().channel_name == "source_1");
  REQUIRE(j.notices.size() == 1);
  CHECK_FALSE(j.notices[0].warn);
  CHECK(j.notices[0].text.find("channel 'source_1' (one of 2) replicates from the primary "
                               "(matched by server id) (server_id 1, configured as "
                               "127.0.0.1:13000)") != std::string::npos);
  // The same channel again: nothing new to say.
  CHECK(ProbeWithStatus(judge, p, Row(2130, 2132, "4", "0-1-4"), kTwoChannels, primary)
            .notices.empty());

  // Judged against the other source, whose SQL thread is stopped: stopped.
  ReplicaJudge other(Replica(), Tier(), TestConfig());
  const Judgement s = ProbeWithStatus(other, p, Row(2120, 2122, "4", "0-1-4"), kTwoChannels,
                                      {2, "127.0.0.1", 13001});
  CHECK(s.verdict.state == ReplicaState::kStopped);
  CHECK(other.status().channel_name == "source_2");
}

TEST_CASE("judge: several channels and none from the primary is unverified until one is") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  const ChannelSource primary{1, "127.0.0.1", 13000};
  const Judgement j =
      ProbeWithStatus(judge, p, Row(2120, 2122, "4", "0-1-4"), kTwoConnections, primary);
  CHECK(j.verdict.state == ReplicaState::kUnverified);  // not stopped: its threads are another's
  CHECK_FALSE(j.verdict.healthy);
  REQUIRE(j.notices.size() == 1);
  CHECK(j.notices[0].warn);
  CHECK(j.notices[0].text ==
        "replica 10.0.0.2:3306: none of its 2 replication channels replicates from the primary "
        "(server_id 1, configured as 127.0.0.1:13000): unverified until one does");
  // Between status polls the latest status holds.
  const Judgement between =
      ProbeWithStatus(judge, p, Row(2130, 2132, "4", "0-1-4"), nullptr, primary);
  CHECK(between.verdict.state == ReplicaState::kUnverified);
  CHECK(between.notices.empty());
  // A channel from the primary again.
  const Judgement back =
      ProbeWithStatus(judge, p, Row(2140, 2142, "4", "0-1-4"), kTwoChannels, primary);
  CHECK(back.verdict.state == ReplicaState::kOk);
  REQUIRE(back.notices.size() == 1);
  CHECK_FALSE(back.notices[0].warn);
  // One channel: judged whatever its source, as before (the topology decides its relation).
  const Judgement one = ProbeWithStatus(judge, p, Row(2150, 2152, "4", "0-1-4"),
                                        "mariadb-kb-show-slave-status.txt", primary);
  CHECK(one.verdict.state == ReplicaState::kOk);
  REQUIRE(one.notices.size() == 1);
  CHECK(one.notices[0].text == "replica 10.0.0.2:3306 has one replication channel: judged by it");
}

TEST_CASE("judge: at the crossing the bound alone turns a silent replica unhealthy") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  Probe(judge, p, Row(2120, 2122, "4", "0-1-4"));
  // The next probe is unanswered; 301 ms after the freshest sample the bound is over 200.
  const Judgement j = judge.AtCrossing(T(2401), W(2401), true, true);
  CHECK(j.health.delay_ms == 301);
  CHECK_FALSE(j.health.delay_lower_ms.has_value());
  CHECK(j.verdict.state == ReplicaState::kLagging);
  CHECK_FALSE(j.verdict.healthy);
  CHECK(j.record.delay_lower_ms == 0);
  CHECK(j.record.measured_at_ms == UnixMillis(W(2401)));
  // Between two whole ms it is stated, as a probe's record is, at the next one.
  const Judgement k = judge.AtCrossing(T(2401) + std::chrono::microseconds(400),
                                       W(2401) + std::chrono::microseconds(400), true, true);
  CHECK(k.health.delay_ms == 302);
  CHECK(k.record.measured_at_ms == UnixMillis(W(2402)));
}

TEST_CASE("judge: starting over forgets bounds and position but reports the next change") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  Probe(judge, p, Row(2120, 2122, "4", "0-1-4"));
  judge.StartOver();
  CHECK_FALSE(judge.bounds().has_value());
  CHECK(judge.judged_delay_ms() == 0);
  // A failed probe after the move: unreachable, no position from before, and a change.
  const Judgement j = Probe(judge, p, NoAnswer(2320, 2470));
  CHECK(j.record.position.empty());
  CHECK(j.verdict.changed);
  CHECK(j.previous.state == ReplicaState::kOk);
}

TEST_CASE("judge: a new connection forgets the position it read before") {
  Primary p(2100);
  ReplicaJudge judge(Replica(), Tier(), TestConfig());
  Probe(judge, p, Row(2120, 2122, "4", "0-1-4"));
  judge.ForgetApplied();
  const Judgement j = Probe(judge, p, NoAnswer(2320, 2470));
  CHECK(j.record.position.empty());
}

// ---- The role reporter ---------------------------------------------------------------------

// A probe's assessment as the reporter reads it: the status is the latest known (carried from
// an earlier poll when this probe did not poll).
Assessment Role(bool answered, std::optional<bool> read_only, bool status_polled,
                bool replicates = false) {
  Assessment a;
  a.health.reachable = answered;
  a.server_id = 2;
  a.read_only = read_only;
  a.status_polled = status_polled;
  a.status.known = true;
  a.status.configured = replicates;
  return a;
}

TEST_CASE("roles: a role is reported when it changes, or when the monitor asks to confirm") {
  RoleReporter roles({"10.0.0.2", 3306});
  CHECK(roles.Next(Role(true, true, true, true), T(0), false).send);
  CHECK_FALSE(roles.Next(Role(true, true, true, true), T(200), false).send);
  CHECK(roles.Next(Role(true, true, true, true), T(400), /*confirm=*/true).send);
  const auto down = roles.Next(Role(false, std::nullopt, false), T(600), false);
  CHECK(down.send);
  CHECK_FALSE(down.role.answered);
}

TEST_CASE("roles: a change to writable waits for a status poll of a later probe") {
  RoleReporter roles({"10.0.0.2", 3306});
  roles.Next(Role(true, true, true, true), T(0), false);
  // read_only=0 seen at 200 without a status poll: held back, status polled at once.
  const auto held = roles.Next(Role(true, false, false, true), T(200), false);
  CHECK(held.role.read_only == true);
  CHECK(held.poll_status_soon);
  CHECK_FALSE(held.send);
  // Seen again at 205 with the status (replication reset): reported as writable.
  const auto now = roles.Next(Role(true, false, true, false), T(205), false);
  CHECK(now.role.read_only == false);
  CHECK(now.role.replicates == false);
  CHECK_FALSE(now.poll_status_soon);
  CHECK(now.send);
}

TEST_CASE("roles: a writable server that times out is held writable for a while, not if down") {
  auto timed_out = [] {
    Assessment a = Role(false, std::nullopt, false);
    a.probe_status = Status::DeadlineExceeded("no answer in time");
    return a;
  };
  auto refused = [] {
    Assessment a = Role(false, std::nullopt, false);
    a.probe_status = Status::Unavailable("connection refused");
    return a;
  };
  RoleReporter roles({"10.0.0.2", 3306});
  roles.Next(Role(true, false, true), T(0), false);  // writable, replicates from nobody
  auto r = roles.Next(timed_out(), T(200), false);
  CHECK(r.send);
  CHECK_FALSE(r.role.answered);
  CHECK(r.role.held_writable);
  // Waiting to reconnect after the timeout: still held, unchanged, until the hold ends.
  r = roles.Next(refused(), T(1900), false);
  CHECK(r.role.held_writable);
  CHECK_FALSE(r.send);
  r = roles.Next(timed_out(), T(2000), false);
  CHECK_FALSE(r.role.held_writable);
  CHECK(r.send);
  // A refused connection after a writable answer: down, not held.
  RoleReporter down({"10.0.0.2", 3306});
  down.Next(Role(true, false, true), T(0), false);
  CHECK_FALSE(down.Next(refused(), T(200), false).role.held_writable);
  // A read-only answer, or a replicating one, holds nothing.
  RoleReporter replica({"10.0.0.2", 3306});
  replica.Next(Role(true, true, true, true), T(0), false);
  CHECK_FALSE(replica.Next(timed_out(), T(200), false).role.held_writable);
  RoleReporter demoted({"10.0.0.2", 3306});
  demoted.Next(Role(true, false, true), T(0), false);
  demoted.Next(Role(true, true, false), T(200), false);
  CHECK_FALSE(demoted.Next(timed_out(), T(400), false).role.held_writable);
}

TEST_CASE("roles: going read-only is reported at once") {
  RoleReporter roles({"10.0.0.2", 3306});
  roles.Next(Role(true, false, true), T(0), false);
  const auto r = roles.Next(Role(true, true, false), T(200), false);
  CHECK(r.send);
  CHECK(r.role.read_only == true);
  CHECK_FALSE(r.poll_status_soon);
}

}  // namespace
}  // namespace lagwatch
