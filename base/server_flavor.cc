#include "base/server_flavor.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "base/mysql_errors.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                     [](char a, char b) { return AsciiLower(a) == AsciiLower(b); }) !=
         haystack.end();
}

// A run of 1 to 4 digits at the front of `s`, consumed; nullopt otherwise.
std::optional<int> TakeNumber(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && n <= 4 && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || n > 4) return std::nullopt;
  auto v = ParseInt<int>(s.substr(0, n));
  s.remove_prefix(n);
  return v;
}

// "major.minor.patch" at the front of `s`, followed by the end or a character that is not a
// digit or '.'.
std::optional<std::tuple<int, int, int>> LeadingVersion(std::string_view s) {
  auto major = TakeNumber(s);
  if (!major || !s.starts_with('.')) return std::nullopt;
  s.remove_prefix(1);
  auto minor = TakeNumber(s);
  if (!minor || !s.starts_with('.')) return std::nullopt;
  s.remove_prefix(1);
  auto patch = TakeNumber(s);
  if (!patch || (!s.empty() && (s[0] == '.' || (s[0] >= '0' && s[0] <= '9')))) {
    return std::nullopt;
  }
  return std::tuple{*major, *minor, *patch};
}

bool MySqlLike(const ServerFlavor& f) {
  return f.kind == ServerFlavor::kMySQL || f.kind == ServerFlavor::kPercona;
}

}  // namespace

const char* KindName(ServerFlavor::Kind kind) {
  constexpr const char* kNames[] = {"MySQL", "MariaDB", "Percona Server", "unknown server"};
  return kind >= 0 && kind < ServerFlavor::kUnknown ? kNames[kind] : kNames[ServerFlavor::kUnknown];
}

bool ServerFlavor::AtLeast(int major_at_least, int minor_at_least, int patch_at_least) const {
  return VersionKnown() &&
         std::tie(major, minor, patch) >= std::tie(major_at_least, minor_at_least, patch_at_least);
}

std::string ServerFlavor::Describe() const {
  std::string out = KindName(kind);
  out += ' ';
  out += version.empty() ? "(no version)" : EscapeControl(version);
  if (!comment.empty()) out += " (" + EscapeControl(comment) + ")";
  return out;
}

ServerFlavor ParseServerFlavor(std::string_view version, std::string_view comment) {
  ServerFlavor f;
  f.version = std::string(version);
  f.comment = std::string(comment);
  const bool mariadb = ContainsNoCase(version, "mariadb") || ContainsNoCase(comment, "mariadb");
  std::string_view digits = version;
  if (constexpr std::string_view kHack = "5.5.5-";
      mariadb && digits.starts_with(kHack) && LeadingVersion(digits.substr(kHack.size()))) {
    digits.remove_prefix(kHack.size());
  }
  const auto parsed = LeadingVersion(digits);
  if (parsed) std::tie(f.major, f.minor, f.patch) = *parsed;
  if (mariadb) {
    f.kind = ServerFlavor::kMariaDB;
  } else if (ContainsNoCase(comment, "percona")) {
    f.kind = ServerFlavor::kPercona;
  } else if (parsed && f.major > 0) {
    f.kind = ServerFlavor::kMySQL;
  }
  if (f.major == 0) f.minor = f.patch = 0;  // "0.x.y" is no version any of them ever had
  return f;
}

Result<ServerFlavor> ParseServerFlavor(const QueryResult& result) {
  if (result.rows.empty()) {
    return Status::DataError(std::string(kServerFlavorQuery) + " returned no row");
  }
  const auto& row = result.rows[0];
  auto text = [&](size_t i) { return i < row.size() && row[i] ? *row[i] : std::string(); };
  return ParseServerFlavor(text(0), text(1));
}

const char* ReplicaStatusStatement(const ServerFlavor& flavor) {
  const bool replica = (MySqlLike(flavor) && flavor.AtLeast(8, 0, 22)) ||
                       (flavor.kind == ServerFlavor::kMariaDB && flavor.AtLeast(10, 5, 1));
  return replica ? "SHOW REPLICA STATUS" : "SHOW SLAVE STATUS";
}

const char* ReplicaStatusRetry(std::string_view statement, unsigned server_errno) {
  return server_errno == kErParseError && statement == "SHOW SLAVE STATUS" ? "SHOW REPLICA STATUS"
                                                                           : nullptr;
}

const char* BinaryLogStatusStatement(const ServerFlavor& flavor) {
  if (MySqlLike(flavor) && flavor.AtLeast(8, 2, 0)) return "SHOW BINARY LOG STATUS";
  if (flavor.kind == ServerFlavor::kMariaDB && flavor.AtLeast(10, 5, 2)) {
    return "SHOW BINLOG STATUS";
  }
  return "SHOW MASTER STATUS";
}

bool HasMariaDbGtid(const ServerFlavor& flavor) {
  return flavor.kind == ServerFlavor::kMariaDB && flavor.AtLeast(10, 0, 2);
}

}  // namespace lagwatch
