#include "base/applier_status.h"

#include <chrono>
#include <limits>
#include <map>
#include <utility>

#include "base/mysql_errors.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

constexpr const char* kWorkerTable = "replication_applier_status_by_worker";
constexpr const char* kCoordinatorTable = "replication_applier_status_by_coordinator";
constexpr const char* kConnectionTable = "replication_connection_status";

// The statement's tables, in its order, with the value of SOURCE_TABLE that names each.
enum Table { kWorker, kCoordinator, kConnection, kNumTables };
constexpr const char* kTableNames[kNumTables] = {kWorkerTable, kCoordinatorTable, kConnectionTable};
constexpr const char* kTableTags[kNumTables] = {"worker", "coordinator", "connection"};

// The statement's shared columns and what each table puts there (nullptr: NULL). Columns of the
// same position hold values of one type in every table, so the UNION's column types stay what
// they are in the tables.
struct SharedColumn {
  const char* name;
  const char* from[kNumTables];
};
constexpr SharedColumn kShared[] = {
    {"CHANNEL_NAME", {"CHANNEL_NAME", "CHANNEL_NAME", "CHANNEL_NAME"}},
    {"SERVICE_STATE", {"SERVICE_STATE", "SERVICE_STATE", "SERVICE_STATE"}},
    {"NUM", {"WORKER_ID", nullptr, "COUNT_RECEIVED_HEARTBEATS"}},
    {"TRX", {"APPLYING_TRANSACTION", "PROCESSING_TRANSACTION", nullptr}},
    {"TRX_ORIGINAL_COMMIT",
     {"APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP",
      "PROCESSING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", nullptr}},
    {"TRX_IMMEDIATE_COMMIT",
     {"APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP",
      "PROCESSING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", nullptr}},
    {"TRX_START",
     {"APPLYING_TRANSACTION_START_APPLY_TIMESTAMP", "PROCESSING_TRANSACTION_START_BUFFER_TIMESTAMP",
      "LAST_HEARTBEAT_TIMESTAMP"}},
    {"LAST_TRX", {nullptr, "LAST_PROCESSED_TRANSACTION", nullptr}},
    {"LAST_TRX_ORIGINAL_COMMIT",
     {nullptr, "LAST_PROCESSED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", nullptr}},
    {"LAST_TRX_IMMEDIATE_COMMIT",
     {nullptr, "LAST_PROCESSED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", nullptr}},
    {"LAST_TRX_START", {nullptr, "LAST_PROCESSED_TRANSACTION_START_BUFFER_TIMESTAMP", nullptr}},
};
constexpr const char* kSourceColumn = "SOURCE_TABLE";
constexpr const char* kNowColumn = "REPLICA_NOW";

std::string BuildStatement() {
  std::string sql;
  for (int t = 0; t < kNumTables; ++t) {
    sql += t == 0 ? "SELECT " : " UNION ALL SELECT ";
    sql += std::string("'") + kTableTags[t] + "'";
    if (t == 0) sql += std::string(" AS ") + kSourceColumn;
    for (const SharedColumn& c : kShared) {
      sql += ", ";
      sql += c.from[t] ? c.from[t] : "NULL";
      if (t == 0 && (!c.from[t] || c.name != std::string_view(c.from[t]))) {
        sql += std::string(" AS ") + c.name;
      }
    }
    sql += ", NOW(6)";
    if (t == 0) sql += std::string(" AS ") + kNowColumn;
    sql += std::string(" FROM performance_schema.") + kTableNames[t];
  }
  return sql;
}

// A cell that is a timestamp other than the zero value, else "".
std::string Timestamp(const RowCells& cells, std::string_view column) {
  std::string v = cells.Text(column);
  return ParseServerTimestampUs(v) ? v : std::string();
}

Status MissingColumn(const char* table, const char* column) {
  return Status::DataError(std::string(table) + " has no " + column + " column");
}

ApplierTransaction ReadTransaction(const RowCells& cells, const char* gtid,
                                   const char* original_commit, const char* immediate_commit,
                                   const char* started) {
  return {cells.Text(gtid), Timestamp(cells, original_commit), Timestamp(cells, immediate_commit),
          Timestamp(cells, started)};
}

// The oldest applying transaction comes first: the earliest readable start of apply, then (none
// readable) the earliest readable original commit; equal keys keep the first row.
auto OldestKey(const ApplierTransaction& t) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  return std::pair(ParseServerTimestampUs(t.started).value_or(kNever),
                   ParseServerTimestampUs(t.original_commit).value_or(kNever));
}

// The channels by name, in the order first seen.
class Channels {
 public:
  ApplierChannel& Get(const std::string& name) {
    auto [it, added] = index_.try_emplace(name, channels_.size());
    if (added) channels_.emplace_back().name = name;
    return channels_[it->second];
  }
  std::vector<ApplierChannel> Take() { return std::move(channels_); }

 private:
  std::map<std::string, size_t> index_;
  std::vector<ApplierChannel> channels_;
};

Status ReadWorkers(const QueryResult& t, Channels& channels) {
  if (t.rows.empty()) return Status::Ok();
  for (const char* required : {"CHANNEL_NAME", "APPLYING_TRANSACTION"}) {
    if (t.Column(required) < 0) return MissingColumn(kWorkerTable, required);
  }
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const RowCells cells{t, i};
    ApplierChannel& ch = channels.Get(cells.Text("CHANNEL_NAME"));
    ++ch.workers;
    if (cells.Text("SERVICE_STATE") == "ON") ++ch.workers_on;
    ApplierTransaction trx = ReadTransaction(cells, "APPLYING_TRANSACTION",
                                             "APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP",
                                             "APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP",
                                             "APPLYING_TRANSACTION_START_APPLY_TIMESTAMP");
    if (trx.gtid.empty()) continue;
    ++ch.applying;
    if (!ch.oldest_applying || OldestKey(trx) < OldestKey(*ch.oldest_applying)) {
      ch.oldest_applying = std::move(trx);
    }
  }
  return Status::Ok();
}

Status ReadCoordinators(const QueryResult& t, Channels& channels) {
  if (t.rows.empty()) return Status::Ok();
  if (t.Column("CHANNEL_NAME") < 0) return MissingColumn(kCoordinatorTable, "CHANNEL_NAME");
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const RowCells cells{t, i};
    ApplierCoordinator c;
    c.service_state = cells.Text("SERVICE_STATE");
    auto processing = ReadTransaction(cells, "PROCESSING_TRANSACTION",
                                      "PROCESSING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP",
                                      "PROCESSING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP",
                                      "PROCESSING_TRANSACTION_START_BUFFER_TIMESTAMP");
    if (!processing.gtid.empty()) c.processing = std::move(processing);
    auto last = ReadTransaction(cells, "LAST_PROCESSED_TRANSACTION",
                                "LAST_PROCESSED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP",
                                "LAST_PROCESSED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP",
                                "LAST_PROCESSED_TRANSACTION_START_BUFFER_TIMESTAMP");
    if (!last.gtid.empty()) c.last_processed = std::move(last);
    channels.Get(cells.Text("CHANNEL_NAME")).coordinator = std::move(c);
  }
  return Status::Ok();
}

Status ReadConnections(const QueryResult& t, Channels& channels) {
  if (t.rows.empty()) return Status::Ok();
  if (t.Column("CHANNEL_NAME") < 0) return MissingColumn(kConnectionTable, "CHANNEL_NAME");
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const RowCells cells{t, i};
    ApplierChannel& ch = channels.Get(cells.Text("CHANNEL_NAME"));
    ch.receiver_state = cells.Text("SERVICE_STATE");
    ch.last_heartbeat = Timestamp(cells, "LAST_HEARTBEAT_TIMESTAMP");
    ch.received_heartbeats = ParseInt<uint64_t>(cells.Text("COUNT_RECEIVED_HEARTBEATS"));
  }
  return Status::Ok();
}

// `n` digits at `s[at]`, as a number; nullopt if any is not a digit.
std::optional<int> Digits(std::string_view s, size_t at, size_t n) {
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

bool HasApplierTables(const ServerFlavor& flavor) {
  const bool mysql_like =
      flavor.kind == ServerFlavor::kMySQL || flavor.kind == ServerFlavor::kPercona;
  return mysql_like && flavor.AtLeast(8, 0, 0);
}

const std::string& ApplierStatusStatement() {
  static const std::string sql = BuildStatement();
  return sql;
}

Result<ApplierTables> SplitApplierReply(const QueryResult& reply) {
  ApplierTables tables;
  QueryResult* out[kNumTables] = {&tables.workers, &tables.coordinators, &tables.connections};
  // Each table's columns, and where each comes from in the reply (-1: not in the reply).
  std::vector<int> from[kNumTables];
  for (int t = 0; t < kNumTables; ++t) {
    for (const SharedColumn& c : kShared) {
      if (!c.from[t]) continue;
      out[t]->columns.push_back(c.from[t]);
      from[t].push_back(reply.Column(c.name));
    }
  }
  if (reply.rows.empty()) return tables;
  const int source = reply.Column(kSourceColumn);
  if (source < 0)
    return Status::DataError(std::string("the applier status has no ") + kSourceColumn);
  const int now = reply.Column(kNowColumn);
  for (const auto& row : reply.rows) {
    auto cell = [&](int c) -> std::optional<std::string> {
      return c >= 0 && static_cast<size_t>(c) < row.size() ? row[c] : std::nullopt;
    };
    const std::string tag = cell(source).value_or("");
    int t = 0;
    while (t < kNumTables && tag != kTableTags[t]) ++t;
    if (t == kNumTables) {
      return Status::DataError(std::string("the applier status has a row from no table it "
                                           "reads: ") +
                               kSourceColumn + " '" + EscapeControl(tag.substr(0, 64)) + "'");
    }
    auto& cells = out[t]->rows.emplace_back();
    for (int c : from[t]) cells.push_back(cell(c));
    if (tables.replica_now.empty()) tables.replica_now = cell(now).value_or("");
  }
  return tables;
}

Result<ApplierStatus> ParseApplierTables(const ApplierTables& tables) {
  Channels channels;
  for (Status s :
       {ReadWorkers(tables.workers, channels), ReadCoordinators(tables.coordinators, channels),
        ReadConnections(tables.connections, channels)}) {
    if (!s.ok()) return s;
  }
  ApplierStatus st;
  const auto now = ParseServerTimestampUs(tables.replica_now);
  if (now) st.replica_now = tables.replica_now;
  st.channels = channels.Take();
  for (ApplierChannel& ch : st.channels) {
    if (!now || !ch.oldest_applying) continue;
    const auto started = ParseServerTimestampUs(ch.oldest_applying->started);
    if (started && *started <= *now) ch.oldest_applying_age_us = *now - *started;
  }
  return st;
}

Result<ApplierStatus> ParseApplierReply(const QueryResult& reply) {
  auto tables = SplitApplierReply(reply);
  if (!tables.ok()) return tables.status();
  return ParseApplierTables(*tables);
}

const ApplierChannel* ApplierStatus::Channel(std::string_view name) const {
  for (const ApplierChannel& ch : channels) {
    if (ch.name == name) return &ch;
  }
  return channels.size() == 1 ? &channels.front() : nullptr;
}

std::optional<int64_t> ParseServerTimestampUs(std::string_view s) {
  // YYYY-MM-DD hh:mm:ss, then nothing or '.' and 1 to 6 digits.
  constexpr std::string_view kShape = "0000-00-00 00:00:00";
  if (s.size() < kShape.size() || s.size() == kShape.size() + 1 || s.size() > kShape.size() + 7) {
    return std::nullopt;
  }
  for (size_t i : {4, 7}) {
    if (s[i] != '-') return std::nullopt;
  }
  if (s[10] != ' ' || s[13] != ':' || s[16] != ':') return std::nullopt;
  if (s.size() > kShape.size() && s[kShape.size()] != '.') return std::nullopt;
  const auto year = Digits(s, 0, 4), month = Digits(s, 5, 2), day = Digits(s, 8, 2),
             hour = Digits(s, 11, 2), minute = Digits(s, 14, 2), second = Digits(s, 17, 2);
  const size_t fraction_digits = s.size() > kShape.size() ? s.size() - kShape.size() - 1 : 0;
  const auto fraction =
      fraction_digits ? Digits(s, kShape.size() + 1, fraction_digits) : std::optional<int>(0);
  if (!year || !month || !day || !hour || !minute || !second || !fraction) return std::nullopt;
  if (*year < 1000 || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(*year),
                                         std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok()) return std::nullopt;  // the zero value ("0000-00-00 ...") among them
  int64_t micros = *fraction;
  for (size_t i = fraction_digits; i < 6; ++i) micros *= 10;
  const int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  return ((days * 24 + *hour) * 60 + *minute) * 60'000'000 + int64_t{*second} * 1'000'000 + micros;
}

const char* ApplierErrorReason(unsigned server_errno) {
  switch (server_errno) {
    case kErTableAccessDenied:
    case kErColumnAccessDenied:
    case kErDbAccessDenied:
    case kErSpecificAccessDenied:
      return "denied";
    case kErNoSuchTable:
    case kErBadField:
    case kErBadDb:
      return "no_table";
    default:
      return "server_error";
  }
}

void ApplierGate::SetFlavor(const ServerFlavor& flavor) {
  flavor_known_ = true;
  if (HasApplierTables(flavor)) {
    flavor_why_not_.clear();
  } else if (flavor.kind == ServerFlavor::kMariaDB) {
    flavor_why_not_ =
        "not asked: MariaDB's performance_schema has no applier transaction columns (MySQL 8.0+ "
        "only)";
  } else {
    flavor_why_not_ = "not asked: " + flavor.Describe() + " is not MySQL 8.0+";
  }
}

const char* ApplierGate::Refuse(unsigned server_errno, std::string_view message) {
  refused_ = "refused on this connection (" + EscapeControl(message.substr(0, 512)) +
             "): not asked again until the next connection; " + kApplierGrantHint;
  return ApplierErrorReason(server_errno);
}

}  // namespace lagwatch
