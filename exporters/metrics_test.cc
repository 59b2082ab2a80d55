#include "exporters/metrics.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "base/fake_clock.h"
#include "exporters/exposition.h"

namespace lagwatch {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The per-replica series as lagwatch kept them in prometheus-cpp before ReplicaMetrics: the
// reference the new text must match series for series.
class OldReplicaFamilies {
 public:
  struct Replica {
    prometheus::Gauge* lag_upper_seconds;
    prometheus::Gauge* lag_lower_seconds;
    prometheus::Gauge* healthy;
    prometheus::Gauge* io_thread_running;
    prometheus::Gauge* sql_thread_running;
    prometheus::Gauge* seconds_behind_master;
    prometheus::Gauge* relay_log_space_bytes;
    prometheus::Gauge* state[std::size(kReplicaStates)];
    prometheus::Histogram* lag_seconds;
    prometheus::Gauge* lag_window_seconds[2][3];
    prometheus::Gauge* slar_ratio[2];
    prometheus::Histogram* probe_duration_seconds;
    prometheus::Histogram* probe_start_delay_seconds;
    prometheus::Counter* probes;
    prometheus::Counter* probes_within_slo;
    prometheus::Counter* status_polls;
    prometheus::Labels labels;
    prometheus::Family<prometheus::Counter>* probe_errors_family;
    // The applier series: created at the first ShowApplier.
    prometheus::Family<prometheus::Gauge>* applier_families[3];
    prometheus::Gauge* applier[3] = {};

    void SetState(const std::string& s) {
      for (size_t i = 0; i < std::size(kReplicaStates); ++i) {
        state[i]->Set(s == kReplicaStates[i] ? 1 : 0);
      }
    }
    prometheus::Counter& ProbeError(const std::string& reason) {
      auto l = labels;
      l["reason"] = reason;
      return probe_errors_family->Add(l);
    }
    void ShowApplier(double workers, double applying, double age) {
      const double values[] = {workers, applying, age};
      for (size_t i = 0; i < 3; ++i) {
        if (!applier[i]) applier[i] = &applier_families[i]->Add(labels);
        applier[i]->Set(values[i]);
      }
    }
  };

  // `cluster`: a `cluster` label like any other ("": none).
  Replica Add(const std::string& replica, const std::string& tier, const std::string& cluster) {
    using prometheus::Histogram;
    Replica m;
    prometheus::Labels l = {{"replica", replica}, {"tier", tier}};
    if (!cluster.empty()) l.emplace("cluster", cluster);
    m.labels = l;
    m.lag_upper_seconds = &lag_upper_.Add(l);
    m.lag_lower_seconds = &lag_lower_.Add(l);
    m.healthy = &healthy_.Add(l);
    m.io_thread_running = &io_running_.Add(l);
    m.sql_thread_running = &sql_running_.Add(l);
    m.seconds_behind_master = &sbm_.Add(l);
    m.seconds_behind_master->Set(kNaN);
    m.relay_log_space_bytes = &relay_space_.Add(l);
    for (size_t i = 0; i < std::size(kReplicaStates); ++i) {
      auto sl = l;
      sl["state"] = kReplicaStates[i];
      m.state[i] = &state_.Add(sl);
    }
    m.lag_seconds = &lag_hist_.Add(
        l, Histogram::BucketBoundaries(kLagBucketsSeconds.begin(), kLagBucketsSeconds.end()));
    for (size_t w = 0; w < std::size(kWindowNames); ++w) {
      auto wl = l;
      wl["window"] = kWindowNames[w];
      m.slar_ratio[w] = &slar_window_.Add(wl);
      m.slar_ratio[w]->Set(kNaN);
      for (size_t q = 0; q < std::size(kWindowPercentiles); ++q) {
        auto ql = wl;
        ql["percentile"] = kWindowPercentiles[q];
        m.lag_window_seconds[w][q] = &lag_window_.Add(ql);
        m.lag_window_seconds[w][q]->Set(kNaN);
      }
    }
    m.probe_duration_seconds = &probe_duration_.Add(
        l,
        Histogram::BucketBoundaries(kLatencyBucketsSeconds.begin(), kLatencyBucketsSeconds.end()));
    m.probe_start_delay_seconds = &probe_start_delay_.Add(
        l, Histogram::BucketBoundaries(kJitterBucketsSeconds.begin(), kJitterBucketsSeconds.end()));
    m.probes = &probes_.Add(l);
    m.probes_within_slo = &probes_within_slo_.Add(l);
    m.status_polls = &status_polls_.Add(l);
    m.probe_errors_family = &probe_errors_;
    m.applier_families[0] = &applier_workers_;
    m.applier_families[1] = &applier_applying_;
    m.applier_families[2] = &applier_age_;
    for (const char* reason : kErrorReasons) m.ProbeError(reason);
    return m;
  }

  std::string Text() const { return SerializeText(registry_.Collect()); }

 private:
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Gauge>& lag_upper_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_lag_upper_seconds")
          .Help(
              "Upper bound of the replica's staleness at the last probe: its data is at most "
              "this old (published as delay_ms).")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& lag_lower_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_lag_lower_seconds")
          .Help("Lower bound of the replica's staleness at the last probe.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& healthy_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_healthy")
          .Help("1 if routers may read from the replica (docs/measurement.md, Health), else 0.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& io_running_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_io_thread_running")
          .Help("1 if Slave_IO_Running is Yes at the last status poll.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& sql_running_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_sql_thread_running")
          .Help("1 if Slave_SQL_Running is Yes at the last status poll.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& sbm_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_seconds_behind_master")
          .Help("Seconds_Behind_Master as the server reports it (NaN when NULL), for comparison.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& relay_space_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_relay_log_space_bytes")
          .Help("Relay_Log_Space at the last status poll.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& state_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_state")
          .Help("1 for the replica's current state, 0 for the others.")
          .Register(registry_);
  prometheus::Family<prometheus::Histogram>& lag_hist_ =
      prometheus::BuildHistogram()
          .Name("lagwatch_replica_lag_seconds")
          .Help("Distribution of the published upper bound, one observation per probe.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& lag_window_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_lag_window_seconds")
          .Help(
              "Percentile (50, 95, 99) of the published upper bound over the last 1m or 5m "
              "(nearest rank over every measured probe), computed by the agent.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& slar_window_ =
      prometheus::BuildGauge()
          .Name("lagwatch_replica_slar_ratio")
          .Help(
              "SLAR over the last 1m or 5m: probes with delay_ms <= slo.delay_ms / all probes "
              "(failed probes count as outside).")
          .Register(registry_);
  prometheus::Family<prometheus::Histogram>& probe_duration_ =
      prometheus::BuildHistogram()
          .Name("lagwatch_probe_duration_seconds")
          .Help("Round trip of the heartbeat/position probe.")
          .Register(registry_);
  prometheus::Family<prometheus::Histogram>& probe_start_delay_ =
      prometheus::BuildHistogram()
          .Name("lagwatch_probe_start_delay_seconds")
          .Help(
              "How late a probe started after its planned moment (the tick, or when the bound "
              "would cross a tier limit): scheduling jitter.")
          .Register(registry_);
  prometheus::Family<prometheus::Counter>& probes_ =
      prometheus::BuildCounter()
          .Name("lagwatch_probes_total")
          .Help("Probes attempted, successful or not.")
          .Register(registry_);
  prometheus::Family<prometheus::Counter>& probes_within_slo_ =
      prometheus::BuildCounter()
          .Name("lagwatch_probes_within_slo_total")
          .Help("Successful probes whose upper bound was within slo.delay_ms (SLAR numerator).")
          .Register(registry_);
  prometheus::Family<prometheus::Counter>& status_polls_ =
      prometheus::BuildCounter()
          .Name("lagwatch_status_polls_total")
          .Help("SHOW SLAVE STATUS polls that succeeded.")
          .Register(registry_);
  prometheus::Family<prometheus::Counter>& probe_errors_ =
      prometheus::BuildCounter()
          .Name("lagwatch_probe_errors_total")
          .Help("Failed probes and status polls, by reason.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& applier_workers_ =
      prometheus::BuildGauge()
          .Name("lagwatch_mysql_applier_workers")
          .Help(
              "MySQL 8.0+: applier threads of the channel judged (rows of "
              "performance_schema.replication_applier_status_by_worker; 1 when single-threaded). "
              "Diagnostic only, never part of the bound.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& applier_applying_ =
      prometheus::BuildGauge()
          .Name("lagwatch_mysql_applier_workers_applying")
          .Help(
              "MySQL 8.0+: applier threads of the channel judged applying a transaction "
              "(APPLYING_TRANSACTION not empty); the others are idle. Diagnostic only.")
          .Register(registry_);
  prometheus::Family<prometheus::Gauge>& applier_age_ =
      prometheus::BuildGauge()
          .Name("lagwatch_mysql_applier_oldest_applying_age_seconds")
          .Help(
              "MySQL 8.0+: the replica's NOW(6) minus APPLYING_TRANSACTION_START_APPLY_TIMESTAMP "
              "of the transaction applying longest, both on the replica's clock (0 while none "
              "applies, NaN when the start is unknown). Diagnostic only, never compared with "
              "lagwatch's clock.")
          .Register(registry_);
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The sample lines of `text`, sorted: equal lists mean the same series (name, labels in the same
// order) with the same values, written the same way.
std::vector<std::string> SortedSamples(const std::string& text) {
  std::vector<std::string> samples;
  for (auto& line : Lines(text)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("lagwatch_start_time_seconds ", 0) == 0) continue;  // differs per Metrics
    samples.push_back(std::move(line));
  }
  std::sort(samples.begin(), samples.end());
  return samples;
}

// The `# HELP` and `# TYPE` lines of `text`, by family name, each as often as it occurs.
std::map<std::string, std::vector<std::string>> Headers(const std::string& text) {
  std::map<std::string, std::vector<std::string>> headers;
  for (auto& line : Lines(text)) {
    if (line.rfind("# ", 0) != 0) continue;
    const size_t from = line.find(' ', 2) + 1;
    headers[line.substr(from, line.find(' ', from) - from)].push_back(line);
  }
  return headers;
}

// The sample lines of `text` that mention `needle`.
std::vector<std::string> SamplesWith(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  for (auto& line : SortedSamples(text)) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

// The same pseudo-random updates applied to a ReplicaMetrics and its prometheus-cpp counterpart.
class TwinUpdates {
 public:
  explicit TwinUpdates(unsigned seed) : rng_(seed) {}

  void Apply(ReplicaMetrics& now, OldReplicaFamilies::Replica& old, int steps) {
    for (int i = 0; i < steps; ++i) {
      const double v = Value();
      switch (rng_() % 12) {
        case 0:
          now.lag_upper_seconds.Set(v);
          old.lag_upper_seconds->Set(v);
          now.lag_lower_seconds.Set(v / 2);
          old.lag_lower_seconds->Set(v / 2);
          break;
        case 1:
          now.healthy.Set(v);
          old.healthy->Set(v);
          now.io_thread_running.Set(v);
          old.io_thread_running->Set(v);
          now.sql_thread_running.Set(v);
          old.sql_thread_running->Set(v);
          break;
        case 2:
          now.seconds_behind_master.Set(v);
          old.seconds_behind_master->Set(v);
          now.relay_log_space_bytes.Set(v * 1e9);
          old.relay_log_space_bytes->Set(v * 1e9);
          break;
        case 3: {
          static const char* const states[] = {"ok",          "lagging",         "stopped",
                                               "unreachable", "primary_unknown", "disabled",
                                               "unverified",  "no_such_state"};
          const char* s = states[rng_() % std::size(states)];
          now.SetState(s);
          old.SetState(s);
          break;
        }
        case 4:
        case 5:
          now.lag_seconds.Observe(v);
          old.lag_seconds->Observe(v);
          now.probe_duration_seconds.Observe(v / 10);
          old.probe_duration_seconds->Observe(v / 10);
          now.probe_start_delay_seconds.Observe(v / 100);
          old.probe_start_delay_seconds->Observe(v / 100);
          break;
        case 6: {
          const size_t w = rng_() % 2, q = rng_() % 3;
          now.lag_window_seconds[w][q].Set(v);
          old.lag_window_seconds[w][q]->Set(v);
          now.slar_ratio[w].Set(v);
          old.slar_ratio[w]->Set(v);
          break;
        }
        case 7:
          now.probes.Increment();
          old.probes->Increment();
          now.probes_within_slo.Increment(v);
          old.probes_within_slo->Increment(v);
          break;
        case 8:
          now.status_polls.Increment();
          old.status_polls->Increment();
          break;
        case 9:
        case 10: {
          // Every reason Status::reason() gives for a failed call.
          static const char* const reasons[] = {
              "timeout", "unavailable", "server_error", "bad_data", "invalid", "tls", "cancelled"};
          const char* r = reasons[rng_() % std::size(reasons)];
          now.ProbeError(r).Increment();
          old.ProbeError(r).Increment();
          break;
        }
        case 11:
          now.ShowApplier(v, v / 2, v * 3);
          old.ShowApplier(v, v / 2, v * 3);
          break;
        default:
          break;
      }
    }
  }

 private:
  // Whole, fractional, tiny, huge, negative and non-finite values, and exact bucket bounds.
  double Value() {
    static const double special[] = {0,      1,    kNaN, kInf, -kInf, 0.1 + 0.2, 1e-7,
                                     1.5e17, -2.5, 0.05, 0.2,  30,    0.0005};
    if (rng_() % 3 == 0) return special[rng_() % std::size(special)];
    return std::uniform_real_distribution<double>(0, 3)(rng_);
  }

  std::mt19937 rng_;
};

TEST_CASE("lagwatch_start_time_seconds is the wall time of the clock the metrics were given") {
  FakeClock clock;  // wall time starts at 2023-11-14T22:13:20Z
  Metrics metrics("test", clock);
  const std::string text = SerializeText(metrics.registry()->Collect());
  CHECK(text.find("\nlagwatch_start_time_seconds 1700000000\n") != std::string::npos);
}

TEST_CASE("/metrics has the series prometheus-cpp wrote for the same per-replica updates") {
  // Without a cluster, and with one that needs escaping: then prometheus-cpp's series carry it as
  // a label of their own.
  for (const std::string cluster : {"", "shop\"eu\\1"}) {
    CAPTURE(cluster);
    Metrics metrics("test", cluster);
    OldReplicaFamilies old_families;
    struct Twin {
      ReplicaMetrics* now;
      OldReplicaFamilies::Replica old;
    };
    // A tier that needs escaping, and one replica in two tiers.
    const std::pair<std::string, std::string> replicas[] = {{"10.0.0.2:3306", "standard"},
                                                            {"10.0.0.1:3306", "critical"},
                                                            {"db\"3\\x:3306", "odd\nname"},
                                                            {"10.0.0.1:3306", "standard"}};
    std::vector<Twin> twins;
    for (const auto& [replica, tier] : replicas) {
      twins.push_back({&metrics.Replica(replica, tier), old_families.Add(replica, tier, cluster)});
    }
    TwinUpdates updates(7);
    for (int round = 0; round < 3; ++round) {
      for (auto& t : twins) updates.Apply(*t.now, t.old, 200);
      CAPTURE(round);

      const std::string text = metrics.TextExposition();
      const std::string old_text =
          SerializeText(metrics.registry()->Collect(),
                        cluster.empty() ? prometheus::ClientMetric::Label{}
                                        : prometheus::ClientMetric::Label{"cluster", cluster}) +
          old_families.Text();
      CHECK(SortedSamples(text).size() > 250);
      CHECK(SortedSamples(text) == SortedSamples(old_text));
      CHECK(Headers(text) == Headers(old_text));
    }
    // What was printed: `cancelled` appeared with the first such error; labels are escaped.
    const std::string text = metrics.TextExposition();
    const std::string first = cluster.empty() ? "" : R"(cluster="shop\"eu\\1",)";
    CHECK(text.find("lagwatch_probe_errors_total{" + first +
                    "reason=\"cancelled\",replica=\"10.0.0.2:3306\"") != std::string::npos);
    CHECK(text.find("{" + first + "replica=\"db\\\"3\\\\x:3306\",tier=\"odd\\nname\"}") !=
          std::string::npos);
    // Every sample has the cluster, or none has.
    for (const std::string& sample : SortedSamples(text)) {
      CAPTURE(sample);
      CHECK((sample.find("cluster=") != std::string::npos) == !cluster.empty());
    }
  }
}

TEST_CASE("/metrics writes every family once, and no per-replica family without replicas") {
  Metrics metrics("test");
  for (const auto& [name, lines] : Headers(metrics.TextExposition())) {
    CAPTURE(name);
    CHECK(lines.size() == 2);
    CHECK(name.find("replica") == std::string::npos);
    CHECK(name.find("probe") == std::string::npos);
  }
  metrics.Replica("10.0.0.1:3306", "critical");
  metrics.Replica("10.0.0.2:3306", "critical");
  const auto headers = Headers(metrics.TextExposition());
  CHECK(headers.count("lagwatch_replica_lag_seconds") == 1);
  CHECK(headers.count("lagwatch_probe_errors_total") == 1);
  for (const auto& [name, lines] : headers) {
    CAPTURE(name);
    CHECK(lines.size() == 2);
  }
}

TEST_CASE("RemoveReplica removes every series of the replica, in every tier, at once") {
  Metrics metrics("test");
  metrics.Replica("10.0.0.1:3306", "critical").probes.Increment();
  metrics.Replica("10.0.0.2:3306", "critical").probes.Increment(2);
  metrics.Replica("10.0.0.2:3306", "standard").ProbeError("cancelled").Increment();
  metrics.Replica("10.0.0.3:3306", "standard").lag_seconds.Observe(0.1);
  const std::string before = metrics.TextExposition();
  CHECK(SamplesWith(before, "10.0.0.2:3306").size() > 140);

  metrics.RemoveReplica("10.0.0.2:3306");
  const std::string after = metrics.TextExposition();
  CHECK(SamplesWith(after, "10.0.0.2:3306").empty());
  for (const char* kept : {"10.0.0.1:3306", "10.0.0.3:3306"}) {
    CAPTURE(kept);
    CHECK(SamplesWith(after, kept) == SamplesWith(before, kept));
  }

  // Added back, it starts from zero.
  metrics.Replica("10.0.0.2:3306", "critical");
  CHECK(SamplesWith(metrics.TextExposition(),
                    "lagwatch_probes_total{replica=\"10.0.0.2:3306\",tier=\"critical\"} 0")
            .size() == 1);

  // The last replica gone, the per-replica families go too.
  for (const char* r : {"10.0.0.1:3306", "10.0.0.2:3306", "10.0.0.3:3306"}) {
    metrics.RemoveReplica(r);
  }
  CHECK(Headers(metrics.TextExposition()).count("lagwatch_replica_state") == 0);
}

TEST_CASE("applier series appear for a replica once its signals were shown, and never vanish") {
  Metrics metrics("test");
  // The per-replica applier samples (not the agent-wide error counter).
  auto applier_samples = [&] {
    std::vector<std::string> out;
    for (auto& line : SamplesWith(metrics.TextExposition(), "lagwatch_mysql_applier")) {
      if (line.find("replica=") != std::string::npos) out.push_back(line);
    }
    return out;
  };
  ReplicaMetrics& mysql = metrics.Replica("10.0.0.1:3306", "critical");
  metrics.Replica("10.0.0.2:3306", "critical");  // MariaDB: never shown
  CHECK(Headers(metrics.TextExposition()).count("lagwatch_mysql_applier_workers") == 0);
  CHECK(applier_samples().empty());

  mysql.ShowApplier(4, 1, 0.25);
  const std::string text = metrics.TextExposition();
  CHECK(applier_samples() ==
        std::vector<std::string>{
            "lagwatch_mysql_applier_oldest_applying_age_seconds{replica=\"10.0.0.1:3306\","
            "tier=\"critical\"} 0.25",
            "lagwatch_mysql_applier_workers_applying{replica=\"10.0.0.1:3306\","
            "tier=\"critical\"} 1",
            "lagwatch_mysql_applier_workers{replica=\"10.0.0.1:3306\",tier=\"critical\"} 4",
        });
  for (const char* family :
       {"lagwatch_mysql_applier_workers", "lagwatch_mysql_applier_workers_applying",
        "lagwatch_mysql_applier_oldest_applying_age_seconds"}) {
    CAPTURE(family);
    CHECK(Headers(text)[family].size() == 2);
  }

  // Unknown again (refused, unreadable, another server): NaN, not gone.
  mysql.ShowApplier(kNaN, kNaN, kNaN);
  CHECK(SamplesWith(metrics.TextExposition(), "lagwatch_mysql_applier_workers{") ==
        std::vector<std::string>{
            "lagwatch_mysql_applier_workers{replica=\"10.0.0.1:3306\",tier=\"critical\"} NaN"});
}

TEST_CASE("applier signal errors are counted by reason, each created at zero") {
  Metrics metrics("test");
  metrics.CountApplierError("denied");
  metrics.CountApplierError("denied");
  metrics.CountApplierError("bad_data");
  metrics.CountApplierError("no such reason");
  CHECK(SamplesWith(SerializeText(metrics.registry()->Collect()),
                    "lagwatch_mysql_applier_signal_errors_total") ==
        std::vector<std::string>{
            "lagwatch_mysql_applier_signal_errors_total{reason=\"bad_data\"} 1",
            "lagwatch_mysql_applier_signal_errors_total{reason=\"denied\"} 2",
            "lagwatch_mysql_applier_signal_errors_total{reason=\"no_table\"} 0",
            "lagwatch_mysql_applier_signal_errors_total{reason=\"server_error\"} 1",
        });
}

TEST_CASE("a probe error reason Status::reason() does not give counts as unknown") {
  Metrics metrics("test");
  ReplicaMetrics& m = metrics.Replica("10.0.0.1:3306", "critical");
  m.ProbeError("no such reason").Increment();
  m.ProbeError("another").Increment();
  m.ProbeError("timeout").Increment();
  const std::string text = metrics.TextExposition();
  CHECK(SamplesWith(text, "lagwatch_probe_errors_total") ==
        std::vector<std::string>{
            "lagwatch_probe_errors_total{reason=\"bad_data\",replica=\"10.0.0.1:3306\","
            "tier=\"critical\"} 0",
            "lagwatch_probe_errors_total{reason=\"invalid\",replica=\"10.0.0.1:3306\","
            "tier=\"critical\"} 0",
            "lagwatch_probe_errors_total{reason=\"server_error\",replica=\"10.0.0.1:3306\","
            "tier=\"critical\"} 0",
            "lagwatch_probe_errors_total{reason=\"timeout\",replica=\"10.0.0.1:3306\","
            "tier=\"critical\"} 1",
            "lagwatch_probe_errors_total{reason=\"tls\",replica=\"10.0.0.1:3306\","
            "tier=\"critical\"} 0",
            "lagwatch_probe_errors_total{reason=\"unavailable\",replica=\"10.0.0.1:3306\","
            "tier=\"critical\"} 0",
            "lagwatch_probe_errors_total{reason=\"unknown\",replica=\"10.0.0.1:3306\","
            "tier=\"critical\"} 2",
        });
}

TEST_CASE("scrapes read per-replica series while probers update them") {
  Metrics metrics("test");
  std::vector<ReplicaMetrics*> replicas;
  for (int i = 0; i < 4; ++i) {
    replicas.push_back(&metrics.Replica("10.0.0." + std::to_string(i) + ":3306", "critical"));
    replicas.back()->SetState("ok");
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> probers;
  for (ReplicaMetrics* m : replicas) {
    probers.emplace_back([m, &stop] {
      for (int n = 0; !stop.load(); ++n) {
        m->probes.Increment();
        m->lag_seconds.Observe((n % 100) / 100.0);
        m->SetState(kReplicaStates[n % std::size(kReplicaStates)]);
        m->lag_upper_seconds.Set(n);
      }
    });
  }
  for (int scrape = 0; scrape < 50; ++scrape) {
    const std::string text = metrics.TextExposition();
    // Each replica has exactly one current state, and its histogram's +Inf bucket is its count.
    CHECK(SamplesWith(text, "lagwatch_replica_state{").size() == 4 * std::size(kReplicaStates));
    size_t ones = 0;
    for (const auto& line : SamplesWith(text, "lagwatch_replica_state{")) {
      ones += line.ends_with(" 1");
    }
    CHECK(ones == 4);
    const auto counts = SamplesWith(text, "lagwatch_replica_lag_seconds_count{");
    std::vector<std::string> infs;
    for (auto& line : SamplesWith(text, "lagwatch_replica_lag_seconds_bucket{")) {
      if (line.find("le=\"+Inf\"") != std::string::npos) infs.push_back(line);
    }
    REQUIRE(counts.size() == 4);
    REQUIRE(infs.size() == 4);
    for (size_t i = 0; i < counts.size(); ++i) {  // both sorted by replica
      CHECK(counts[i].substr(counts[i].rfind(' ')) == infs[i].substr(infs[i].rfind(' ')));
    }
  }
  stop = true;
  for (auto& t : probers) t.join();
}

}  // namespace
}  // namespace lagwatch
