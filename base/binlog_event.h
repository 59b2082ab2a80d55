// The binary log stream a primary sends a replica (COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID): its
// events read from bytes, and the primary's position after each transaction. Values and pure
// functions: no I/O, no clock (arrival times come in with the bytes), so every rule is tested on
// event bytes written from the servers' sources and fuzzed (fuzz/binlog_event_fuzz.cc).
//
// Formats, as the servers write them:
//   - the v4 event header (19 bytes: timestamp, type, server id, event size, end position, flags)
//     and the CRC32 trailer: MariaDB's sql/log_event.h and MySQL's
//     libs/mysql/binlog/event/binlog_event.h; "Binlog Event header" in MariaDB's KB;
//   - ROTATE_EVENT (position, file name), QUERY_EVENT (post-header, status variables, schema,
//     statement), XID_EVENT, HEARTBEAT_LOG_EVENT (file name after the header, with an 8-byte
//     position before it when the header's is 0: MariaDB's send_heartbeat_event in
//     sql/sql_repl.cc), FORMAT_DESCRIPTION_EVENT (its checksum algorithm byte before the
//     trailer);
//   - MariaDB's GTID_EVENT (sequence number, domain, flags: FL_STANDALONE) and GTID_LIST_EVENT
//     (count, then domain, server, sequence number each): MariaDB's sql/log_event.h and
//     mariadb_rpl.h of Connector/C;
//   - MySQL's GTID_LOG_EVENT (flags, 16-byte uuid, transaction number, logical clock, then the
//     immediate and original commit timestamps in 7 bytes each, the high bit of the first saying
//     the second follows): Gtid_event's decoder in MySQL's
//     libs/mysql/binlog/event/control_events.cpp; PREVIOUS_GTIDS_LOG_EVENT is a set in MySQL's
//     binary encoding (GtidSet::DecodeBinary).
// Anything shorter than its format, or with a field out of range, is a DataError: never read
// past the bytes given, never throws.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/gtid.h"
#include "base/gtid_set.h"
#include "base/position.h"
#include "base/status.h"

namespace lagwatch {

// Event type codes used here (both servers' numbering; MariaDB's own start at 160).
enum BinlogEventType : uint8_t {
  kQueryEvent = 2,
  kStopEvent = 3,
  kRotateEvent = 4,
  kFormatDescriptionEvent = 15,
  kXidEvent = 16,
  kHeartbeatEvent = 27,
  kMysqlGtidEvent = 33,
  kMysqlAnonymousGtidEvent = 34,
  kMysqlPreviousGtidsEvent = 35,
  kMysqlXaPrepareEvent = 38,
  kMysqlTransactionPayloadEvent = 40,
  kMysqlHeartbeatV2Event = 41,
  kMariaBinlogCheckpointEvent = 161,
  kMariaGtidEvent = 162,
  kMariaGtidListEvent = 163,
};

inline constexpr size_t kBinlogHeaderBytes = 19;
inline constexpr size_t kBinlogChecksumBytes = 4;
// LOG_EVENT_ARTIFICIAL_F: an event the dump thread made up (the Rotate that starts a stream).
inline constexpr uint16_t kBinlogArtificialFlag = 0x20;

// The CRC32 of binary log events (zlib's polynomial, as both servers' my_checksum).
uint32_t BinlogCrc32(std::string_view bytes);

struct BinlogEventHeader {
  uint32_t timestamp = 0;  // the writing server's clock, seconds: never compared with ours
  uint8_t type = 0;
  uint32_t server_id = 0;
  uint32_t event_size = 0;
  uint32_t log_pos = 0;  // where the next event starts in the primary's binary log; 0: none
  uint16_t flags = 0;
};

// MySQL's GTID_LOG_EVENT: the transaction's uuid and number, and its commit times on the
// server that ran it first and on the primary (microseconds since the epoch on those servers'
// clocks: kept as extra data, never compared with lagwatch's clock).
struct MysqlGtidEventData {
  std::array<uint8_t, 16> uuid{};
  uint64_t gno = 0;
  std::optional<uint64_t> immediate_commit_us;
  std::optional<uint64_t> original_commit_us;
};

// One event, with what this file reads of it.
struct BinlogEvent {
  BinlogEventHeader header;
  // ROTATE_EVENT: the next binary log and where in it; HEARTBEAT: the current file.
  std::string file;
  uint64_t position = 0;  // ROTATE_EVENT's position; HEARTBEAT's (from the header or sub-header)
  // MariaDB GTID_EVENT.
  uint32_t domain = 0;
  uint64_t seq = 0;
  bool standalone = false;  // FL_STANDALONE: the group is this event and the next, no COMMIT
  // MariaDB GTID_LIST_EVENT.
  std::vector<GtidPos::Gtid> gtid_list;
  // MySQL GTID_LOG_EVENT (ANONYMOUS_GTID_LOG_EVENT: uuid and gno zero).
  std::optional<MysqlGtidEventData> mysql_gtid;
  // MySQL PREVIOUS_GTIDS_LOG_EVENT.
  std::optional<GtidSet> previous_gtids;
  // QUERY_EVENT's statement.
  std::string query;
  // FORMAT_DESCRIPTION_EVENT: its checksum algorithm (0 off, 1 CRC32).
  std::optional<uint8_t> checksum_alg;
};

// Reads one event. `bytes` is the event as the dump sends it (after the packet's OK byte),
// header first; `checksum` says whether it ends in a CRC32 (the binlog_checksum announced at the
// dump's start), which is verified and removed. DataError on anything malformed: short, a size
// in the header that is not the bytes' size, a bad checksum, a field out of range.
Result<BinlogEvent> ParseBinlogEvent(std::string_view bytes, bool checksum);

// What one event did to the stream's position.
struct StreamStep {
  // A transaction (or an event outside any, for binary log coordinates) ended: the primary's
  // position after it, and when the first event of it arrived.
  std::optional<Position> position;
  MonoTime first_arrival;
  // The event proves the dump thread was at the end of the binary log when it sent it
  // (HEARTBEAT_LOG_EVENT), or a transaction started arriving: the stream is alive and current.
  bool alive = false;
  bool heartbeat = false;
  // MySQL's commit times of the transaction that ended, if it said.
  std::optional<MysqlGtidEventData> mysql_gtid;
  // The transaction that ended: the server id in its first event's header, the server it was
  // first written on (a replica's binary log keeps its source's id on what it replicates).
  std::optional<uint32_t> origin;
};

// Follows a dump's events and the primary's position of one positions kind through them:
//   - kMariaDbGtid: the GTID state (@@gtid_binlog_pos), moved by each group's GTID_EVENT when
//     the group ends (XID_EVENT, a QUERY_EVENT "COMMIT", or the event after a standalone GTID);
//   - kMysqlGtid: @@GLOBAL.gtid_executed, with each GTID_LOG_EVENT's uuid:number added when its
//     transaction ends (an anonymous transaction has no place in a set: a DataError);
//   - kBinlog: the file from ROTATE_EVENTs and the end position of each transaction's last
//     event, or of an event outside any transaction.
// Thread-compatible.
class BinlogDecoder {
 public:
  // `start`: the position the dump was asked to start from (of `kind`).
  BinlogDecoder(PositionsKind kind, Position start, bool checksum);

  // Reads one event that arrived at `arrival`. DataError: the event is malformed, or moves the
  // position somewhere that does not include the previous one (backwards: a restored or
  // replaced primary, or bytes that lie); the decoder is then unusable (the stream must be
  // restarted).
  Result<StreamStep> Feed(std::string_view bytes, MonoTime arrival);

  const Position& position() const { return position_; }

 private:
  Result<StreamStep> Apply(const BinlogEvent& ev, MonoTime arrival);
  // The group under way ended at an event whose header is `h`: the position after it.
  Status EndGroup(const BinlogEventHeader& h, StreamStep* step);
  Status MoveTo(Position next);
  // Takes `next` (an event outside any transaction, which arrived at `arrival`) when it is ahead
  // of the position; one that is not is ignored (a dump repeats its start's events).
  void MoveForward(Position next, MonoTime arrival, StreamStep* step);

  const PositionsKind kind_;
  const bool checksum_;
  Position position_;
  std::string file_;  // the binary log being read (coordinates)
  bool broken_ = false;
  // The transaction group being read.
  bool in_group_ = false;
  bool group_began_ = false;  // a QUERY_EVENT "BEGIN" opened it: statements until COMMIT
  bool group_standalone_ = false;
  MonoTime group_arrival_;
  uint32_t group_origin_ = 0;
  std::optional<GtidPos::Gtid> group_maria_gtid_;
  std::optional<MysqlGtidEventData> group_mysql_gtid_;
  bool group_anonymous_ = false;
};

}  // namespace lagwatch
