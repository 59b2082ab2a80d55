#include "bench/report.h"

#include <functional>
#include <sstream>
#include <vector>

#include "bench/table.h"

namespace lagwatch::bench {
namespace {

using json = nlohmann::json;

// A percentile field of a {n, p50, …} object, or "-" when there is no data.
std::string Pct(const json& p, const char* field, int decimals = 0) {
  if (!p.is_object() || !p.contains(field)) return "-";
  return Num(p[field].get<double>(), decimals);
}

std::string Share(const json& v) {
  if (!v.is_number()) return "-";
  return Num(v.get<double>() * 100.0, 1) + "%";
}

// "r1", "r2"; "p" for the original primary (a replica for a while in the move scenarios).
std::string ShortReplica(const std::string& name) {
  return name == "primary" ? "p" : "r" + name.substr(name.size() - 1);
}

// "lagwatch", or "lagwatch (binlog)" in a --positions binlog run: the systems read from Redis.
bool IsLagwatch(const std::string& system) { return system.rfind("lagwatch", 0) == 0; }

// The positions kind of a --positions binlog run ("binlog"), or "" for the default run.
std::string Positions(const json& res) { return res.value("positions", std::string()); }

// "quick", "quick, positions binlog", or "quick, only cost, hung-replica" (--scenarios).
std::string ModeLabel(const json& res) {
  const std::string positions = Positions(res);
  std::string label =
      res["mode"].get<std::string>() + (positions.empty() ? "" : ", positions " + positions);
  if (res.value("tls", false)) label += ", TLS";
  if (res.contains("phases")) {
    std::string names;
    for (const auto& n : res["phases"]) names += (names.empty() ? "" : ", ") + n.get<std::string>();
    label += ", only " + names;
  }
  return label;
}

// A column of a scenario table: its header and its cell for one system's replica (the
// scenario's systems[].replicas.<name> object).
struct Column {
  const char* header;
  std::function<std::string(const json& r)> cell;
};

std::string Count(const json& v) { return v.is_number() ? std::to_string(v.get<size_t>()) : "-"; }

// A lagwatch Redis key's measure (r["key"][field], ms); "-" for the other systems.
std::string KeyMs(const json& r, const char* field) {
  return r.contains("key") ? Num(r["key"][field].get<double>()) : "-";
}

// How many records lagwatch published with `state` in the scenario; "-" for the other systems.
std::string States(const json& r, const char* state) {
  return r.contains("states") ? std::to_string(r["states"].value(state, 0)) : "-";
}

// err p50 .. max (`p95` too, or not) and < -10ms.
std::vector<Column> ErrorColumns(bool p95) {
  std::vector<Column> c = {
      {"n",
       [](const json& r) {
         return r["error_ms"].is_object() ? std::to_string(r["error_ms"]["n"].get<size_t>()) : "0";
       }},
      {"err p50", [](const json& r) { return Pct(r["error_ms"], "p50"); }}};
  if (p95) c.push_back({"p95", [](const json& r) { return Pct(r["error_ms"], "p95"); }});
  c.push_back({"p99", [](const json& r) { return Pct(r["error_ms"], "p99"); }});
  c.push_back({"max", [](const json& r) { return Pct(r["error_ms"], "max"); }});
  c.push_back(
      {"p99 over upper", [](const json& r) { return Pct(r["error_over_upper_ms"], "p99"); }});
  c.push_back({"< -10ms", [](const json& r) { return Share(r["below_truth_by_10ms_share"]); }});
  return c;
}

const Column kFalseExclusions = {"false excl200",
                                 [](const json& r) { return Count(r["false_exclusions_200ms"]); }};

// The columns of a scenario's table, by its "table" (see Scenario in accuracy.cc); `lagwatch_only`:
// the other systems get no row.
std::vector<Column> Columns(const std::string& table, bool* lagwatch_only) {
  *lagwatch_only = table == "agent-kill";
  if (table == "primary-freeze") {
    std::vector<Column> c = ErrorColumns(true);
    c.insert(c.end(),
             {kFalseExclusions,
              {"excl while ok, % of time",
               [](const json& r) { return Share(r["excluded_while_fine_200ms_time_share"]); }},
              {"lagging", [](const json& r) { return States(r, "lagging"); }},
              {"primary_unknown", [](const json& r) { return States(r, "primary_unknown"); }}});
    return c;
  }
  if (table == "move") {
    auto falsely = [](const char* field, int decimals) {
      return [=](const json& r) {
        return r.contains("falsely_fine_200ms")
                   ? Num(r["falsely_fine_200ms"][field].get<double>(), decimals)
                   : std::string("-");
      };
    };
    std::vector<Column> c = ErrorColumns(false);
    c.insert(c.end(), {{"falsely ok ms (truth > 200)", falsely("ms", 0)},
                       {"runs", falsely("runs", 0)},
                       {"longest ms", falsely("longest_ms", 0)},
                       {"truth peak ms", falsely("peak_truth_ms", 0)},
                       {"healthy=1 & delay_ms > max",
                        [](const json& r) {
                          return r.contains("healthy_over_limit") ? Count(r["healthy_over_limit"])
                                                                  : std::string("-");
                        }},
                       {"key missing",
                        [](const json& r) {
                          return r.contains("key_missing") ? Count(r["key_missing"])
                                                           : std::string("-");
                        }},
                       kFalseExclusions});
    return c;
  }
  if (table == "agent-kill") {
    std::vector<Column> c = ErrorColumns(false);
    c.insert(c.end(),
             {{"key missing ms", [](const json& r) { return KeyMs(r, "missing_ms"); }},
              {"max age ms", [](const json& r) { return KeyMs(r, "max_age_ms"); }},
              {"max measured_at stall ms",
               [](const json& r) { return KeyMs(r, "max_measured_at_stall_ms"); }},
              {"measured_at backwards",
               [](const json& r) { return Count(r["key"]["measured_at_backwards"]); }},
              {"healthy flips (truth < 100)",
               [](const json& r) { return Count(r["key"]["healthy_flips_far_from_limit"]); }},
              kFalseExclusions});
    return c;
  }
  // `field` (p50, p99) of r[measure][series].
  auto pct = [](const char* header, const char* measure, const char* series, const char* field) {
    return Column{header, [=](const json& r) { return Pct(r[measure][series], field); }};
  };
  std::vector<Column> c = ErrorColumns(true);
  c.insert(
      c.end(),
      {pct("det200 p50", "detect_200ms", "latency_ms", "p50"),
       pct("p99", "detect_200ms", "latency_ms", "p99"),
       pct("det1000 p50", "detect_1000ms", "latency_ms", "p50"),
       pct("p99", "detect_1000ms", "latency_ms", "p99"),
       pct("rec200 p50", "detect_200ms", "recovery_ms", "p50"),
       pct("p99", "detect_200ms", "recovery_ms", "p99"),
       kFalseExclusions,
       {"excl while ok", [](const json& r) { return Share(r["excluded_while_fine_200ms_share"]); }},
       {"missed 200/1000", [](const json& r) {
          return Count(r["detect_200ms"]["missed"]) + "/" + Count(r["detect_1000ms"]["missed"]);
        }}});
  return c;
}

Table ScenarioTable(const json& sc) {
  bool lagwatch_only = false;
  const std::vector<Column> columns =
      Columns(sc.value("table", std::string("lag")), &lagwatch_only);
  Table t;
  t.rows.push_back({"system", "rep"});
  for (const Column& c : columns) t.rows[0].push_back(c.header);
  for (const auto& sys : sc["systems"]) {
    const std::string name = sys["name"];
    if (lagwatch_only && !IsLagwatch(name)) continue;
    for (const auto& [rn, r] : sys["replicas"].items()) {
      std::vector<std::string> row = {name, ShortReplica(rn)};
      for (const Column& c : columns) row.push_back(c.cell(r));
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

// One row per server that followed a new primary, per move: when lagwatch's heartbeat and
// pointer followed, and each system's delay from the true catch-up to saying "within 200 ms".
Table MovesTable(const json& sc) {
  Table t;
  t.left_cols = 3;
  std::vector<std::string> systems;
  for (const auto& sys : sc["systems"]) systems.push_back(sys["name"]);
  t.rows.push_back({"#", "move", "server", "writable after begin", "→ lagwatch heartbeat",
                    "→ pointer", "re-pointed", "caught up", "lagwatch key gone",
                    "lagwatch healthy=1"});
  for (const auto& name : systems) t.rows[0].push_back(name + " ok again");
  auto ms = [](const json& v) { return v.is_number() ? Num(v.get<double>()) : std::string("-"); };
  int n = 0;
  for (const auto& m : sc["moves"]) {
    ++n;
    const std::string move = m["kind"].get<std::string>() + " " + m["from"].get<std::string>() +
                             " → " + m["to"].get<std::string>();
    for (const auto& r : m["servers"]) {
      std::vector<std::string> row = {std::to_string(n),
                                      move,
                                      ShortReplica(r["server"]),
                                      ms(m["writable_after_begin_ms"]),
                                      ms(m["heartbeat_written_ms"]),
                                      ms(m["pointer_ms"]),
                                      ms(r["repointed_after_writable_ms"]),
                                      ms(r.value("caught_up_after_writable_ms", json()))};
      const json key = r.contains("key") && r["key"].contains("lagwatch") ? r["key"]["lagwatch"]
                                                                          : json::object();
      row.push_back(ms(key.value("gone_ms", json())));
      row.push_back(ms(key.value("healthy_again_ms", json())));
      for (const auto& name : systems) {
        const json& b = r.value("back_fine_ms", json::object());
        row.push_back(b.contains(name) ? ms(b[name]) : "-");
      }
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

const char* kMovesLegend =
    "per move (ms): writable after begin = from the old primary's read_only=1 (or kill -9) to "
    "the new primary's read_only=0; → lagwatch heartbeat = from that to the updated_at of the "
    "first lagwatch heartbeat row written on the new primary; → pointer = to the bench seeing "
    "slave_delay:primary name it; re-pointed / caught up = when the server's START SLAVE "
    "returned / from when truth stayed ≤ 200 ms, both after writable; lagwatch key gone / "
    "healthy=1 = when the bench first saw the server's key gone (retired) in the move's window "
    "and then healthy=1 again, after writable (a key not there at the move counts as gone); "
    "<system> ok again = from the true catch-up to the system's first report ≤ 200 ms "
    "(lagwatch: healthy=1) after it, or the start of the run of such reports in effect then "
    "(negative); a verdict from before the move counts only if it is never withdrawn before the "
    "next move (then it said so all along); - : none by then";

std::string TruthLine(const json& sc) {
  std::string out = "truth:";
  for (const auto& [rn, t] : sc["truth"].items()) {
    out += " " + ShortReplica(rn) + " p50 " + Pct(t["staleness_ms"], "p50", 1) + " / p99 " +
           Pct(t["staleness_ms"], "p99", 1) + " / max " + Pct(t["staleness_ms"], "max") +
           " ms, episodes >200 ms: " + std::to_string(t["episodes_over_200ms"].get<size_t>()) +
           ", >1000 ms: " + std::to_string(t["episodes_over_1000ms"].get<size_t>()) + ";";
  }
  out.pop_back();
  return out;
}

// Per-scenario observations worth a line: unknown readings, lagwatch's key and bound checks.
std::vector<std::string> ScenarioNotes(const json& sc) {
  std::vector<std::string> notes;
  for (const auto& n : sc["notes"]) notes.push_back(n.get<std::string>());
  for (const auto& sys : sc["systems"]) {
    const std::string name = sys["name"];
    for (const auto& [rn, r] : sys["replicas"].items()) {
      const std::string who = name + " " + ShortReplica(rn);
      for (const char* th : {"200", "1000"}) {
        const json& d = r[std::string("detect_") + th + "ms"];
        if (d["already_over"].get<size_t>() > 0) {
          notes.push_back(who + ": " + std::to_string(d["already_over"].get<size_t>()) + " of " +
                          std::to_string(d["episodes"].get<size_t>()) + " episodes over " + th +
                          " ms began while it was already reporting over " + th +
                          " ms before the lag started (no detection latency)");
        }
      }
      if (r["detect_200ms"]["not_recovered_before_next_episode"].get<size_t>() > 0) {
        notes.push_back(
            who + ": after " +
            std::to_string(r["detect_200ms"]["not_recovered_before_next_episode"].get<size_t>()) +
            " episode(s) still over 200 ms when truth crossed again or the scenario ended: no "
            "rec200");
      }
      if (r["false_exclusions_200ms"].get<size_t>() > 0) {
        notes.push_back(who + ": " + std::to_string(r["false_exclusions_200ms"].get<size_t>()) +
                        " false exclusion(s), " + Num(r["false_excluded_s"].get<double>(), 2) +
                        " s in all; truth peaked at " +
                        Num(r["false_exclusion_peak_truth_ms"].get<double>(), 1) +
                        " ms during them");
      }
      if (r["unknown"].get<size_t>() > 0 && !IsLagwatch(name)) {
        notes.push_back(who + ": " + std::to_string(r["unknown"].get<size_t>()) + " of " +
                        std::to_string(r["reports"].get<size_t>()) +
                        " readings unknown (NULL / no value; counted as over every threshold)");
      }
      if (!IsLagwatch(name)) continue;
      if (r["key_missing"].get<size_t>() > 0) {
        notes.push_back(who + ": Redis key missing " +
                        std::to_string(r["key_missing"].get<size_t>()) +
                        " time(s) (expired: counted as excluded)");
      }
      if (r["lower_bound_above_truth_by_10ms"].get<size_t>() > 0) {
        notes.push_back(who + ": delay_lower_ms above the oracle's upper bound by > 10 ms in " +
                        std::to_string(r["lower_bound_above_truth_by_10ms"].get<size_t>()) +
                        " of " + std::to_string(r["lower_bound_checked"].get<size_t>()) +
                        " reports");
      }
      std::string states;
      for (const auto& [state, n] : r["states"].items()) {
        states += (states.empty() ? "" : ", ") + state + " " + std::to_string(n.get<size_t>());
      }
      notes.push_back(who + " states published: " + (states.empty() ? "none" : states));
    }
  }
  return notes;
}

Table CostTable(const json& cost) {
  Table t;
  t.left_cols = 1;
  t.rows.push_back({"system", "window s", "binlog bytes", "transactions", "bytes/trx",
                    "binlog bytes/s", "binlog MB/day", "primary stmts/s", "primary CPU %",
                    "primary sent bytes/s"});
  for (const auto& c : cost) {
    t.rows.push_back(
        {c["system"].get<std::string>(), Num(c["seconds"].get<double>(), 1),
         std::to_string(c["binlog_bytes"].get<int64_t>()),
         std::to_string(c["transactions"].get<int64_t>()),
         c["bytes_per_transaction"].is_number() ? Num(c["bytes_per_transaction"].get<double>())
                                                : "-",
         Num(c["binlog_bytes_per_s"].get<double>()),
         Num(c["binlog_bytes_per_day"].get<double>() / 1e6, 1),
         Num(c["statements_per_s"].get<double>(), 1),
         c.contains("primary_cpu_share") ? Num(100.0 * c["primary_cpu_share"].get<double>(), 2)
                                         : "-",
         c.contains("bytes_sent_per_s") ? Num(c["bytes_sent_per_s"].get<double>()) : "-"});
  }
  return t;
}

// The heartbeat cost table as text or Markdown (`render`), or why there is none.
std::string CostSection(const json& cost, const std::function<std::string(const Table&)>& render) {
  if (cost.empty()) return "not measured (--scenarios without cost)\n";
  return render(CostTable(cost));
}

Table UsageTable(const json& usage) {
  Table t;
  t.left_cols = 1;
  t.rows.push_back({"process", "alive s", "CPU s", "CPU share", "RSS MB"});
  for (const auto& [name, u] : usage.items()) {
    if (!u.is_object()) continue;
    t.rows.push_back({name, Num(u["alive_s"].get<double>(), 0), Num(u["cpu_s"].get<double>(), 1),
                      Num(u["cpu_share"].get<double>() * 100.0, 1) + "%",
                      Num(u["rss_mb"].get<double>(), 1)});
  }
  return t;
}

std::string OracleLine(const json& o) {
  std::string s = "oracle: " + std::to_string(o["rows"].get<size_t>()) + " rows, one every " +
                  Pct(o["write_interval_ms"], "p50", 1) + " ms (p99 " +
                  Pct(o["write_interval_ms"], "p99", 1) + "), commit latency p50 " +
                  Pct(o["commit_latency_ms"], "p50", 1) + " / p99 " +
                  Pct(o["commit_latency_ms"], "p99", 1) + " ms";
  for (const auto& [rn, r] : o["readers"].items()) {
    s += "; reader " + ShortReplica(rn) + " every " + Pct(r["interval_ms"], "p50", 1) +
         " ms (p99 " + Pct(r["interval_ms"], "p99", 1) + "), query " +
         Pct(r["latency_ms"], "p50", 1) + " ms";
  }
  if (o.contains("applied_rows")) {
    s += "; apply times of r1 " + std::to_string(o["applied_rows"]["replica1"].get<size_t>()) +
         " rows, r2 " + std::to_string(o["applied_rows"]["replica2"].get<size_t>());
  }
  return s;
}

}  // namespace

std::string RenderText(const json& res) {
  std::ostringstream out;
  out << "\nlagwatch accuracy benchmark (" << ModeLabel(res) << ", "
      << res["date"].get<std::string>() << ", " << res["versions"]["lagwatch"].get<std::string>()
      << ")\n";
  out << "all values in ms; err = reported − truth at the moment of measurement; det = first "
         "report over the threshold − true crossing; rec200 = first report back ≤ 200 ms − truth "
         "back ≤ 200 ms\n";
  out << "r1 = replica1 " << res["sandbox"]["replica1"].get<std::string>()
      << " (stalled / locked / hung in the stall, ftwrl and hung-replica scenarios), r2 = "
         "replica2 "
      << res["sandbox"]["replica2"].get<std::string>()
      << " (control; held back by a read lock after each move to replica1 in switchover and "
         "failover), p = the primary the sandbox started with (its key, while a replica in "
         "switchover and failover)\n";
  out << OracleLine(res["oracle"]) << "\n\n";
  out << "heartbeat cost on the primary (each alone):\n"
      << CostSection(res["heartbeat_cost"], [](const Table& t) { return t.Text("  "); }) << "\n";
  for (const auto& sc : res["scenarios"]) {
    out << "== " << sc["name"].get<std::string>() << " (" << Num(sc["duration_s"].get<double>(), 0)
        << " s): " << sc["description"].get<std::string>() << "\n";
    out << "   " << TruthLine(sc) << "\n";
    out << ScenarioTable(sc).Text("   ");
    if (sc.contains("moves")) {
      out << "   " << kMovesLegend << ":\n" << MovesTable(sc).Text("   ");
    }
    for (const auto& n : ScenarioNotes(sc)) out << "   - " << n << "\n";
    out << "\n";
  }
  out << "process usage over the whole run:\n" << UsageTable(res["processes"]["usage"]).Text("  ");
  return out.str();
}

std::string RenderMarkdown(const json& res) {
  std::ostringstream md;
  const std::string mode = res["mode"];
  const std::string positions = Positions(res);
  md << "# lagwatch accuracy benchmark (" << ModeLabel(res) << ")\n\n";
  md << "- date: " << res["date"].get<std::string>() << "\n";
  md << "- command: `" << res["command"].get<std::string>() << "`\n";
  if (!res["git_rev"].get<std::string>().empty()) {
    md << "- git revision: " << res["git_rev"].get<std::string>() << "\n";
  }
  md << "- host: " << res["host"]["cpus"].get<int>() << " CPUs, "
     << res["host"]["kernel"].get<std::string>() << "; everything on 127.0.0.1\n";
  md << "- versions:";
  for (const auto& [k, v] : res["versions"].items())
    md << " " << k << " `" << v.get<std::string>() << "`;";
  md << "\n- sandbox: primary " << res["sandbox"]["primary"].get<std::string>()
     << ", r1 = " << res["sandbox"]["replica1"].get<std::string>()
     << ", r2 = " << res["sandbox"]["replica2"].get<std::string>()
     << (positions == "binlog"
             ? " (scripts/sandbox --replication binlog: MariaDB replication by binary log file "
               "and position, MASTER_USE_GTID=no; MariaDB still keeps @@gtid_slave_pos, which "
               "the lagwatch row's positions auto reads; Redis)\n\n"
             : " (scripts/sandbox: MariaDB GTID replication, Redis)\n");
  md << (res.value("tls", false)
             ? "- transport: TLS (scripts/sandbox --tls: require_secure_transport=ON, Redis on a "
               "TLS-only port, client certificates). lagwatch's MySQL connections and its Redis "
               "connection are TLS with the server's certificate verified, as are the bench's "
               "Redis polls and the moves' replication. pt-heartbeat, SBM, naive, the oracle and "
               "sysbench use the unix sockets (as root or lw_pt), as in the plaintext run: "
               "require_secure_transport does not apply to a unix socket, so their rows are "
               "measured the same way in both runs.\n\n"
             : "- transport: plaintext (TCP and unix sockets; Redis as the sandbox's ACL "
               "users)\n\n");

  md << "## Method\n\n";
  md << "**Ground truth (oracle).** A writer commits a row into `lwtest.oracle` on the primary "
        "every 5 ms (autocommit, its own connection) and records, per id, the wall-clock time "
        "just before sending (sent) and when the OK arrived (acked). A reader per replica runs "
        "`SELECT MAX(id)` every 5 ms. Replication applies in commit order, so a read sent at τ "
        "that sees max id m proves row m+1 was missing at τ: true staleness at τ is τ − "
        "acked(m+1) if row m+1 was acked before τ, else 0. Truth at any time t between reads uses "
        "the first read sent at or after t (it cannot have seen less than the replica had at t): "
        "truth(t) = max(0, t − acked(m_next+1)). A trigger on `lwtest.oracle` on each replica "
        "(never on the primary; `slave_run_triggers_for_rbr=YES`) records, for every row the "
        "replica applies, the host's clock (`SYSDATE(6)`) as the row is inserted: the row was "
        "not visible before, so "
        "that moment is a point like a read that saw id − 1. Between two reads of a replica "
        "catching up on a backlog these points keep the truth exact to one oracle row (a "
        "replica applying one transaction at a time has committed the row before). This "
        "is a proven *lower* bound; the matching "
        "upper bound t − sent(m_prev) from the last read answered by t brackets real staleness. "
        "All times are CLOCK_REALTIME on this one host (the clock of lagwatch's "
        "`measured_at_ms`); the server's NOW() is never used for truth.\n\n";
  md << "**Oracle resolution.** " << OracleLine(res["oracle"])
     << ". Per scenario, the bracket (upper − lower bound) is listed under each table: the "
        "truth is exact to about that much (about one write interval + one read interval + "
        "commit latency), except where the apply times make the lower end exact and the upper "
        "bound, from the reads alone, stays wide (a catch-up).\n\n";
  md << "**Systems, side by side on the same sandbox and run:**\n\n";
  md << "- **lagwatch** `" << res["commands"]["lagwatch"].get<std::string>()
     << "` (the sandbox's config, below). The bench polls Redis `HGETALL "
        "slave_delay:127.0.0.1:<port>` every 2 ms; each new record is a report measured at its "
        "`measured_at_ms` and seen when the poll returned. Over 200 ms = `healthy=0` (or key "
        "missing); over 1000 ms = `delay_ms > 1000` (or key missing). Error uses `delay_ms` (the "
        "upper bound). `measured_at_ms` has 1 ms resolution.\n";
  if (res["commands"].contains("lagwatch (binlog)")) {
    const json& c = res["lagwatch_binlog_config"];
    md << "- **lagwatch (binlog)** `" << res["commands"]["lagwatch (binlog)"].get<std::string>()
       << "`: a second agent next to lagwatch, from a copy of its config with `agent_id` "
       << c["agent_id"].dump() << " (its own row in the same heartbeat table), `positions` "
       << c["positions"].dump()
       << (c["positions"] == "binlog"
               ? " (the primary's File/Position from `SHOW BINLOG STATUS`, each replica's "
                 "`Relay_Master_Log_File`/`Exec_Master_Log_Pos` from `SHOW REPLICA STATUS`)"
               : "")
       << ", Redis prefix `" << c["redis"]["key_prefix"].get<std::string>() << "` and HTTP "
       << c["http"]["listen"].get<std::string>()
       << "; polled in the same HGETALL pipeline and measured the same way as lagwatch.\n";
  }
  md << "- **pt-heartbeat** `" << res["commands"]["pt-heartbeat --update"].get<std::string>()
     << "` and per replica `" << res["commands"]["pt-heartbeat --monitor"].get<std::string>()
     << "` on a pseudo-terminal (line-buffered output; the bench is its parent and stops it by "
        "PID). Each line's first number (seconds) is a report at the moment the line arrived.\n";
  md << "- **SBM**: `SHOW SLAVE STATUS` every 200 ms per replica; `Seconds_Behind_Master` in "
        "whole seconds; NULL = unknown, counted as over every threshold and left out of error "
        "stats.\n";
  md << "- **naive**: `UPDATE lwtest.naive SET updated_at = NOW(6)` every 500 ms on the primary; "
        "per replica every 200 ms `SELECT TIMESTAMPDIFF(MICROSECOND, updated_at, NOW(6))`. On one "
        "host there is no clock skew between primary and replica, which flatters this method "
        "(and pt-heartbeat, which also compares two clocks).\n\n";
  md << "**Measures** (per system, per replica, per scenario; all in ms):\n\n"
        "- *err*: reported lag − truth at the moment of measurement (lagwatch: "
        "`measured_at_ms`; SQL pollers: when the query was sent; pt-heartbeat: when its line "
        "arrived); p50/p95/p99/max, and *< -10ms*: the share of reports below truth by more "
        "than 10 ms (truth is a lower bound, so these are certain under-reports).\n"
        "- *p99 over upper*: the p99 of reported lag − the oracle's upper bound at the same "
        "moment: the part of the error that is certain whatever real staleness within the "
        "oracle's bracket was (0 or less: the report was within the bracket).\n"
        "- *det200 / det1000*: first report over the threshold, as seen by the bench (lagwatch: "
        "the Redis poll that returned `healthy=0`, resp. `delay_ms > 1000`) − the moment truth "
        "crossed it. Negative = reported before truth crossed (an upper bound does that; fine). "
        "*missed*: true episodes with no report over the threshold before they ended + 1 s.\n"
        "- *rec200*: first report back at or under 200 ms (lagwatch: `healthy=1`) − the moment "
        "truth fell back under 200 ms (±1 read interval). Negative = the system cleared the "
        "replica while truth was still over.\n"
        "- *false excl200*: runs of reports over 200 ms (lagwatch: `healthy=0`) during which "
        "truth never exceeded 200 ms. *excl while ok*: the share of time (sampled every 5 ms) "
        "truth was at or under 200 ms while the system's latest report, as the bench saw it, was "
        "over 200 ms (it includes the recovery tail after real episodes).\n"
        "- An episode that began while a system was already reporting over the threshold since "
        "before the lag started (crossing − threshold) gets no detection latency; such episodes "
        "are listed under the table.\n"
        "- *hung-replica*: while replica1's server is stopped (SIGSTOP) the reader's query "
        "waits, so truth there comes from the hang itself: from the moment every thread of the "
        "server was seen stopped until SIGCONT was sent the replica applies nothing, so every row "
        "the writer sent after that moment is missing; truth = t − acked(the first of them). "
        "Rows committed between the last read and the stop are taken to have arrived (the "
        "conservative side), so truth stays a proven lower bound.\n"
        "- *primary-freeze*: while the primary is stopped nothing commits (the writer's INSERT "
        "waits and has no ack), so truth stays 0 on both replicas. *excl while ok, % of time*: "
        "the share of the scenario's time (sampled every 5 ms) in which truth was at or under "
        "200 ms and the system's latest report was over it (lagwatch: `healthy=0` or the key "
        "missing). *lagging*, *primary_unknown*: records lagwatch published with that state in "
        "the scenario.\n"
        "- *switchover*, *failover*: the primary moves to replica1 and back. The oracle's "
        "writer follows it (it is moved off the old primary before that is made read-only, and "
        "onto the new one once it is writable; after a failover, rows the dead primary acked "
        "that the new one never had are left out of the truth), so truth is staleness against "
        "the current primary; the original primary gets a reader and lagwatch's key for it (row "
        "*p*) while it is a replica. *falsely ok ms (truth > 200)*: the time (1 ms grid) the "
        "system's latest report said ≤ 200 ms (lagwatch: `healthy=1`) while truth was over "
        "200 ms; *healthy=1 & delay_ms > max*: lagwatch records saying both. The table of moves "
        "below each gives, per move, when lagwatch's heartbeat and pointer followed the new "
        "primary and, per server that replicates from it, when it was truly caught up and when "
        "each system said so for good.\n"
        "- *agent-kill*: two agents (different `agent_id`, same Redis keys) run side by side; "
        "each is killed with SIGKILL and restarted in turn while the bench polls the keys every 2 "
        "ms. Only the lagwatch rows are shown, each the key as a router reads it, whichever "
        "agent wrote it. *key missing ms*: from each poll that found the key gone to the first "
        "that found it back. *max age ms*: the oldest record a poll saw (poll − "
        "`measured_at_ms`). *max measured_at stall ms*: the longest time `measured_at_ms` did "
        "not pass its highest value so far. *measured_at backwards*: records older than the one "
        "before. *healthy flips (truth < 100)*: changes of `healthy` from one record to the next "
        "with the oracle's upper bound at most 100 ms (half the limit) at both.\n\n";

  md << "## Heartbeat cost on the primary\n\n"
     << "Each heartbeat alone on an otherwise idle primary; binlog growth is the sum of `SHOW "
        "BINARY LOGS` file sizes, transactions from `@@gtid_binlog_pos`, statements from "
        "`Questions`; per day extrapolates the window.\n\n"
     << CostSection(res["heartbeat_cost"], [](const Table& t) { return t.Markdown(); }) << "\n";

  md << "## Results\n\n";
  for (const auto& sc : res["scenarios"]) {
    md << "### " << sc["name"].get<std::string>() << " (" << Num(sc["duration_s"].get<double>(), 0)
       << " s)\n\n"
       << sc["description"].get<std::string>() << ".\n\n";
    md << TruthLine(sc) << "; oracle bracket p50/p99:";
    for (const auto& [rn, t] : sc["truth"].items()) {
      md << " " << ShortReplica(rn) << " " << Pct(t["bracket_ms"], "p50", 1) << "/"
         << Pct(t["bracket_ms"], "p99", 1) << " ms" << (rn == "replica1" ? "," : "");
    }
    md << ".\n\n" << ScenarioTable(sc).Markdown() << "\n";
    if (sc.contains("moves")) {
      md << "Moves of the primary: " << kMovesLegend << ".\n\n"
         << MovesTable(sc).Markdown() << "\n";
    }
    for (const auto& n : ScenarioNotes(sc)) md << "- " << n << "\n";
    md << "\n";
  }

  md << "## Run details\n\n";
  bool restarted = false;  // the agent-kill scenario restarts lagwatch
  for (const auto& sc : res["scenarios"]) restarted = restarted || sc["name"] == "agent-kill";
  md << "Process usage over the whole run (lagwatch and the bench from the cost phase on"
     << (positions.empty() ? "" : "; lagwatch (binlog) from its start next to lagwatch")
     << (restarted ? "; lagwatch since its last restart in the agent-kill scenario" : "")
     << "):\n\n"
     << UsageTable(res["processes"]["usage"]).Markdown() << "\n";
  md << "Processes and collector errors:\n\n";
  for (const auto& [k, v] : res["processes"].items()) {
    if (k != "usage") md << "- " << k << ": `" << v.dump() << "`\n";
  }
  md << "\n";
  md << "lagwatch config:\n\n```json\n" << res["lagwatch_config"].dump(2) << "\n```\n\n";
  if (res.contains("lagwatch_binlog_config")) {
    md << "lagwatch (binlog) config (`" << res["lagwatch_binlog_config_file"].get<std::string>()
       << "`):\n\n```json\n"
       << res["lagwatch_binlog_config"].dump(2) << "\n```\n\n";
  }
  md << "Raw results: `accuracy-" << mode << (positions.empty() ? "" : "-" + positions)
     << ".json`; logs: `" << res["logs"].get<std::string>() << "`.\n";
  return md.str();
}

}  // namespace lagwatch::bench
