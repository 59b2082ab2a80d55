#include "base/binlog_event.h"

#include <algorithm>
#include <cstring>

#include "base/binlog_coords.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

// Little-endian fixed-width readers over a bounded view: each says false, and reads nothing,
// when the bytes end first.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  size_t left() const { return bytes_.size() - at_; }
  bool Uint(size_t width, uint64_t* v) {
    if (left() < width) return false;
    *v = 0;
    for (size_t i = width; i-- > 0;) *v = *v << 8 | static_cast<uint8_t>(bytes_[at_ + i]);
    at_ += width;
    return true;
  }
  template <typename T>
  bool Get(T* v) {
    uint64_t u = 0;
    if (!Uint(sizeof(T), &u)) return false;
    *v = static_cast<T>(u);
    return true;
  }
  bool Bytes(size_t n, std::string_view* out) {
    if (left() < n) return false;
    *out = bytes_.substr(at_, n);
    at_ += n;
    return true;
  }
  std::string_view Rest() {
    std::string_view out = bytes_.substr(at_);
    at_ = bytes_.size();
    return out;
  }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

Status Bad(const BinlogEventHeader& h, std::string_view why) {
  return Status::DataError("binary log event type " + std::to_string(h.type) + ": " +
                           std::string(why));
}

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Whether the statement is `word` (upper case), whatever its case and surrounding space.
bool IsStatement(std::string_view query, std::string_view word) {
  query = Trim(query);
  while (!query.empty() && (IsSpace(query.back()) || query.back() == ';')) query.remove_suffix(1);
  return AsciiLower(query) == AsciiLower(word);
}

bool StartsWithWord(std::string_view query, std::string_view word) {
  query = Trim(query);
  return query.size() >= word.size() &&
         AsciiLower(query.substr(0, word.size())) == AsciiLower(word) &&
         (query.size() == word.size() || IsSpace(query[word.size()]));
}

Status ParseBody(Reader& r, BinlogEvent* ev) {
  const BinlogEventHeader& h = ev->header;
  switch (h.type) {
    case kRotateEvent: {
      if (!r.Get(&ev->position)) return Bad(h, "shorter than its position");
      ev->file = std::string(r.Rest());
      if (ev->file.empty()) return Bad(h, "no file name");
      return Status::Ok();
    }
    case kHeartbeatEvent: {
      ev->position = h.log_pos;
      if (h.log_pos == 0 && !r.Get(&ev->position)) return Bad(h, "no position");
      ev->file = std::string(r.Rest());
      return Status::Ok();
    }
    case kQueryEvent: {
      uint32_t thread = 0, exec_time = 0;
      uint8_t db_len = 0;
      uint16_t error = 0, status_len = 0;
      std::string_view skip;
      if (!r.Get(&thread) || !r.Get(&exec_time) || !r.Get(&db_len) || !r.Get(&error) ||
          !r.Get(&status_len) || !r.Bytes(status_len, &skip) || !r.Bytes(db_len + 1u, &skip)) {
        return Bad(h, "shorter than its header, status variables and schema");
      }
      ev->query = std::string(r.Rest());
      return Status::Ok();
    }
    case kXidEvent: {
      uint64_t xid = 0;
      if (!r.Get(&xid)) return Bad(h, "shorter than its xid");
      return Status::Ok();
    }
    case kMariaGtidEvent: {
      uint8_t flags = 0;
      if (!r.Get(&ev->seq) || !r.Get(&ev->domain) || !r.Get(&flags)) {
        return Bad(h, "shorter than its sequence number, domain and flags");
      }
      ev->standalone = flags & 0x01;
      return Status::Ok();
    }
    case kMariaGtidListEvent: {
      uint32_t count = 0;
      if (!r.Get(&count)) return Bad(h, "shorter than its count");
      count &= 0x0fffffff;  // the top 4 bits are flags
      if (count > r.left() / 16) return Bad(h, "more GTIDs than bytes");
      for (uint32_t i = 0; i < count; ++i) {
        GtidPos::Gtid g;
        r.Get(&g.domain);
        r.Get(&g.server);
        r.Get(&g.seq);
        ev->gtid_list.push_back(g);
      }
      return Status::Ok();
    }
    case kMysqlGtidEvent:
    case kMysqlAnonymousGtidEvent: {
      MysqlGtidEventData g;
      uint8_t flags = 0;
      std::string_view uuid;
      if (!r.Get(&flags) || !r.Bytes(16, &uuid) || !r.Get(&g.gno)) {
        return Bad(h, "shorter than its flags, uuid and number");
      }
      std::memcpy(g.uuid.data(), uuid.data(), 16);
      if (h.type == kMysqlGtidEvent && (g.gno < 1 || g.gno > GtidSet::kMaxGno)) {
        return Bad(h, "transaction number out of range");
      }
      // The logical clock, then the commit timestamps (each optional, by length, as MySQL's
      // Gtid_event decoder reads them).
      if (r.left() > 0) {
        uint8_t clock_type = 0;
        uint64_t last_committed = 0, sequence_number = 0;
        if (!r.Get(&clock_type) || clock_type != 2 || !r.Get(&last_committed) ||
            !r.Get(&sequence_number)) {
          return Bad(h, "a logical clock that is not one");
        }
        uint64_t immediate = 0;
        if (r.Uint(7, &immediate)) {
          constexpr uint64_t kOriginalFollows = uint64_t{1} << 55;
          uint64_t original = 0;
          if (immediate & kOriginalFollows) {
            immediate &= ~kOriginalFollows;
            if (!r.Uint(7, &original)) return Bad(h, "original commit timestamp cut short");
          } else {
            original = immediate;
          }
          g.immediate_commit_us = immediate;
          g.original_commit_us = original;
        }
      }
      ev->mysql_gtid = g;
      return Status::Ok();
    }
    case kMysqlPreviousGtidsEvent: {
      auto set = GtidSet::DecodeBinary(r.Rest());
      if (!set.ok()) return Bad(h, set.status().message());
      ev->previous_gtids = std::move(set).value();
      return Status::Ok();
    }
    default:
      return Status::Ok();  // read for its header only
  }
}

}  // namespace

uint32_t BinlogCrc32(std::string_view bytes) {
  static const auto kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xffffffffu;
  for (char b : bytes) crc = kTable[(crc ^ static_cast<uint8_t>(b)) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

Result<BinlogEvent> ParseBinlogEvent(std::string_view bytes, bool checksum) {
  BinlogEvent ev;
  BinlogEventHeader& h = ev.header;
  Reader hr(bytes);
  if (!hr.Get(&h.timestamp) || !hr.Get(&h.type) || !hr.Get(&h.server_id) ||
      !hr.Get(&h.event_size) || !hr.Get(&h.log_pos) || !hr.Get(&h.flags)) {
    return Status::DataError("binary log event shorter than its " +
                             std::to_string(kBinlogHeaderBytes) + "-byte header");
  }
  if (h.event_size != bytes.size()) {
    return Bad(h, "its header says " + std::to_string(h.event_size) + " bytes, it has " +
                      std::to_string(bytes.size()));
  }
  std::string_view body = bytes.substr(kBinlogHeaderBytes);
  // A format description always ends in its algorithm byte and 4 checksum bytes (checked when
  // the algorithm is CRC32); other events end in a checksum when the stream has them.
  bool has_crc = checksum;
  if (h.type == kFormatDescriptionEvent) {
    if (body.size() < 57 + 1 + kBinlogChecksumBytes) return Bad(h, "shorter than its format");
    ev.checksum_alg = static_cast<uint8_t>(bytes[bytes.size() - kBinlogChecksumBytes - 1]);
    if (*ev.checksum_alg > 1) return Bad(h, "unknown checksum algorithm");
    if (static_cast<uint8_t>(body[56]) != kBinlogHeaderBytes) {
      return Bad(h, "a header length other than 19");
    }
    has_crc = *ev.checksum_alg == 1;
    if (!has_crc) body.remove_suffix(kBinlogChecksumBytes);
  }
  if (has_crc) {
    if (body.size() < kBinlogChecksumBytes) return Bad(h, "shorter than its checksum");
    Reader cr(bytes.substr(bytes.size() - kBinlogChecksumBytes));
    uint32_t want = 0;
    cr.Get(&want);
    if (BinlogCrc32(bytes.substr(0, bytes.size() - kBinlogChecksumBytes)) != want) {
      return Bad(h, "checksum mismatch");
    }
    body.remove_suffix(kBinlogChecksumBytes);
  }
  Reader r(body);
  if (Status s = ParseBody(r, &ev); !s.ok()) return s;
  return ev;
}

BinlogDecoder::BinlogDecoder(PositionsKind kind, Position start, bool checksum)
    : kind_(kind), checksum_(checksum), position_(std::move(start)) {
  if (kind_ != position_.kind()) broken_ = true;
  if (const BinlogCoords* c = position_.coords()) {
    file_ = c->base + "." + std::to_string(c->seq);
  }
}

Result<StreamStep> BinlogDecoder::Feed(std::string_view bytes, MonoTime arrival) {
  if (broken_) return Status::DataError("the stream's decoder stopped at an earlier error");
  auto ev = ParseBinlogEvent(bytes, checksum_);
  if (!ev.ok()) {
    broken_ = true;
    return ev.status();
  }
  auto step = Apply(*ev, arrival);
  if (!step.ok()) broken_ = true;
  return step;
}

Status BinlogDecoder::MoveTo(Position next) {
  if (!next.Includes(position_)) {
    return Status::DataError("the stream's position went from " + position_.ToString() + " to " +
                             next.ToString());
  }
  position_ = std::move(next);
  return Status::Ok();
}

Status BinlogDecoder::EndGroup(const BinlogEventHeader& h, StreamStep* step) {
  switch (kind_) {
    case PositionsKind::kMariaDbGtid: {
      if (!group_maria_gtid_) return Bad(h, "a transaction without a GTID");
      GtidPos next = *position_.gtid_pos();
      auto now = next.Find(group_maria_gtid_->domain);
      if (now && now->seq >= group_maria_gtid_->seq) {
        return Bad(h, "GTID " + std::to_string(group_maria_gtid_->domain) + "-" +
                          std::to_string(group_maria_gtid_->server) + "-" +
                          std::to_string(group_maria_gtid_->seq) + " is not after " +
                          position_.ToString());
      }
      next.Set(*group_maria_gtid_);
      position_ = Position(std::move(next));
      break;
    }
    case PositionsKind::kMysqlGtid: {
      if (group_anonymous_ || !group_mysql_gtid_) {
        return Bad(h, "a transaction without a GTID has no place in a GTID set");
      }
      GtidSet next = *position_.gtid_set();
      GtidSet one;
      if (Status s =
              one.Add(group_mysql_gtid_->uuid, group_mysql_gtid_->gno, group_mysql_gtid_->gno);
          !s.ok()) {
        return Bad(h, s.message());
      }
      if (next.Contains(one)) return Bad(h, "a GTID already in the stream's set");
      if (Status s =
              next.Add(group_mysql_gtid_->uuid, group_mysql_gtid_->gno, group_mysql_gtid_->gno);
          !s.ok()) {
        return Bad(h, s.message());
      }
      position_ = Position(std::move(next));
      break;
    }
    case PositionsKind::kBinlog: {
      if (h.log_pos == 0) return Bad(h, "a transaction's end without a position");
      auto c = ParseBinlogCoords(file_, h.log_pos);
      if (!c.ok()) return c.status();
      if (Status s = MoveTo(Position(std::move(c).value())); !s.ok()) return s;
      break;
    }
    case PositionsKind::kNone:
      return Status::DataError("the stream follows no positions kind");
  }
  step->position = position_;
  step->first_arrival = group_arrival_;
  step->mysql_gtid = group_mysql_gtid_;
  step->origin = group_origin_;
  in_group_ = group_began_ = group_standalone_ = group_anonymous_ = false;
  group_maria_gtid_.reset();
  group_mysql_gtid_.reset();
  return Status::Ok();
}

Result<StreamStep> BinlogDecoder::Apply(const BinlogEvent& ev, MonoTime arrival) {
  const BinlogEventHeader& h = ev.header;
  StreamStep step;
  const bool gtid_event =
      h.type == kMariaGtidEvent || h.type == kMysqlGtidEvent || h.type == kMysqlAnonymousGtidEvent;
  if (in_group_) {
    if (gtid_event) return Bad(h, "a GTID event inside a transaction");
    const bool query = h.type == kQueryEvent;
    // A MariaDB group opens with its GTID event (no BEGIN) and ends at XID_EVENT or COMMIT, or,
    // standalone, with its one statement; a MySQL group without BEGIN is a DDL, its statement.
    const bool ddl =
        query && !group_maria_gtid_ && !group_began_ && !IsStatement(ev.query, "BEGIN");
    const bool ends =
        h.type == kXidEvent || h.type == kMysqlXaPrepareEvent ||
        h.type == kMysqlTransactionPayloadEvent ||
        (query && (group_standalone_ || IsStatement(ev.query, "COMMIT") ||
                   IsStatement(ev.query, "ROLLBACK") || StartsWithWord(ev.query, "XA") || ddl));
    if (ends) {
      if (Status s = EndGroup(h, &step); !s.ok()) return s;
    } else if (query && IsStatement(ev.query, "BEGIN")) {
      group_began_ = true;
    }
    return step;
  }
  if (gtid_event || (h.type == kQueryEvent && IsStatement(ev.query, "BEGIN"))) {
    in_group_ = true;
    group_began_ = !gtid_event;
    group_arrival_ = arrival;
    group_origin_ = h.server_id;
    step.alive = true;
    if (h.type == kMariaGtidEvent) {
      group_maria_gtid_ = GtidPos::Gtid{ev.domain, h.server_id, ev.seq};
      group_standalone_ = ev.standalone;
    } else if (h.type == kMysqlAnonymousGtidEvent) {
      group_anonymous_ = true;
    }
    if (ev.mysql_gtid && h.type == kMysqlGtidEvent) group_mysql_gtid_ = ev.mysql_gtid;
    return step;
  }
  switch (h.type) {
    case kHeartbeatEvent:
    case kMysqlHeartbeatV2Event:
      step.alive = step.heartbeat = true;
      return step;
    case kRotateEvent:
      file_ = ev.file;
      if (kind_ == PositionsKind::kBinlog) {
        auto c = ParseBinlogCoords(file_, ev.position);
        if (!c.ok()) return c.status();
        // The dump's first Rotate names where it starts; one that is not forward is that.
        MoveForward(Position(std::move(c).value()), arrival, &step);
      }
      return step;
    case kMariaGtidListEvent:
      if (kind_ == PositionsKind::kMariaDbGtid) {
        // What the binary log had before this point: already in the stream's position, or the
        // primary had it all along (the later sequence number of each domain wins).
        GtidPos next = *position_.gtid_pos();
        bool moved = false;
        for (const GtidPos::Gtid& g : ev.gtid_list) {
          auto now = next.Find(g.domain);
          if (!now || now->seq < g.seq) {
            next.Set(g);
            moved = true;
          }
        }
        if (moved) {
          position_ = Position(std::move(next));
          step.position = position_;
          step.first_arrival = arrival;
        }
        return step;
      }
      break;
    case kMysqlPreviousGtidsEvent:
      if (kind_ == PositionsKind::kMysqlGtid && ev.previous_gtids &&
          !position_.gtid_set()->Contains(*ev.previous_gtids)) {
        return Bad(h, "previous GTIDs the stream's start does not have");
      }
      break;
    default:
      break;
  }
  // Outside any transaction: for coordinates, the position after the event (the events a dump
  // sends again at its start, such as the format description, say 0 or an earlier place).
  if (kind_ == PositionsKind::kBinlog && h.log_pos != 0 && !(h.flags & kBinlogArtificialFlag)) {
    auto c = ParseBinlogCoords(file_, h.log_pos);
    if (c.ok()) MoveForward(Position(std::move(c).value()), arrival, &step);
  }
  return step;
}

void BinlogDecoder::MoveForward(Position next, MonoTime arrival, StreamStep* step) {
  if (!next.Includes(position_) || next == position_) return;
  position_ = std::move(next);
  step->position = position_;
  step->first_arrival = arrival;
}

}  // namespace lagwatch
