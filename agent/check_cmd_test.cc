#include "agent/check_cmd.h"

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

// SHOW GRANTS lines as MariaDB 10.11 prints them (the sandbox's users) and as MySQL 8.0 prints
// them (https://dev.mysql.com/doc/refman/8.0/en/show-grants.html).
const std::vector<std::string> kMariaDbWriter = {
    "GRANT USAGE ON *.* TO `lagwatch_writer`@`127.0.0.1` IDENTIFIED BY PASSWORD "
    "'*0123456789ABCDEF0123456789ABCDEF01234567'",
    "GRANT SELECT, INSERT, UPDATE, CREATE ON `heartbeat`.* TO `lagwatch_writer`@`127.0.0.1`"};
const std::vector<std::string> kMySqlProbe = {
    "GRANT REPLICATION CLIENT ON *.* TO `lagwatch_probe`@`%`",
    "GRANT SELECT ON `heartbeat`.`mysql_heartbeat` TO `lagwatch_probe`@`%`"};

TEST_CASE("grants: privileges on the database or the table count, others do not") {
  CHECK(GrantsInclude(kMariaDbWriter, {"SELECT", "INSERT", "UPDATE", "CREATE"}, "heartbeat",
                      "mysql_heartbeat"));
  CHECK(GrantsInclude(kMariaDbWriter, {"insert"}, "HEARTBEAT", "mysql_heartbeat"));
  CHECK_FALSE(GrantsInclude(kMariaDbWriter, {"DELETE"}, "heartbeat", "mysql_heartbeat"));
  CHECK_FALSE(GrantsInclude(kMariaDbWriter, {"SELECT"}, "other", "mysql_heartbeat"));
  CHECK(GrantsInclude(kMySqlProbe, {"SELECT"}, "heartbeat", "mysql_heartbeat"));
  CHECK_FALSE(GrantsInclude(kMySqlProbe, {"SELECT"}, "heartbeat", "other_table"));
  // ALL PRIVILEGES on *.* grants everything; USAGE grants nothing.
  CHECK(GrantsInclude({"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"},
                      {"SELECT", "INSERT"}, "heartbeat", "t"));
  CHECK_FALSE(GrantsInclude({"GRANT USAGE ON *.* TO `u`@`h`"}, {"SELECT"}, "heartbeat", "t"));
  // A privilege is a whole item of the list, and a role grant is not followed.
  CHECK_FALSE(GrantsInclude({"GRANT SELECT_PRIV_X ON *.* TO `u`@`h`"}, {"SELECT"}, "db", "t"));
  CHECK_FALSE(GrantsInclude({"GRANT `monitor`@`%` TO `u`@`h`"}, {"SELECT"}, "db", "t"));
  CHECK_FALSE(GrantsInclude({}, {"SELECT"}, "db", "t"));
}

TEST_CASE("grants are printed without what follows IDENTIFIED") {
  CHECK(RedactGrant(kMariaDbWriter[0]) ==
        "GRANT USAGE ON *.* TO `lagwatch_writer`@`127.0.0.1` IDENTIFIED BY <redacted>");
  CHECK(RedactGrant("GRANT USAGE ON *.* TO `u`@`h` identified via ed25519 using 'abc'") ==
        "GRANT USAGE ON *.* TO `u`@`h` IDENTIFIED BY <redacted>");
  CHECK(RedactGrant(kMariaDbWriter[1]) == kMariaDbWriter[1]);
}

}  // namespace
}  // namespace lagwatch
