// Fuzzes MySQL 8.0+'s applier signals (base/applier_status.h): the reply to
// ApplierStatusStatement (ParseApplierReply), the same rows read as each of the three tables
// (ParseApplierTables), and every cell read as a server timestamp (ParseServerTimestampUs).
//
// Input: lines (fuzz::Lines), cells separated by tabs, as `mariadb --batch` prints a result. The
// first line holds the column names: "*" alone stands for the statement's columns, and a name
// "$N" for the N-th (modulo their number) of the statement's columns followed by the three
// tables' own, so that mutations reach the columns the parser looks for. Every further line is a
// row; a cell "\N" is SQL NULL. Rows are padded with NULLs or cut to the number of columns, as
// the client library (base/mysql_conn.cc) returns them.
//
// Properties: never a crash. The reply parses exactly when it has no rows, or a SOURCE_TABLE
// column whose every cell names one of the three tables; then the channels account for every
// row (workers, applying, coordinators), their names are unique, every timestamp kept is one,
// the oldest applying transaction started no later than any other applying one of its channel
// and has an age only with the replica's NOW(6), never negative. Read as a table, rows without a
// CHANNEL_NAME column are an error, and nothing else but a worker table without
// APPLYING_TRANSACTION. A timestamp that parses prints back to the same instant.
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/applier_status.h"
#include "base/query_result.h"
#include "fuzz/check.h"

namespace lagwatch {
namespace {

constexpr std::string_view kReplyColumns[] = {"SOURCE_TABLE",
                                              "CHANNEL_NAME",
                                              "SERVICE_STATE",
                                              "NUM",
                                              "TRX",
                                              "TRX_ORIGINAL_COMMIT",
                                              "TRX_IMMEDIATE_COMMIT",
                                              "TRX_START",
                                              "LAST_TRX",
                                              "LAST_TRX_ORIGINAL_COMMIT",
                                              "LAST_TRX_IMMEDIATE_COMMIT",
                                              "LAST_TRX_START",
                                              "REPLICA_NOW"};

// The statement's columns, then every column of the three tables the parser reads.
const std::vector<std::string>& Names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n(std::begin(kReplyColumns), std::end(kReplyColumns));
    auto tables = SplitApplierReply(QueryResult{});
    for (const QueryResult* t : {&tables->workers, &tables->coordinators, &tables->connections}) {
      n.insert(n.end(), t->columns.begin(), t->columns.end());
    }
    return n;
  }();
  return names;
}

QueryResult ToQueryResult(std::string_view text) {
  QueryResult r;
  const auto lines = fuzz::Lines(text);
  if (lines[0] == "*") {
    r.columns.assign(std::begin(kReplyColumns), std::end(kReplyColumns));
  } else {
    for (std::string_view name : fuzz::Split(lines[0], '\t')) {
      size_t n = 0;
      if (name.size() > 1 && name[0] == '$') {
        auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), n);
        if (ec == std::errc() && end == name.data() + name.size()) {
          r.columns.push_back(Names()[n % Names().size()]);
          continue;
        }
      }
      r.columns.emplace_back(name);
    }
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    auto& row = r.rows.emplace_back();
    for (std::string_view cell : fuzz::Split(lines[i], '\t')) {
      if (row.size() == r.columns.size()) break;
      row.emplace_back(cell == "\\N" ? std::nullopt : std::optional<std::string>(cell));
    }
    row.resize(r.columns.size());
  }
  return r;
}

// The first column called `name`'s cell in `row` (nullopt: none, or NULL).
std::optional<std::string> CellOf(const QueryResult& r, size_t row, std::string_view name) {
  const int c = r.Column(name);
  return c < 0 ? std::nullopt : r.rows[row][c];
}

// `us` as MySQL prints a TIMESTAMP(6).
std::string Format(int64_t us) {
  using namespace std::chrono;
  const sys_days day = floor<days>(sys_time<microseconds>(microseconds(us)));
  const year_month_day ymd(day);
  int64_t in_day = us - duration_cast<microseconds>(day.time_since_epoch()).count();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02d:%02d:%02d.%06d", int(ymd.year()),
                unsigned(ymd.month()), unsigned(ymd.day()), int(in_day / 3'600'000'000),
                int(in_day / 60'000'000 % 60), int(in_day / 1'000'000 % 60),
                int(in_day % 1'000'000));
  return buf;
}

void CheckTimestamp(std::string_view text) {
  const auto us = ParseServerTimestampUs(text);
  if (!us) return;
  const std::string printed = Format(*us);
  FUZZ_CHECK(ParseServerTimestampUs(printed) == us, std::string(text) + " -> " + printed);
  FUZZ_CHECK(printed.substr(0, 19) == text.substr(0, 19), std::string(text) + " -> " + printed);
}

// Every timestamp a status keeps is one.
void CheckKept(const std::string& t) {
  FUZZ_CHECK(t.empty() || ParseServerTimestampUs(t).has_value(), t);
}
void CheckKept(const std::optional<ApplierTransaction>& t) {
  if (!t) return;
  FUZZ_CHECK(!t->gtid.empty(), "a transaction without a GTID");
  for (const std::string* s : {&t->original_commit, &t->immediate_commit, &t->started}) {
    CheckKept(*s);
  }
}

void CheckStatus(const ApplierStatus& st) {
  CheckKept(st.replica_now);
  std::set<std::string> names;
  for (const ApplierChannel& ch : st.channels) {
    FUZZ_CHECK(names.insert(ch.name).second, "channel twice: " + ch.name);
    FUZZ_CHECK(ch.applying <= ch.workers && ch.workers_on <= ch.workers, ch.name);
    FUZZ_CHECK(ch.oldest_applying.has_value() == (ch.applying > 0), ch.name);
    CheckKept(ch.oldest_applying);
    CheckKept(ch.last_heartbeat);
    if (ch.coordinator) {
      CheckKept(ch.coordinator->processing);
      CheckKept(ch.coordinator->last_processed);
    }
    if (ch.oldest_applying_age_us) {
      FUZZ_CHECK(*ch.oldest_applying_age_us >= 0, ch.name);
      FUZZ_CHECK(!st.replica_now.empty() && !ch.oldest_applying->started.empty(), ch.name);
    }
  }
}

void CheckReply(const QueryResult& r) {
  const auto parsed = ParseApplierReply(r);
  bool tags_ok = r.rows.empty() || r.Column("SOURCE_TABLE") >= 0;
  size_t worker_rows = 0, applying_rows = 0;
  std::set<std::string> coordinator_channels;
  for (size_t i = 0; i < r.rows.size() && tags_ok; ++i) {
    const std::string tag = CellOf(r, i, "SOURCE_TABLE").value_or("");
    if (tag == "worker") {
      ++worker_rows;
      if (!CellOf(r, i, "TRX").value_or("").empty()) ++applying_rows;
    } else if (tag == "coordinator") {
      coordinator_channels.insert(CellOf(r, i, "CHANNEL_NAME").value_or(""));
    } else if (tag != "connection") {
      tags_ok = false;
    }
  }
  FUZZ_CHECK(parsed.ok() == tags_ok, parsed.ok() ? "accepted" : parsed.status().ToString());
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.status().code() == Status::Code::kDataError, parsed.status().ToString());
    return;
  }
  CheckStatus(*parsed);
  size_t workers = 0, applying = 0, coordinators = 0;
  for (const ApplierChannel& ch : parsed->channels) {
    workers += ch.workers;
    applying += ch.applying;
    if (ch.coordinator) ++coordinators;
  }
  FUZZ_CHECK(workers == worker_rows, std::to_string(workers));
  FUZZ_CHECK(applying == applying_rows, std::to_string(applying));
  FUZZ_CHECK(coordinators == coordinator_channels.size(), std::to_string(coordinators));

  // The oldest applying transaction started no later than any other of its channel.
  for (size_t i = 0; i < r.rows.size(); ++i) {
    if (CellOf(r, i, "SOURCE_TABLE") != "worker" || CellOf(r, i, "TRX").value_or("").empty()) {
      continue;
    }
    const auto started = ParseServerTimestampUs(CellOf(r, i, "TRX_START").value_or(""));
    const ApplierChannel* ch = nullptr;
    for (const ApplierChannel& c : parsed->channels) {
      if (c.name == CellOf(r, i, "CHANNEL_NAME").value_or("")) ch = &c;
    }
    FUZZ_CHECK(ch && ch->oldest_applying, "an applying row without its channel");
    if (!started) continue;
    const auto oldest = ParseServerTimestampUs(ch->oldest_applying->started);
    FUZZ_CHECK(oldest && *oldest <= *started, ch->oldest_applying->started);
  }
}

// `r` read as each of the three tables.
void CheckTables(const QueryResult& r) {
  for (int t = 0; t < 3; ++t) {
    ApplierTables tables;
    QueryResult* slot[] = {&tables.workers, &tables.coordinators, &tables.connections};
    *slot[t] = r;
    if (!r.rows.empty()) tables.replica_now = r.rows[0].empty() ? "" : r.rows[0][0].value_or("");
    const auto parsed = ParseApplierTables(tables);
    const bool missing = !r.rows.empty() && (r.Column("CHANNEL_NAME") < 0 ||
                                             (t == 0 && r.Column("APPLYING_TRANSACTION") < 0));
    FUZZ_CHECK(parsed.ok() == !missing, parsed.ok() ? "accepted" : parsed.status().ToString());
    if (!parsed.ok()) continue;
    CheckStatus(*parsed);
    size_t workers = 0;
    for (const ApplierChannel& ch : parsed->channels) workers += ch.workers;
    FUZZ_CHECK(workers == (t == 0 ? r.rows.size() : 0), std::to_string(workers));
  }
}

}  // namespace
}  // namespace lagwatch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lagwatch::QueryResult r =
      lagwatch::ToQueryResult(std::string_view(reinterpret_cast<const char*>(data), size));
  lagwatch::CheckReply(r);
  lagwatch::CheckTables(r);
  for (const auto& row : r.rows) {
    for (const auto& cell : row) {
      if (cell) lagwatch::CheckTimestamp(*cell);
    }
  }
  return 0;
}
