#include "client/sql_classify.h"

#include <string>
#include <vector>

#include "base/strings.h"

namespace lagwatch::client {
namespace {

// A token: a word (lower case), or a single punctuation character; literals and comments are
// dropped by the tokenizer.
struct Token {
  std::string text;
  bool word = false;
};

bool IsWordByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || u >= 0x80;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Skips a literal that opens with `quote` at s[i]; returns the index after it (s.size() when it
// never closes). A doubled quote stands for itself; in '...' and "..." so does an escaped one.
size_t SkipQuoted(std::string_view s, size_t i, char quote) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\' && quote != '`') {
      ++i;
    } else if (s[i] == quote) {
      if (i + 1 < s.size() && s[i + 1] == quote) {
        ++i;
      } else {
        return i + 1;
      }
    }
  }
  return s.size();
}

std::vector<Token> Tokenize(std::string_view s) {
  std::vector<Token> out;
  int executable_comments = 0;  // inside /*! ... */: the text is code, its */ is not
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    if (IsSpace(c)) {
      ++i;
    } else if (c == '#' || (c == '-' && next == '-' &&
                            (i + 2 >= s.size() || IsSpace(s[i + 2]) ||
                             static_cast<unsigned char>(s[i + 2]) < 0x20))) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && next == '*') {
      const bool bang = i + 2 < s.size() && s[i + 2] == '!';
      const bool mariadb_bang = s.substr(i + 2, 2) == "M!";
      if (bang || mariadb_bang) {
        i += bang ? 3 : 4;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;  // version: /*!50001 ... */
        ++executable_comments;
      } else {
        const size_t end = s.find("*/", i + 2);
        i = end == std::string_view::npos ? s.size() : end + 2;
      }
    } else if (c == '*' && next == '/' && executable_comments > 0) {
      --executable_comments;
      i += 2;
    } else if (c == '\'' || c == '"' || c == '`') {
      i = SkipQuoted(s, i, c);
      // A quoted identifier is still something, e.g. between FOR and UPDATE.
      out.push_back({"`", false});
    } else if (IsWordByte(c)) {
      size_t j = i;
      while (j < s.size() && IsWordByte(s[j])) ++j;
      out.push_back({AsciiLower(s.substr(i, j - i)), true});
      i = j;
    } else {
      out.push_back({std::string(1, c), false});
      ++i;
    }
  }
  return out;
}

bool IsWord(const std::vector<Token>& t, size_t i, std::string_view w) {
  return i < t.size() && t[i].word && t[i].text == w;
}

bool IsSessionBoundFunction(const std::vector<Token>& t, size_t i) {
  static constexpr std::string_view kFunctions[] = {
      "last_insert_id", "found_rows",   "row_count",
      "get_lock",       "release_lock", "release_all_locks",
      "is_used_lock",   "is_free_lock", "nextval",
      "setval",         "lastval"};
  if (!t[i].word) return false;
  if ((t[i].text == "next" || t[i].text == "previous") && IsWord(t, i + 1, "value") &&
      IsWord(t, i + 2, "for")) {
    return true;
  }
  if (i + 1 >= t.size() || t[i + 1].text != "(") return false;
  for (std::string_view f : kFunctions) {
    if (t[i].text == f) return true;
  }
  return false;
}

// One statement's tokens [begin, end).
SqlClass ClassifyOne(const std::vector<Token>& t, size_t begin, size_t end) {
  SqlClass c;
  size_t first = begin;
  while (first < end && t[first].text == "(") ++first;
  if (first == end) return c;
  bool select = IsWord(t, first, "select");
  if (IsWord(t, first, "with")) {
    // WITH [RECURSIVE] name AS (...), ... then the statement: its first keyword outside the
    // parentheses decides (MySQL 8 allows UPDATE and DELETE there).
    int depth = 0;
    for (size_t i = first + 1; i < end; ++i) {
      if (t[i].text == "(") ++depth;
      if (t[i].text == ")") --depth;
      if (depth == 0 && t[i].word &&
          (t[i].text == "select" || t[i].text == "update" || t[i].text == "delete" ||
           t[i].text == "insert" || t[i].text == "replace")) {
        select = t[i].text == "select";
        break;
      }
    }
  }
  bool read = select;
  for (size_t i = begin; i < end; ++i) {
    if (IsWord(t, i, "for") && (IsWord(t, i + 1, "update") || IsWord(t, i + 1, "share"))) {
      c.locking = true;
    } else if (IsWord(t, i, "lock") && IsWord(t, i + 1, "in") && IsWord(t, i + 2, "share") &&
               IsWord(t, i + 3, "mode")) {
      c.locking = true;
    } else if (IsWord(t, i, "into") || IsSessionBoundFunction(t, i)) {
      read = false;
    }
  }
  c.read = read && !c.locking;
  return c;
}

}  // namespace

SqlClass ClassifySql(std::string_view sql) {
  const std::vector<Token> t = Tokenize(sql);
  SqlClass all;
  bool any = false;
  bool all_read = true;
  size_t begin = 0;
  for (size_t i = 0; i <= t.size(); ++i) {
    if (i < t.size() && t[i].text != ";") continue;
    if (i > begin) {
      const SqlClass one = ClassifyOne(t, begin, i);
      any = true;
      all_read = all_read && one.read;
      all.locking = all.locking || one.locking;
    }
    begin = i + 1;
  }
  all.read = any && all_read && !all.locking;
  return all;
}

}  // namespace lagwatch::client
