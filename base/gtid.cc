#include "base/gtid.h"

#include <algorithm>
#include <charconv>

#include "base/strings.h"

namespace lagwatch {
namespace {

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

Result<GtidPos> GtidPos::Parse(std::string_view text) {
  GtidPos pos;
  text = Trim(text);
  // The whole text, not what is left of it, and escaped: it is the server's and goes to the log.
  const std::string_view whole = text;
  auto bad = [whole](std::string_view why) {
    return Status::DataError("malformed GTID position \"" + EscapeControl(whole.substr(0, 80)) +
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
    pos.gtids_.push_back({domain, server, seq});
  }
  std::sort(pos.gtids_.begin(), pos.gtids_.end(),
            [](const Gtid& a, const Gtid& b) { return a.domain < b.domain; });
  for (size_t i = 1; i < pos.gtids_.size(); ++i) {
    if (pos.gtids_[i].domain == pos.gtids_[i - 1].domain) return bad("domain listed twice");
  }
  pos.gtids_.shrink_to_fit();
  return pos;
}

bool GtidPos::operator==(const GtidPos& o) const {
  if (gtids_.size() != o.gtids_.size()) return false;
  for (size_t i = 0; i < gtids_.size(); ++i) {
    if (gtids_[i].domain != o.gtids_[i].domain || gtids_[i].seq != o.gtids_[i].seq) return false;
  }
  return true;
}

bool GtidPos::Reaches(const GtidPos& other) const {
  // Both sorted by domain: one merge pass.
  size_t i = 0;
  for (const Gtid& want : other.gtids_) {
    while (i < gtids_.size() && gtids_[i].domain < want.domain) ++i;
    if (i == gtids_.size() || gtids_[i].domain != want.domain || gtids_[i].seq < want.seq) {
      return false;
    }
  }
  return true;
}

std::optional<GtidPos::Gtid> GtidPos::Find(uint32_t domain) const {
  auto it = std::lower_bound(gtids_.begin(), gtids_.end(), domain,
                             [](const Gtid& g, uint32_t d) { return g.domain < d; });
  if (it == gtids_.end() || it->domain != domain) return std::nullopt;
  return *it;
}

void GtidPos::Set(const Gtid& g) {
  auto it = std::lower_bound(gtids_.begin(), gtids_.end(), g.domain,
                             [](const Gtid& e, uint32_t d) { return e.domain < d; });
  if (it != gtids_.end() && it->domain == g.domain) {
    *it = g;
  } else {
    gtids_.insert(it, g);
  }
}

std::string GtidPos::ToString() const {
  std::string out;
  for (const Gtid& g : gtids_) {
    if (!out.empty()) out += ',';
    out += std::to_string(g.domain) + '-' + std::to_string(g.server) + '-' + std::to_string(g.seq);
  }
  return out;
}

}  // namespace lagwatch
