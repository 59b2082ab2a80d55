#include "exporters/rw_stats.h"

#include <cstdint>

#include "base/strings.h"

namespace lagwatch {
namespace {

constexpr size_t kMaxAppLength = 64;
constexpr size_t kMaxHostLength = 253;

void Note(ParseOutcome& out, std::string problem) {
  if (out.problems.size() < ParseOutcome::kMaxProblems) out.problems.push_back(std::move(problem));
}

// The value of a counter field, or the reason it is not one.
std::optional<double> ParseCount(std::string_view v, std::string* why) {
  auto n = ParseInt<int64_t>(v);
  if (!n) {
    *why = v.empty() ? "empty value" : "not a base-10 integer: " + QuotedForLog(v);
    return std::nullopt;
  }
  if (*n < 0) {
    *why = "negative value " + std::to_string(*n);
    return std::nullopt;
  }
  return static_cast<double>(*n);
}

// Where the count of one of the contract's fixed fields goes, or null for any other field.
double* FixedFieldSlot(AppStats& s, std::string_view field) {
  namespace f = contract::rw_stats;
  if (field == f::kReadsReplica) return &s.reads_replica;
  if (field == f::kReadsMaster) return &s.reads_master;
  if (field == f::kDegradeAttempts) return &s.degrade_attempts;
  if (field == f::kDegradeSuccesses) return &s.degrade_successes;
  return nullptr;
}

// Reads one field of the hash into `out`, or counts and notes why it is skipped.
void ParseField(ParseOutcome& out, const std::string& field, std::string_view value) {
  AppStats& s = out.stats;
  double* slot = FixedFieldSlot(s, field);
  std::string replica;
  if (!slot && field.starts_with(kReplicaFieldPrefix)) {
    auto hp = ParseHostPort(std::string_view(field).substr(kReplicaFieldPrefix.size()));
    if (!hp) {
      ++out.malformed;
      Note(out, "field " + QuotedForLog(field) + ": suffix is not host:port with port 1..65535");
      return;
    }
    replica = std::move(*hp);
  } else if (!slot) {
    ++out.unknown_fields;
    Note(out, "unknown field " + QuotedForLog(field));
    return;
  }
  std::string why;
  auto n = ParseCount(value, &why);
  if (!n) {
    ++out.malformed;
    s.unreadable.insert(field);
    Note(out, "field " + QuotedForLog(field) + ": " + why);
    return;
  }
  if (slot) {
    *slot = *n;
  } else {
    s.reads_by_replica[replica] = *n;
  }
}

}  // namespace

std::string QuotedForLog(std::string_view s, size_t max_bytes) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      AppendHexEscape(out, c);
    }
  }
  out += '"';
  if (s.size() > max_bytes) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

bool IsValidAppName(std::string_view app) { return IsToken(app, "_.:-", 1, kMaxAppLength); }

std::optional<std::string> AppFromKey(std::string_view key) {
  if (!key.starts_with(kRwStatsPrefix)) return std::nullopt;
  std::string_view app = key.substr(kRwStatsPrefix.size());
  if (!IsValidAppName(app)) return std::nullopt;
  return std::string(app);
}

std::optional<std::string> ParseHostPort(std::string_view s) {
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = s.substr(0, colon);
  std::string_view port = s.substr(colon + 1);
  if (!IsToken(host, "._:-", 1, kMaxHostLength) || port.empty() || port[0] == '0') {
    return std::nullopt;
  }
  auto p = ParseInt<int>(port);
  if (!p || *p < 1 || *p > 65535) return std::nullopt;
  return std::string(s);
}

ParseOutcome ParseRwStats(std::string_view app, const HashFields& fields) {
  ParseOutcome out;
  out.stats.app = std::string(app);
  if (!IsValidAppName(app)) {
    out.bad_app = true;
    Note(out, "app name " + QuotedForLog(app) + " is not 1..64 characters from [A-Za-z0-9_.:-]");
    return out;
  }
  std::set<std::string_view> seen;
  for (const auto& [field, value] : fields) {
    if (!seen.insert(field).second) {
      ++out.malformed;
      Note(out, "field " + QuotedForLog(field) + " repeated");
      continue;
    }
    ParseField(out, field, value);
  }
  return out;
}

}  // namespace lagwatch
