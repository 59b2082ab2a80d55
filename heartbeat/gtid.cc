#include "heartbeat/gtid.h"

#include <charconv>

namespace lagwatch {
namespace {

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

Result<GtidPos> GtidPos::Parse(std::string_view text) {
  GtidPos pos;
  text = Trim(text);
  auto bad = [&](std::string_view why) {
    return Status::DataError("malformed GTID position \"" + std::string(text.substr(0, 80)) +
                             "\": " + std::string(why));
  };
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (comma != std::string_view::npos && Trim(text).empty()) return bad("trailing comma");
    size_t d1 = item.find('-');
    size_t d2 = d1 == std::string_view::npos ? d1 : item.find('-', d1 + 1);
    if (d2 == std::string_view::npos) return bad("expected domain-server-seq");
    uint32_t domain = 0, server = 0;
    uint64_t seq = 0;
    if (!ParseNumber(item.substr(0, d1), &domain) ||
        !ParseNumber(item.substr(d1 + 1, d2 - d1 - 1), &server) ||
        !ParseNumber(item.substr(d2 + 1), &seq)) {
      return bad("non-numeric part");
    }
    if (!pos.seq_by_domain_.emplace(domain, seq).second) return bad("domain listed twice");
    pos.server_by_domain_[domain] = server;
  }
  return pos;
}

bool GtidPos::Reaches(const GtidPos& other) const {
  for (const auto& [domain, seq] : other.seq_by_domain_) {
    auto it = seq_by_domain_.find(domain);
    if (it == seq_by_domain_.end() || it->second < seq) return false;
  }
  return true;
}

std::string GtidPos::ToString() const {
  std::string out;
  for (const auto& [domain, seq] : seq_by_domain_) {
    if (!out.empty()) out += ',';
    out += std::to_string(domain) + '-' + std::to_string(server_by_domain_.at(domain)) + '-' +
           std::to_string(seq);
  }
  return out;
}

}  // namespace lagwatch
