#include "base/gtid_set.h"

#include <algorithm>
#include <numeric>

#include "base/strings.h"

namespace lagwatch {
namespace {

constexpr size_t kUuidTextLength = 36;  // 8-4-4-4-12

// The bytes isspace() accepts in the C locale, as MySQL's parser skips them.
bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  c = AsciiLower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// The 16 bytes of the uuid at the start of `s`, written 8-4-4-4-12 in either case.
bool ParseUuid(std::string_view s, std::array<uint8_t, 16>* out) {
  if (s.size() < kUuidTextLength) return false;
  size_t byte = 0;
  for (size_t i = 0; i < kUuidTextLength;) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i++] != '-') return false;
      continue;
    }
    const int hi = HexValue(s[i]);
    const int lo = HexValue(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[byte++] = static_cast<uint8_t>(hi << 4 | lo);
    i += 2;
  }
  return true;
}

void AppendUuid(std::string& out, const std::array<uint8_t, 16>& uuid) {
  static constexpr char kHexDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHexDigits[uuid[i] >> 4];
    out += kHexDigits[uuid[i] & 0xf];
  }
}

}  // namespace

// One pass over the text collects each interval with its source; Build then sorts and merges.
class GtidSet::Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<GtidSet> Run() {
    if (text_.size() > kMaxTextBytes) {
      return Bad("longer than " + std::to_string(kMaxTextBytes) + " bytes");
    }
    for (;;) {
      SkipSpace();
      while (Peek() == ',') {
        ++pos_;
        SkipSpace();
      }
      if (AtEnd()) return Build();
      if (Status s = ParseMember(); !s.ok()) return s;
      if (!AtEnd() && Peek() != ',') return Bad("expected ',' or ':'");
    }
  }

 private:
  struct Raw {
    uint32_t source;  // index in sources_; after Build's renumbering, the rank of its source
    Interval interval;
  };

  bool AtEnd() const { return pos_ == text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  void SkipSpace() {
    while (!AtEnd() && IsSpace(text_[pos_])) ++pos_;
  }

  Status Bad(const std::string& why) const {
    return Status::DataError("malformed GTID set \"" + EscapeControl(text_.substr(0, 80)) +
                             "\": at byte " + std::to_string(pos_) + ": " + why);
  }

  // uuid (':' (tag | interval))*, and the whitespace after it.
  Status ParseMember() {
    Source source;
    if (!ParseUuid(text_.substr(pos_), &source.uuid)) {
      return Bad("expected a UUID (hex digits 8-4-4-4-12)");
    }
    pos_ += kUuidTextLength;
    SkipSpace();
    while (Peek() == ':') {
      ++pos_;
      SkipSpace();
      const char c = Peek();
      Status s = IsLetter(c) || c == '_' ? ParseTag(&source)
                 : IsDigit(c)            ? ParseInterval(source)
                                         : Bad("expected a tag or a transaction number after ':'");
      if (!s.ok()) return s;
      SkipSpace();
    }
    return Status::Ok();
  }

  // A tag, in lower case, becomes the tag of `source`'s next intervals.
  Status ParseTag(Source* source) {
    source->tag = {};
    size_t n = 0;
    for (char c = Peek(); IsLetter(c) || IsDigit(c) || c == '_'; c = Peek()) {
      if (n == kMaxTagLength) return Bad("a tag longer than 32 characters");
      source->tag[n++] = AsciiLower(c);
      ++pos_;
    }
    source->tag_length = static_cast<uint8_t>(n);
    return Status::Ok();
  }

  // 1..kMaxGno in decimal, no leading zero.
  Status ParseGno(uint64_t* out) {
    if (!IsDigit(Peek())) return Bad("expected a transaction number");
    if (Peek() == '0') {
      return Bad(pos_ + 1 < text_.size() && IsDigit(text_[pos_ + 1])
                     ? "a transaction number with a leading zero"
                     : "transaction number 0 (they start at 1)");
    }
    const size_t start = pos_;
    uint64_t v = 0;
    for (; IsDigit(Peek()); ++pos_) {
      const auto digit = static_cast<uint64_t>(Peek() - '0');
      if (v > (kMaxGno - digit) / 10) {
        pos_ = start;
        return Bad("a transaction number over 2^63 - 2");
      }
      v = v * 10 + digit;
    }
    *out = v;
    return Status::Ok();
  }

  // n or n-m, added to `source`.
  Status ParseInterval(const Source& source) {
    Interval iv{};
    if (Status s = ParseGno(&iv.first); !s.ok()) return s;
    iv.last = iv.first;
    SkipSpace();
    if (Peek() == '-') {
      ++pos_;
      SkipSpace();
      const size_t at = pos_;
      if (Status s = ParseGno(&iv.last); !s.ok()) return s;
      if (iv.last < iv.first) {
        pos_ = at;
        return Bad("an interval that ends before it starts");
      }
    }
    if (raw_.size() == kMaxIntervals) {
      return Bad("more than " + std::to_string(kMaxIntervals) + " intervals");
    }
    if (sources_.empty() || !sources_.back().SameAs(source)) sources_.push_back(source);
    raw_.push_back({static_cast<uint32_t>(sources_.size() - 1), iv});
    return Status::Ok();
  }

  // Sources in order, each once; per source the union of its intervals, sorted and merged.
  GtidSet Build() {
    GtidSet set;
    std::vector<uint32_t> order(sources_.size());
    std::iota(order.begin(), order.end(), 0u);
    auto before = [this](uint32_t a, uint32_t b) { return sources_[a].Before(sources_[b]); };
    std::sort(order.begin(), order.end(), before);
    // rank[i]: the position of source i's first equal among the sorted distinct sources.
    std::vector<uint32_t> rank(sources_.size());
    std::vector<uint32_t> first_of_rank;
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || before(order[i - 1], order[i])) first_of_rank.push_back(order[i]);
      rank[order[i]] = static_cast<uint32_t>(first_of_rank.size() - 1);
    }
    for (Raw& r : raw_) r.source = rank[r.source];
    std::sort(raw_.begin(), raw_.end(), [](const Raw& a, const Raw& b) {
      return a.source != b.source ? a.source < b.source : a.interval.first < b.interval.first;
    });
    for (size_t i = 0; i < raw_.size(); ++i) {
      const Interval& iv = raw_[i].interval;
      if (i == 0 || raw_[i].source != raw_[i - 1].source) {
        set.sources_.push_back(sources_[first_of_rank[raw_[i].source]]);
        set.intervals_.push_back(iv);
      } else if (Interval& back = set.intervals_.back(); iv.first <= back.last + 1) {
        back.last = std::max(back.last, iv.last);  // overlaps or touches (last + 1: no overflow)
      } else {
        set.intervals_.push_back(iv);
      }
      set.sources_.back().end = static_cast<uint32_t>(set.intervals_.size());
    }
    set.sources_.shrink_to_fit();
    set.intervals_.shrink_to_fit();
    return set;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<Source> sources_;  // one per run of intervals of the same source, as written
  std::vector<Raw> raw_;
};

Result<GtidSet> GtidSet::Parse(std::string_view text) { return Parser(text).Run(); }

bool GtidSet::Contains(const GtidSet& other) const {
  // Both sorted by source, and within a source by interval: one merge pass. Intervals are merged,
  // so each of `other`'s intervals must lie within a single one of ours.
  size_t s = 0;
  size_t i = 0;  // our interval, within source s
  uint32_t begin = 0;
  for (const Source& want : other.sources_) {
    while (s < sources_.size() && sources_[s].Before(want)) i = sources_[s++].end;
    if (s == sources_.size() || !sources_[s].SameAs(want)) return false;
    for (uint32_t j = begin; j < want.end; ++j) {
      const Interval& iv = other.intervals_[j];
      while (i < sources_[s].end && intervals_[i].last < iv.first) ++i;
      if (i == sources_[s].end || intervals_[i].first > iv.first || intervals_[i].last < iv.last) {
        return false;
      }
    }
    begin = want.end;
  }
  return true;
}

uint64_t GtidSet::Count() const {
  uint64_t total = 0;
  for (const Interval& iv : intervals_) {
    const uint64_t n = iv.last - iv.first + 1;
    if (total > UINT64_MAX - n) return UINT64_MAX;
    total += n;
  }
  return total;
}

std::string GtidSet::ToString() const {
  std::string out;
  uint32_t begin = 0;
  for (size_t s = 0; s < sources_.size(); ++s) {
    const Source& source = sources_[s];
    if (s == 0 || source.uuid != sources_[s - 1].uuid) {
      if (s > 0) out += ",\n";
      AppendUuid(out, source.uuid);
    }
    if (source.tag_length > 0) {
      out += ':';
      out += source.Tag();
    }
    for (uint32_t j = begin; j < source.end; ++j) {
      out += ':';
      out += std::to_string(intervals_[j].first);
      if (intervals_[j].last != intervals_[j].first) {
        out += '-';
        out += std::to_string(intervals_[j].last);
      }
    }
    begin = source.end;
  }
  return out;
}

}  // namespace lagwatch

namespace lagwatch {
namespace {

void PutLe64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

// Reads a little-endian 8-byte number at `*at`, moving past it; false when the bytes end first.
bool GetLe64(std::string_view in, size_t* at, uint64_t* v) {
  if (in.size() < *at || in.size() - *at < 8) return false;
  *v = 0;
  for (int i = 7; i >= 0; --i) *v = *v << 8 | static_cast<uint8_t>(in[*at + i]);
  *at += 8;
  return true;
}

}  // namespace

Status GtidSet::Add(const std::array<uint8_t, 16>& uuid, uint64_t first, uint64_t last) {
  if (first < 1 || last > kMaxGno || last < first) {
    return Status::InvalidArgument("GTID interval " + std::to_string(first) + "-" +
                                   std::to_string(last) + " is outside 1.." +
                                   std::to_string(kMaxGno));
  }
  Source want;
  want.uuid = uuid;
  size_t s = 0;
  while (s < sources_.size() && sources_[s].Before(want)) ++s;
  const uint32_t begin = s == 0 ? 0 : sources_[s - 1].end;
  if (s == sources_.size() || !sources_[s].SameAs(want)) {
    want.end = begin + 1;
    sources_.insert(sources_.begin() + static_cast<ptrdiff_t>(s), want);
    intervals_.insert(intervals_.begin() + begin, Interval{first, last});
    for (size_t k = s + 1; k < sources_.size(); ++k) ++sources_[k].end;
    return Status::Ok();
  }
  // The source's intervals [begin, end): replace the ones the new interval overlaps or touches
  // by their union.
  const uint32_t end = sources_[s].end;
  uint32_t lo = begin;
  while (lo < end && intervals_[lo].last + 1 < first) ++lo;
  uint32_t hi = lo;
  Interval merged{first, last};
  while (hi < end && intervals_[hi].first <= last + 1) {
    merged.first = std::min(merged.first, intervals_[hi].first);
    merged.last = std::max(merged.last, intervals_[hi].last);
    ++hi;
  }
  const auto at = intervals_.begin() + lo;
  intervals_.erase(at, intervals_.begin() + hi);
  intervals_.insert(intervals_.begin() + lo, merged);
  const int64_t delta = 1 - static_cast<int64_t>(hi - lo);
  for (size_t k = s; k < sources_.size(); ++k) {
    sources_[k].end = static_cast<uint32_t>(sources_[k].end + delta);
  }
  return Status::Ok();
}

Result<std::string> GtidSet::EncodeBinary() const {
  std::string out;
  PutLe64(out, sources_.size());
  uint32_t begin = 0;
  for (const Source& source : sources_) {
    if (source.tag_length > 0) {
      return Status::InvalidArgument("a GTID set with tags has no untagged binary encoding");
    }
    out.append(reinterpret_cast<const char*>(source.uuid.data()), source.uuid.size());
    PutLe64(out, source.end - begin);
    for (uint32_t j = begin; j < source.end; ++j) {
      PutLe64(out, intervals_[j].first);
      PutLe64(out, intervals_[j].last + 1);
    }
    begin = source.end;
  }
  return out;
}

Result<GtidSet> GtidSet::DecodeBinary(std::string_view bytes) {
  auto bad = [](const std::string& why) { return Status::DataError("binary GTID set: " + why); };
  size_t at = 0;
  uint64_t n_sids = 0;
  if (!GetLe64(bytes, &at, &n_sids)) return bad("shorter than its count");
  // MySQL 8.3+ marks the tagged format in the count's top byte.
  if (n_sids >> 56 != 0) return bad("tagged encoding (not read)");
  if (n_sids > bytes.size() / 24) return bad("more uuids than bytes");
  GtidSet set;
  size_t intervals = 0;
  for (uint64_t i = 0; i < n_sids; ++i) {
    if (bytes.size() - at < 16) return bad("a uuid cut short");
    Source source;
    std::copy_n(reinterpret_cast<const uint8_t*>(bytes.data() + at), 16, source.uuid.begin());
    at += 16;
    if (!set.sources_.empty() && !set.sources_.back().Before(source)) {
      return bad("uuids out of order");
    }
    uint64_t n = 0;
    if (!GetLe64(bytes, &at, &n)) return bad("an interval count cut short");
    if (n == 0 || n > (bytes.size() - at) / 16) return bad("an interval count past the bytes");
    intervals += n;
    if (intervals > kMaxIntervals)
      return bad("more than " + std::to_string(kMaxIntervals) + " intervals");
    for (uint64_t j = 0; j < n; ++j) {
      uint64_t first = 0, past = 0;
      GetLe64(bytes, &at, &first);
      GetLe64(bytes, &at, &past);
      if (first < 1 || past <= first || past - 1 > kMaxGno) return bad("an interval out of range");
      if (j > 0 && first <= set.intervals_.back().last + 1) {
        return bad("intervals out of order or touching");
      }
      set.intervals_.push_back({first, past - 1});
    }
    source.end = static_cast<uint32_t>(set.intervals_.size());
    set.sources_.push_back(source);
  }
  if (at != bytes.size()) return bad("bytes after the last uuid");
  return set;
}

}  // namespace lagwatch
