#include "base/server_flavor.h"

#include <doctest/doctest.h>

#include <string>

namespace lagwatch {
namespace {

struct Case {
  const char* version;
  const char* comment;
  ServerFlavor::Kind kind;
  int major, minor, patch;
};

// Where each shape comes from:
//  - MySQL's own builds: "8.0.36", "8.4.3", "9.1.0" with "MySQL Community Server - GPL"; VERSION()
//    is the version "and might also include a suffix indicating server build or configuration
//    information", https://dev.mysql.com/doc/refman/8.4/en/server-system-variables.html
//  - MySQL 5.7 appends "-log" when the general, slow or binary log is on:
//    https://dev.mysql.com/doc/refman/5.7/en/server-system-variables.html#sysvar_version
//  - Ubuntu's packages carry the package revision: "8.0.36-0ubuntu0.22.04.1", comment "(Ubuntu)"
//    (https://launchpad.net/ubuntu/+source/mysql-8.0; not checked on a server here).
//  - Percona Server adds its release after the MySQL version, "5.7.44-48"
//    (https://docs.percona.com/percona-server/5.7/), and names itself in the comment.
//  - MariaDB puts "-MariaDB" in the version; Debian 12 adds its revision and "Debian 12" as the
//    comment; "-log" when the binary log is on. "10.11.19-MariaDB-0+deb12u1-log" / "Debian 12" is
//    what this machine's mariadbd 10.11.19 answered; MariaDB's own builds say "mariadb.org binary
//    distribution" (https://mariadb.org/download/).
//  - "5.5.5-" before a MariaDB 10.x version: the connection handshake of MariaDB before 11.0
//    (mariadbd 10.11.19 here sent "5.5.5-10.11.19-MariaDB-0+deb12u1-log"); its VERSION() has no
//    such prefix.
constexpr Case kCases[] = {
    {"8.0.36", "MySQL Community Server - GPL", ServerFlavor::kMySQL, 8, 0, 36},
    {"8.0.36-0ubuntu0.22.04.1", "(Ubuntu)", ServerFlavor::kMySQL, 8, 0, 36},
    {"8.4.3", "MySQL Community Server - GPL", ServerFlavor::kMySQL, 8, 4, 3},
    {"9.1.0", "MySQL Community Server - GPL", ServerFlavor::kMySQL, 9, 1, 0},
    {"5.7.44-log", "MySQL Community Server (GPL)", ServerFlavor::kMySQL, 5, 7, 44},
    {"5.7.44-48-log", "Percona Server (GPL), Release 48, Revision 497f936a373",
     ServerFlavor::kPercona, 5, 7, 44},
    {"10.11.6-MariaDB-0+deb12u1", "Debian 12", ServerFlavor::kMariaDB, 10, 11, 6},
    {"10.11.19-MariaDB-0+deb12u1-log", "Debian 12", ServerFlavor::kMariaDB, 10, 11, 19},
    {"10.5.23-MariaDB-log", "mariadb.org binary distribution", ServerFlavor::kMariaDB, 10, 5, 23},
    {"11.4.2-MariaDB", "mariadb.org binary distribution", ServerFlavor::kMariaDB, 11, 4, 2},
    {"5.5.5-10.11.19-MariaDB-0+deb12u1-log", "Debian 12", ServerFlavor::kMariaDB, 10, 11, 19},
    // A version that says nothing of MariaDB, from a MariaDB build: the comment decides.
    {"10.6.16", "mariadb.org binary distribution", ServerFlavor::kMariaDB, 10, 6, 16},
};

TEST_CASE("ParseServerFlavor reads the kind and version of MySQL, Percona and MariaDB") {
  for (const Case& c : kCases) {
    CAPTURE(c.version);
    const ServerFlavor f = ParseServerFlavor(c.version, c.comment);
    CHECK(f.kind == c.kind);
    CHECK(f.major == c.major);
    CHECK(f.minor == c.minor);
    CHECK(f.patch == c.patch);
    CHECK(f.version == c.version);
    CHECK(f.comment == c.comment);
    CHECK(f.VersionKnown());
  }
}

TEST_CASE("ParseServerFlavor: what it cannot read stays unknown, never a crash") {
  for (const char* version : {"", "8", "8.0", "8.0.", "x.y.z", "8.0.36.1", "99999.0.1", "8.00000.1",
                              "-8.0.36", " 8.0.36", "0.0.0", "18446744073709551616.0.0"}) {
    CAPTURE(version);
    const ServerFlavor f = ParseServerFlavor(version, "");
    CHECK(f.kind == ServerFlavor::kUnknown);
    CHECK_FALSE(f.VersionKnown());
    CHECK(f.major == 0);
    CHECK(f.minor == 0);
    CHECK(f.patch == 0);
    CHECK(f.version == version);
    CHECK(std::string(ReplicaStatusStatement(f)) == "SHOW SLAVE STATUS");
    CHECK(std::string(BinaryLogStatusStatement(f)) == "SHOW MASTER STATUS");
    CHECK_FALSE(HasMariaDbGtid(f));
  }
  // The kind is known, the version is not: the old statements.
  const ServerFlavor maria = ParseServerFlavor("MariaDB", "");
  CHECK(maria.kind == ServerFlavor::kMariaDB);
  CHECK_FALSE(maria.VersionKnown());
  CHECK(std::string(ReplicaStatusStatement(maria)) == "SHOW SLAVE STATUS");
  CHECK_FALSE(HasMariaDbGtid(maria));
  // "5.5.5-" is MariaDB's only; a MySQL 5.5.5 stays one.
  const ServerFlavor old = ParseServerFlavor("5.5.5-log", "MySQL Community Server (GPL)");
  CHECK(old.kind == ServerFlavor::kMySQL);
  CHECK(old.AtLeast(5, 5, 5));
  CHECK_FALSE(old.AtLeast(5, 5, 6));
}

TEST_CASE("ParseServerFlavor from SELECT VERSION(), @@version_comment") {
  QueryResult r;
  r.columns = {"VERSION()", "@@version_comment"};
  CHECK(ParseServerFlavor(r).status().code() == Status::Code::kDataError);
  r.rows.push_back({"8.4.3", "MySQL Community Server - GPL"});
  auto f = ParseServerFlavor(r);
  REQUIRE(f.ok());
  CHECK(f->kind == ServerFlavor::kMySQL);
  CHECK(f->Describe() == "MySQL 8.4.3 (MySQL Community Server - GPL)");
  r.rows[0] = {"10.11.6-MariaDB-0+deb12u1", std::nullopt};
  f = ParseServerFlavor(r);
  REQUIRE(f.ok());
  CHECK(f->Describe() == "MariaDB 10.11.6-MariaDB-0+deb12u1");
  r.rows[0].clear();  // a short row reads as empty cells
  f = ParseServerFlavor(r);
  REQUIRE(f.ok());
  CHECK(f->Describe() == "unknown server (no version)");
  CHECK(ParseServerFlavor("8.0.1\n\x1b[2J", "a\tb").Describe() ==
        "MySQL 8.0.1\\x0a\\x1b[2J (a\\x09b)");
}

// Versions on each side of the changes, and the statements they get.
struct StatementCase {
  const char* version;
  const char* comment;
  const char* replica_status;
  const char* binary_log_status;
};
constexpr const char* kMySql = "MySQL Community Server - GPL";
constexpr StatementCase kStatements[] = {
    {"5.7.44-log", kMySql, "SHOW SLAVE STATUS", "SHOW MASTER STATUS"},
    {"8.0.21", kMySql, "SHOW SLAVE STATUS", "SHOW MASTER STATUS"},
    {"8.0.22", kMySql, "SHOW REPLICA STATUS", "SHOW MASTER STATUS"},
    {"8.1.0", kMySql, "SHOW REPLICA STATUS", "SHOW MASTER STATUS"},
    {"8.2.0", kMySql, "SHOW REPLICA STATUS", "SHOW BINARY LOG STATUS"},
    {"8.4.3", kMySql, "SHOW REPLICA STATUS", "SHOW BINARY LOG STATUS"},
    {"9.1.0", kMySql, "SHOW REPLICA STATUS", "SHOW BINARY LOG STATUS"},
    {"5.7.44-48-log", "Percona Server (GPL), Release 48", "SHOW SLAVE STATUS",
     "SHOW MASTER STATUS"},
    {"8.0.36-28", "Percona Server (GPL), Release 28", "SHOW REPLICA STATUS", "SHOW MASTER STATUS"},
    {"8.4.2-2", "Percona Server (GPL), Release 2", "SHOW REPLICA STATUS", "SHOW BINARY LOG STATUS"},
    {"10.4.32-MariaDB", "", "SHOW SLAVE STATUS", "SHOW MASTER STATUS"},
    {"10.5.0-MariaDB", "", "SHOW SLAVE STATUS", "SHOW MASTER STATUS"},
    {"10.5.1-MariaDB", "", "SHOW REPLICA STATUS", "SHOW MASTER STATUS"},
    {"10.5.2-MariaDB", "", "SHOW REPLICA STATUS", "SHOW BINLOG STATUS"},
    {"11.4.2-MariaDB", "", "SHOW REPLICA STATUS", "SHOW BINLOG STATUS"},
};

TEST_CASE(
    "Statements: SHOW REPLICA STATUS from MySQL 8.0.22 and MariaDB 10.5.1; binary log status") {
  for (const StatementCase& c : kStatements) {
    CAPTURE(c.version);
    const ServerFlavor f = ParseServerFlavor(c.version, c.comment);
    CHECK(std::string(ReplicaStatusStatement(f)) == c.replica_status);
    CHECK(std::string(BinaryLogStatusStatement(f)) == c.binary_log_status);
  }
}

TEST_CASE("HasMariaDbGtid: MariaDB 10.0.2 and later") {
  CHECK_FALSE(HasMariaDbGtid(ParseServerFlavor("8.4.3", "MySQL Community Server - GPL")));
  CHECK_FALSE(HasMariaDbGtid(ParseServerFlavor("10.0.1-MariaDB", "")));
  CHECK(HasMariaDbGtid(ParseServerFlavor("10.0.2-MariaDB", "")));
  CHECK(HasMariaDbGtid(ParseServerFlavor("10.11.6-MariaDB-0+deb12u1", "Debian 12")));
  CHECK(HasMariaDbGtid(ParseServerFlavor("5.5.5-10.3.39-MariaDB", "")));
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

TEST_CASE("a refused SHOW SLAVE STATUS is retried as SHOW REPLICA STATUS, nothing else is") {
  // MySQL 8.4 removed SHOW SLAVE STATUS and answers it with ER_PARSE_ERROR (1064).
  CHECK(std::string(ReplicaStatusRetry("SHOW SLAVE STATUS", 1064)) == "SHOW REPLICA STATUS");
  CHECK(ReplicaStatusRetry("SHOW REPLICA STATUS", 1064) == nullptr);
  CHECK(ReplicaStatusRetry("SHOW SLAVE STATUS", 1227) == nullptr);  // a missing privilege
  CHECK(ReplicaStatusRetry("SHOW SLAVE STATUS", 0) == nullptr);
}

}  // namespace
}  // namespace lagwatch
