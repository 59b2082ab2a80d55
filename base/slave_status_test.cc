#include "base/slave_status.h"

#include <doctest/doctest.h>

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

}  // namespace
}  // namespace lagwatch
