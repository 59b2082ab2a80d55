// Fuzzes ParseSlaveStatus (base/slave_status.h) on a QueryResult built from the input, and the
// executed source coordinates it reads as binary log positions (base/position.h).
//
// Input: lines (fuzz::Lines), cells separated by tabs, as `mariadb --batch` prints a result. The
// first line holds the column names: "*" alone stands for the 54 columns of MariaDB 10.11's
// SHOW SLAVE STATUS, and a name "$N" for the N-th of them (modulo 54), so that mutations reach
// the columns the parser looks for. Every further line is a row; a cell "\N" is SQL NULL. Rows
// are padded with NULLs or cut to the number of columns: the client library (base/mysql_conn.cc)
// always returns one cell per column, and ParseSlaveStatus relies on it.
//
// Properties: the result follows the contract cell by cell, checked against the first row the
// way a reader of the documentation would look the cells up: the Slave_*/Master_* names, or, when
// the row has Replica_IO_Running and Replica_SQL_Running, the names MySQL 8.0.22 gave them
// (Slave -> Replica, Master -> Source). And a result without any Replica/Source name parses to the
// same status once its columns are renamed that way (but for column_family).
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/binlog_coords.h"
#include "base/position.h"
#include "base/query_result.h"
#include "base/slave_status.h"
#include "fuzz/check.h"

namespace lagwatch {
namespace {

constexpr std::string_view kColumns[] = {"Slave_IO_State",
                                         "Master_Host",
                                         "Master_User",
                                         "Master_Port",
                                         "Connect_Retry",
                                         "Master_Log_File",
                                         "Read_Master_Log_Pos",
                                         "Relay_Log_File",
                                         "Relay_Log_Pos",
                                         "Relay_Master_Log_File",
                                         "Slave_IO_Running",
                                         "Slave_SQL_Running",
                                         "Replicate_Do_DB",
                                         "Replicate_Ignore_DB",
                                         "Replicate_Do_Table",
                                         "Replicate_Ignore_Table",
                                         "Replicate_Wild_Do_Table",
                                         "Replicate_Wild_Ignore_Table",
                                         "Last_Errno",
                                         "Last_Error",
                                         "Skip_Counter",
                                         "Exec_Master_Log_Pos",
                                         "Relay_Log_Space",
                                         "Until_Condition",
                                         "Until_Log_File",
                                         "Until_Log_Pos",
                                         "Master_SSL_Allowed",
                                         "Master_SSL_CA_File",
                                         "Master_SSL_CA_Path",
                                         "Master_SSL_Cert",
                                         "Master_SSL_Cipher",
                                         "Master_SSL_Key",
                                         "Seconds_Behind_Master",
                                         "Master_SSL_Verify_Server_Cert",
                                         "Last_IO_Errno",
                                         "Last_IO_Error",
                                         "Last_SQL_Errno",
                                         "Last_SQL_Error",
                                         "Replicate_Ignore_Server_Ids",
                                         "Master_Server_Id",
                                         "Master_SSL_Crl",
                                         "Master_SSL_Crlpath",
                                         "Using_Gtid",
                                         "Gtid_IO_Pos",
                                         "Replicate_Do_Domain_Ids",
                                         "Replicate_Ignore_Domain_Ids",
                                         "Parallel_Mode",
                                         "SQL_Delay",
                                         "SQL_Remaining_Delay",
                                         "Slave_SQL_Running_State",
                                         "Slave_DDL_Groups",
                                         "Slave_Non_Transactional_Groups",
                                         "Slave_Transactional_Groups",
                                         "Replicate_Rewrite_DB"};
constexpr size_t kNumColumns = std::size(kColumns);

QueryResult ToQueryResult(std::string_view text) {
  QueryResult r;
  const auto lines = fuzz::Lines(text);
  if (lines[0] == "*") {
    r.columns.assign(std::begin(kColumns), std::end(kColumns));
  } else {
    for (std::string_view name : fuzz::Split(lines[0], '\t')) {
      size_t n = 0;
      if (name.size() > 1 && name[0] == '$') {
        auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), n);
        if (ec == std::errc() && end == name.data() + name.size()) name = kColumns[n % kNumColumns];
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

// The first row's cell of the first column called `name`: nullopt when there is none or it is
// NULL.
std::optional<std::string> FirstCell(const QueryResult& r, std::string_view name) {
  for (size_t i = 0; i < r.columns.size(); ++i) {
    if (r.columns[i] == name) return r.rows.empty() ? std::nullopt : r.rows[0][i];
  }
  return std::nullopt;
}

// `name` as MySQL's SHOW REPLICA STATUS calls it: each "Slave" read "Replica", each "Master"
// "Source".
std::string ReplicaName(std::string name) {
  for (auto [from, to] :
       {std::pair<std::string_view, std::string_view>{"Slave", "Replica"}, {"Master", "Source"}}) {
    for (size_t at = name.find(from); at != std::string::npos;
         at = name.find(from, at + to.size())) {
      name.replace(at, from.size(), to);
    }
  }
  return name;
}

bool Has(const QueryResult& r, std::string_view a, std::string_view b) {
  return r.Column(a) >= 0 && r.Column(b) >= 0;
}

template <typename T>
std::optional<T> Integer(const std::optional<std::string>& cell) {
  T v = 0;
  if (!cell || cell->empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(cell->data(), cell->data() + cell->size(), v);
  if (ec != std::errc() || end != cell->data() + cell->size()) return std::nullopt;
  return v;
}

// The executed source coordinates as the binlog positions kind reads them (agent/assessment.cc):
// BASE.DIGITS parses (always, with a non-empty base and up to 18 digits, which fit in 64 bits),
// anything accepted has that shape, prints back as the server names its files, and includes
// itself.
void CheckExecutedCoords(const ReplicationStatus& st) {
  if (!st.exec_source_log_pos) return;
  const std::string& file = st.exec_source_log_file;
  auto coords = ParseBinlogCoords(file, *st.exec_source_log_pos);
  const size_t dot = file.rfind('.');
  const std::string_view suffix =
      dot == std::string::npos ? std::string_view() : std::string_view(file).substr(dot + 1);
  const bool digits = !suffix.empty() && suffix.find_first_not_of("0123456789") == suffix.npos;
  if (dot != std::string::npos && dot > 0 && digits && suffix.size() <= 18) {
    FUZZ_CHECK(coords.ok(), coords.status().ToString());
  }
  if (!coords.ok()) return;
  FUZZ_CHECK(dot != std::string::npos && dot > 0 && digits, file);
  FUZZ_CHECK(coords->base == file.substr(0, dot), coords->base);
  const Position pos(coords.value());
  FUZZ_CHECK(pos.Compare(pos) == Inclusion::kIncludes, "");
  const std::string text = pos.ToString();
  const size_t colon = text.rfind(':');
  auto again = ParseBinlogCoords(std::string_view(text).substr(0, colon), coords->pos);
  FUZZ_CHECK(again.ok() && again.value() == coords.value(), text);
}

void Check(const QueryResult& r, const Result<ReplicationStatus>& parsed) {
  const bool replica = Has(r, "Replica_IO_Running", "Replica_SQL_Running");
  const bool slave = Has(r, "Slave_IO_Running", "Slave_SQL_Running");
  if (!r.rows.empty() && !replica && !slave) {
    FUZZ_CHECK(!parsed.ok() && parsed.status().code() == Status::Code::kDataError,
               parsed.ok() ? "accepted" : parsed.status().ToString());
    return;
  }
  FUZZ_CHECK(parsed.ok(), parsed.status().ToString());
  const ReplicationStatus& st = *parsed;
  FUZZ_CHECK(st.known, "");
  FUZZ_CHECK(st.configured == !r.rows.empty(), "");
  FUZZ_CHECK(st.row_count == r.rows.size(), "");
  FUZZ_CHECK(st.column_family == (replica ? ColumnFamily::kReplica
                                  : slave ? ColumnFamily::kSlave
                                          : ColumnFamily::kNone),
             "");
  // The first row's cell of a column named as in SHOW SLAVE STATUS, in the row's family.
  auto cell = [&](const char* slave_name) {
    return FirstCell(r, replica ? ReplicaName(slave_name) : std::string(slave_name));
  };

  const std::string io = cell("Slave_IO_Running").value_or("");
  FUZZ_CHECK(st.io_state == io, st.io_state + " != " + io);
  FUZZ_CHECK(st.io_running == (io == "Yes"), io);
  FUZZ_CHECK(st.sql_running == (cell("Slave_SQL_Running") == "Yes"), "");
  FUZZ_CHECK(st.seconds_behind_master == Integer<int64_t>(cell("Seconds_Behind_Master")), "");
  FUZZ_CHECK(st.relay_log_space == Integer<int64_t>(cell("Relay_Log_Space")), "");

  std::string error;
  for (const char* column : {"Last_IO_Error", "Last_SQL_Error"}) {
    if (auto v = FirstCell(r, column); v && !v->empty()) error = *v;
  }
  FUZZ_CHECK(st.last_error == error, st.last_error + " != " + error);

  FUZZ_CHECK(st.source_host == cell("Master_Host").value_or(""), st.source_host);
  FUZZ_CHECK(st.source_port == Integer<int64_t>(cell("Master_Port")), "");
  FUZZ_CHECK(st.source_server_id == Integer<int64_t>(cell("Master_Server_Id")), "");
  FUZZ_CHECK(st.exec_source_log_file == cell("Relay_Master_Log_File").value_or(""), "");
  FUZZ_CHECK(st.exec_source_log_pos == Integer<uint64_t>(cell("Exec_Master_Log_Pos")), "");
  FUZZ_CHECK(st.read_source_log_file == cell("Master_Log_File").value_or(""), "");
  FUZZ_CHECK(st.read_source_log_pos == Integer<uint64_t>(cell("Read_Master_Log_Pos")), "");
  FUZZ_CHECK(st.using_gtid == FirstCell(r, "Using_Gtid").value_or(""), "");
  FUZZ_CHECK(st.gtid_io_pos == FirstCell(r, "Gtid_IO_Pos").value_or(""), "");
  FUZZ_CHECK(st.executed_gtid_set == FirstCell(r, "Executed_Gtid_Set").value_or(""), "");
  const auto auto_position = Integer<int64_t>(FirstCell(r, "Auto_Position"));
  FUZZ_CHECK(st.auto_position == (auto_position == 0 || auto_position == 1
                                      ? std::optional<bool>(auto_position == 1)
                                      : std::nullopt),
             "");
  CheckExecutedCoords(st);
}

// Without any Replica/Source name, the same columns renamed to MySQL's replica names give the
// same status.
void CheckRenamed(const QueryResult& r, const Result<ReplicationStatus>& parsed) {
  for (const std::string& c : r.columns) {
    if (c.find("Replica") != std::string::npos || c.find("Source") != std::string::npos) return;
  }
  QueryResult renamed = r;
  for (std::string& c : renamed.columns) c = ReplicaName(c);
  auto other = ParseSlaveStatus(renamed);
  FUZZ_CHECK(other.ok() == parsed.ok(), other.status().ToString());
  if (!parsed.ok()) return;
  ReplicationStatus same = *other;
  if (same.column_family == ColumnFamily::kReplica) same.column_family = ColumnFamily::kSlave;
  FUZZ_CHECK(same == *parsed, "renamed columns parse differently");
}

}  // namespace
}  // namespace lagwatch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lagwatch::QueryResult r =
      lagwatch::ToQueryResult(std::string_view(reinterpret_cast<const char*>(data), size));
  const auto parsed = lagwatch::ParseSlaveStatus(r);
  lagwatch::Check(r, parsed);
  lagwatch::CheckRenamed(r, parsed);
  return 0;
}
