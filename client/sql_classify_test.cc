#include "client/sql_classify.h"

#include <doctest/doctest.h>

namespace lagwatch::client {
namespace {

bool Read(const char* sql) { return ClassifySql(sql).read; }
bool Locking(const char* sql) { return ClassifySql(sql).locking; }

TEST_CASE("plain SELECTs are reads, in any case and with leading parentheses or CTEs") {
  CHECK(Read("SELECT * FROM t WHERE id = 1"));
  CHECK(Read("  select 1"));
  CHECK(Read("SeLeCt 1;"));
  CHECK(Read("(SELECT a FROM t) UNION (SELECT a FROM u)"));
  CHECK(Read("WITH c AS (SELECT 1) SELECT * FROM c"));
  CHECK_FALSE(Read("WITH c AS (SELECT id FROM t) DELETE FROM t WHERE id IN (SELECT id FROM c)"));
}

TEST_CASE("writes and everything else are not reads") {
  for (const char* sql : {"INSERT INTO t VALUES (1)",
                          "UPDATE t SET a = 1",
                          "DELETE FROM t",
                          "REPLACE INTO t VALUES (1)",
                          "CREATE TABLE t (a INT)",
                          "SET @a = 1",
                          "CALL p()",
                          "BEGIN",
                          "SHOW MASTER STATUS",
                          "",
                          "   ",
                          "-- just a comment",
                          "SELECT 1; DELETE FROM t",
                          "SELECT a INTO @x FROM t",
                          "SELECT * FROM t INTO OUTFILE '/tmp/x'",
                          "SELECT LAST_INSERT_ID()",
                          "select get_lock('x', 1)",
                          "SELECT NEXTVAL(s)",
                          "SELECT NEXT VALUE FOR s",
                          "SELECT FOUND_ROWS()"}) {
    CAPTURE(sql);
    CHECK_FALSE(Read(sql));
  }
}

TEST_CASE("locking reads are found outside comments and literals only") {
  CHECK(Locking("SELECT * FROM t WHERE id = 1 FOR UPDATE"));
  CHECK(Locking("select * from t for share"));
  CHECK(Locking("SELECT * FROM t LOCK IN SHARE MODE"));
  CHECK(Locking("SELECT * FROM t FOR /* why not */ UPDATE"));
  CHECK(Locking("SELECT * FROM t FOR\n\tUPDATE NOWAIT"));
  CHECK_FALSE(Read("SELECT * FROM t FOR UPDATE"));

  // The words inside literals, quoted identifiers and comments are not the clause.
  for (const char* sql :
       {"SELECT 'for update' FROM t", "SELECT \"FOR UPDATE\" FROM t", "SELECT `for update` FROM t",
        "SELECT 1 -- FOR UPDATE", "SELECT 1 # FOR UPDATE", "SELECT 1 /* FOR UPDATE */",
        "SELECT 'it''s for update' FROM t", "SELECT 'a\\' for update' FROM t",
        "SELECT * FROM t WHERE note = 'lock in share mode'"}) {
    CAPTURE(sql);
    CHECK_FALSE(Locking(sql));
    CHECK(Read(sql));
  }
}

TEST_CASE("comments are recognised as the server does") {
  // '--' needs a space after it; without one it is two minus signs.
  CHECK(Read("SELECT 1--1"));
  CHECK(Locking("SELECT 1--1\nFOR UPDATE"));
  CHECK(Read("/* leading */ SELECT 1"));
  CHECK_FALSE(Read("/* SELECT */ DELETE FROM t"));
  CHECK(Read("# DELETE\nSELECT 1"));
  // An unterminated comment or literal ends the text, never the program.
  CHECK(Read("SELECT 1 /* never closed"));
  CHECK(Read("SELECT 'never closed FOR UPDATE"));
}

TEST_CASE("executable comments are code: the server runs what is inside") {
  CHECK(Locking("SELECT * FROM t /*!50000 FOR UPDATE */"));
  CHECK(Locking("SELECT * FROM t /*M! FOR UPDATE */"));
  CHECK_FALSE(Read("/*! DELETE FROM t */"));
  CHECK(Read("SELECT /*+ MAX_EXECUTION_TIME(100) */ * FROM t"));
}

}  // namespace
}  // namespace lagwatch::client
