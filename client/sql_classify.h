// Tells a router whether a statement may be read from a replica (docs/routing.md, "Force-primary
// cases"): a small tokenizer, not a parser. It skips comments (`-- `, `#`, `/* */`; but reads the
// inside of the executable comments `/*! */` and `/*M! */`, which the server runs) and literals
// ('...', "...", `...`), so words inside them never count.
//
// Pure functions; thread-safe.
#pragma once

#include <string_view>

namespace lagwatch::client {

struct SqlClass {
  // Nothing but reads: every statement in the text is a SELECT (or `WITH ... SELECT`, or a
  // parenthesised SELECT) without INTO and without the session-bound functions below. Anything
  // else — writes, DDL, SET, CALL, SHOW, transaction control, text that does not tokenize as
  // expected — is not a read and goes to the primary.
  bool read = false;
  // A locking read: FOR UPDATE, FOR SHARE or LOCK IN SHARE MODE outside comments and literals.
  // Implies !read.
  bool locking = false;
};

// Classifies `sql`, which may hold several statements separated by ';'. Never fails: the worst
// case is "not a read" (the primary). Session-bound functions make a SELECT go to the primary,
// since their answer lives in the primary's session or takes effect there: LAST_INSERT_ID,
// FOUND_ROWS, ROW_COUNT, GET_LOCK, RELEASE_LOCK, RELEASE_ALL_LOCKS, IS_USED_LOCK, IS_FREE_LOCK,
// NEXTVAL, SETVAL, LASTVAL and NEXT VALUE FOR / PREVIOUS VALUE FOR. Other functions that write
// (a stored function's side effects) cannot be seen in the text: force those to the primary.
SqlClass ClassifySql(std::string_view sql);

}  // namespace lagwatch::client
