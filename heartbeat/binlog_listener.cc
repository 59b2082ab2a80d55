#include "heartbeat/binlog_listener.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <utility>

#include "base/binlog_coords.h"
#include "base/binlog_event.h"
#include "base/event_loop.h"
#include "base/gtid.h"
#include "base/log.h"
#include "base/mysql_errors.h"
#include "base/server_flavor.h"
#include "base/stream_reason.h"
#include "base/strings.h"
#include "base/thread_times.h"
#include "heartbeat/arrival_stamp.h"
#include "heartbeat/sampler.h"

namespace lagwatch {
namespace {

// The command codes (MySQL's and MariaDB's enum_server_command).
constexpr uint8_t kComBinlogDump = 0x12;
constexpr uint8_t kComRegisterSlave = 0x15;
constexpr uint8_t kComBinlogDumpGtid = 0x1e;
// COM_BINLOG_DUMP_GTID's flag: the set follows.
constexpr uint16_t kBinlogThroughGtid = 0x04;
// MARIA_SLAVE_CAPABILITY_GTID: the primary sends GTID events as they are.
constexpr int kMariaSlaveCapabilityGtid = 4;

constexpr Millis kSetupPatience(5000);
// A read waits this long for a packet: with heartbeats every few ms, a stream this quiet is dead.
constexpr int kReadTimeoutSeconds = 5;
constexpr Millis kFirstBackoff(100);
constexpr Millis kMaxBackoff(5000);
constexpr Millis kRefusedBackoff(30000);
// Until the sampler has chosen what to compare (at start, and on a new primary), the listener
// looks again after this, doubling up to kKindPatience: on a move the sampler asks the new
// primary within ms, and the stream should start there as soon, not 100 ms later.
constexpr Millis kFirstKindWait(5);
constexpr Millis kKindPatience(100);
constexpr Millis kReportEvery(1000);

void Put(std::string& out, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

// Why a stream ended, for the sink and the log.
const char* ReasonOf(const Status& st, unsigned server_errno) {
  if (st.code() == Status::Code::kTls) return stream_error::kTls;
  if (server_errno == kErSpecificAccessDenied || server_errno == kErAccessDenied)
    return stream_error::kRefused;
  if (st.message().find("binary logging is off") != std::string::npos)
    return stream_error::kNoBinlog;
  if (st.code() == Status::Code::kDataError) return stream_error::kBadEvent;
  if (st.code() == Status::Code::kServerError) return stream_error::kServerError;
  return stream_error::kCut;
}

// Whether the server applies what it replicates one transaction at a time: MariaDB's
// @@slave_parallel_threads, MySQL's @@replica_parallel_workers (@@slave_parallel_workers before
// 8.0.26) at most 1. False when it cannot tell.
bool AppliesSerially(MysqlConn& conn, const ServerFlavor& flavor, MonoTime deadline) {
  std::vector<const char*> asks;
  if (flavor.kind == ServerFlavor::kMariaDB) {
    asks = {"SELECT @@slave_parallel_threads"};
  } else {
    asks = {"SELECT @@replica_parallel_workers", "SELECT @@slave_parallel_workers"};
  }
  for (const char* ask : asks) {
    auto r = conn.Query(ask, deadline);
    if (!r.ok()) continue;
    if (r->rows.size() != 1 || r->rows[0].size() != 1 || !r->rows[0][0]) return false;
    const auto n = ParseInt<int64_t>(*r->rows[0][0]);
    return n && *n <= 1;
  }
  return false;
}

// A binary log file name that can be quoted in a statement as it is (no quote, backslash or
// control character): the server names its files after log_bin's basename.
bool Quotable(const std::string& file) {
  if (file.empty()) return false;
  for (const unsigned char c : file) {
    if (c < 0x20 || c == '\'' || c == '\\' || c == 0x7f) return false;
  }
  return true;
}

// Where the server's binary log ends (SHOW BINLOG STATUS and its kin), in the range a dump by
// file and offset can ask for.
Result<BinaryLogStatus> ReadLogEnd(MysqlConn& conn, const ServerFlavor& flavor, MonoTime deadline) {
  auto r = conn.Query(BinaryLogStatusStatement(flavor), deadline);
  if (!r.ok()) return r.status();
  auto st = ParseBinaryLogStatus(*r);
  if (!st.ok()) return st.status();
  if (st->coords.pos > UINT32_MAX) return Status::DataError("a start position past 4 GiB");
  return st;
}

// Where a dump starts: by file and offset, or (`file` empty) by `position`, a GTID state.
struct DumpStart {
  Position position;
  std::string file;
  uint32_t offset = 4;
};

// Where a MariaDB server's binary log ends (ReadLogEnd) and its GTID state there
// (BINLOG_GTID_POS), for a dump asked by file and offset. Asked by a GTID state instead
// (@slave_connect_state), the dump thread finds the state by reading the file from its beginning
// before it sends anything: tens of ms for tens of MB, after the stream began, so that the first
// samples measure that read as the stream's delivery delay. BINLOG_GTID_POS reads the same bytes,
// but before the stream begins. nullopt when the server cannot or will not say (the account
// lacks BINLOG MONITOR, no binary log status, an offset it does not find, a file name that
// cannot be quoted): the dump is then asked by the state, as before.
Result<std::optional<DumpStart>> MariaDbLogEnd(MysqlConn& conn, const ServerFlavor& flavor,
                                               MonoTime deadline) {
  using Found = std::optional<DumpStart>;
  auto st = ReadLogEnd(conn, flavor, deadline);
  if (!st.ok()) {
    const Status::Code code = st.status().code();
    // Refused, or an answer it cannot use; a lost connection ends the stream's start.
    if (code == Status::Code::kServerError || code == Status::Code::kDataError) return Found();
    return st.status();
  }
  if (!Quotable(st->file)) return Found();
  auto g = conn.Query(
      "SELECT BINLOG_GTID_POS('" + st->file + "', " + std::to_string(st->coords.pos) + ")",
      deadline);
  if (!g.ok() && g.status().code() == Status::Code::kServerError) return Found();
  if (!g.ok()) return g.status();
  if (g->rows.size() != 1 || g->rows[0].size() != 1 || !g->rows[0][0]) return Found();
  auto pos = GtidPos::Parse(*g->rows[0][0]);
  if (!pos.ok()) return Found();
  return Found(
      DumpStart{Position(std::move(pos).value()), st->file, static_cast<uint32_t>(st->coords.pos)});
}

}  // namespace

std::string RegisterReplicaPacket(uint32_t server_id) {
  std::string p;
  Put(p, server_id, 4);
  const std::string host = "lagwatch";
  p.push_back(static_cast<char>(host.size()));
  p += host;
  p.push_back(0);  // user
  p.push_back(0);  // password
  Put(p, 0, 2);    // port
  Put(p, 0, 4);    // replication rank
  Put(p, 0, 4);    // the primary's id (the server fills it in)
  return p;
}

std::string BinlogDumpPacket(uint32_t server_id, const std::string& file, uint32_t position) {
  std::string p;
  Put(p, position, 4);
  Put(p, 0, 2);  // flags: block at the end of the log and wait
  Put(p, server_id, 4);
  p += file;
  return p;
}

std::string BinlogDumpGtidPacket(uint32_t server_id, const std::string& encoded_set) {
  std::string p;
  Put(p, kBinlogThroughGtid, 2);
  Put(p, server_id, 4);
  Put(p, 0, 4);  // no file name: the set says where
  Put(p, 4, 8);  // the position in it (the first event)
  Put(p, encoded_set.size(), 4);
  p += encoded_set;
  return p;
}

BinlogListener::BinlogListener(ListenerOptions options, const PositionHistory* history,
                               StreamHistory* stream, ListenerSink* sink, const Clock& clock)
    : options_(std::move(options)),
      history_(history),
      stream_(stream),
      sink_(sink),
      clock_(clock),
      target_(options_.primary) {}

void BinlogListener::Start(bool realtime) {
  worker_.Start([this, realtime](std::stop_token st) {
    if (realtime) (void)SetCurrentThreadRealtime(1);  // normal priority if refused
    Run(st);
  });
}

void BinlogListener::Stop() { worker_.Stop(); }

void BinlogListener::SetPrimary(MysqlTarget primary) {
  std::lock_guard lock(mu_);
  target_ = std::move(primary);
  ++target_generation_;
  wake_.request_stop();
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void BinlogListener::Interrupt() {
  std::lock_guard lock(mu_);
  wake_.request_stop();
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Status BinlogListener::Session(const MysqlTarget& target, PositionsKind kind, uint64_t generation,
                               std::stop_token stop, unsigned* server_errno, bool* started) {
  MysqlConn conn(target, stop, clock_);
  Status st = Stream(conn, target, kind, generation, stop, started);
  *server_errno = conn.last_errno();
  return st;
}

Status BinlogListener::Stream(MysqlConn& conn, const MysqlTarget& target, PositionsKind kind,
                              uint64_t generation, std::stop_token stop, bool* started) {
  const MonoTime deadline = clock_.Now() + kSetupPatience;
  auto flavor_reply = conn.Query(kServerFlavorQuery, deadline);
  if (!flavor_reply.ok()) return flavor_reply.status();
  ServerFlavor flavor;
  if (auto parsed = ParseServerFlavor(*flavor_reply); parsed.ok()) flavor = parsed.value();
  auto cks = conn.Query("SELECT @@global.binlog_checksum", deadline);
  if (!cks.ok()) return cks.status();
  const bool checksum = cks->rows.size() == 1 && cks->rows[0].size() == 1 && cks->rows[0][0] &&
                        *cks->rows[0][0] != "NONE";
  // Following a server for the writes made there: its own id, which such writes carry.
  std::optional<uint32_t> own_id;
  if (options_.own_write) {
    auto id = ReadServerId(conn, deadline);
    if (!id.ok()) return id.status();
    if (!*id) return Status::DataError("@@server_id is not a number");
    own_id = *id;
  }
  // Proofs of what the server applied (ListenerOptions::applied), while it takes no writes.
  bool proving =
      options_.applied && own_id && IsGtidKind(kind) && AppliesSerially(conn, flavor, deadline);
  const std::string server = target.endpoint.Id();

  // Where to start: the primary's position now, as the sampler reads it.
  std::optional<DumpStart> from;
  if (kind == PositionsKind::kBinlog) {
    auto st = ReadLogEnd(conn, flavor, deadline);
    if (!st.ok()) return st.status();
    from = DumpStart{Position(st->coords), st->file, static_cast<uint32_t>(st->coords.pos)};
  } else if (kind == PositionsKind::kMariaDbGtid && flavor.kind == ServerFlavor::kMariaDB) {
    auto end = MariaDbLogEnd(conn, flavor, deadline);
    if (!end.ok()) return end.status();
    from = std::move(end).value();
  }
  if (!from) {
    bool binlog_off = false;
    auto pos = ReadPrimaryPosition(conn, kind, flavor, deadline, &binlog_off);
    if (!pos.ok()) return pos.status();
    from = DumpStart{std::move(pos).value(), "", 4};
  }
  const Position& start = from->position;
  const std::string& file = from->file;
  const uint32_t file_pos = from->offset;
  std::string set =
      "SET @master_heartbeat_period = " + std::to_string(int64_t{options_.heartbeat_ms} * 1000000) +
      ", @master_binlog_checksum = @@global.binlog_checksum"
      ", @source_binlog_checksum = @@global.binlog_checksum"
      ", @mariadb_slave_capability = " +
      std::to_string(kMariaSlaveCapabilityGtid);
  if (kind == PositionsKind::kMariaDbGtid && file.empty()) {
    // The state is digits, dashes and commas only (GtidPos::ToString).
    set += ", @slave_connect_state = '" + start.ToString() +
           "', @slave_gtid_strict_mode = 0, @slave_gtid_ignore_duplicates = 0";
  }
  if (auto r = conn.Query(set, deadline); !r.ok()) return r.status();
  if (Status s = conn.SendCommand(kComRegisterSlave, RegisterReplicaPacket(options_.server_id),
                                  /*read_reply=*/true);
      !s.ok()) {
    return s;
  }
  std::string dump;
  uint8_t command = kComBinlogDump;
  if (kind == PositionsKind::kMysqlGtid) {
    auto encoded = start.gtid_set()->EncodeBinary();
    if (!encoded.ok()) return encoded.status();
    command = kComBinlogDumpGtid;
    dump = BinlogDumpGtidPacket(options_.server_id, *encoded);
  } else {
    dump = BinlogDumpPacket(options_.server_id, file, file_pos);
  }
  // Nothing of the stream arrives before it is asked for.
  const ThreadTimes times;
  ArrivalStamp arrivals(clock_.Now(), times);
  if (Status s = conn.SendCommand(command, dump, /*read_reply=*/false); !s.ok()) return s;
  {
    std::lock_guard lock(mu_);
    if (generation != target_generation_ || stop.stop_requested()) {
      return Status::Cancelled("the primary moved");
    }
    fd_ = conn.fd();
    timeval tv{kReadTimeoutSeconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  const uint64_t token = stream_->Begin(start, clock_.Now());
  *started = true;
  if (options_.began) options_.began();
  sink_->StreamStarted(start);
  Log(LogLevel::kInfo,
      std::string(options_.own_write ? "writes watched on " : "binary log stream from ") +
          target.endpoint.Id() + " (" + PositionsKindName(kind) + ", server id " +
          std::to_string(options_.server_id) + ") from " + start.ToString());
  BinlogDecoder decoder(kind, start, checksum);
  Position applied_before = start;  // the position before the next transaction
  uint64_t events = 0, bytes = 0;
  MonoTime next_report = clock_.Now() + kReportEvery;
  Status ended = Status::Ok();
  for (;;) {
    arrivals.BeforeRead();
    auto packet = conn.ReadPacket();
    const MonoTime now = clock_.Now();
    const MonoTime arrival = arrivals.AfterRead(now);
    if (stop.stop_requested()) {
      ended = Status::Cancelled("stopping");
      break;
    }
    if (!packet.ok()) {
      ended = packet.status();
      break;
    }
    ++events;
    bytes += packet->size();
    if (!packet->empty() && static_cast<uint8_t>((*packet)[0]) == 0xfe && packet->size() < 8) {
      ended = Status::Unavailable("the primary ended the stream");
      break;
    }
    if (packet->empty() || (*packet)[0] != 0) {
      ended = Status::DataError("a stream packet that is not an event");
      break;
    }
    auto step = decoder.Feed(packet->substr(1), arrival);
    if (!step.ok()) {
      ended = step.status();
      break;
    }
    if (step->alive) stream_->Alive(token, arrival, step->heartbeat);
    if (step->position) {
      std::optional<std::pair<uint64_t, uint64_t>> commit_us;
      if (step->mysql_gtid && step->mysql_gtid->original_commit_us) {
        commit_us = {*step->mysql_gtid->original_commit_us,
                     step->mysql_gtid->immediate_commit_us.value_or(0)};
      }
      stream_->Transaction(token, *step->position, step->first_arrival, commit_us);
      if (own_id && step->origin == own_id) {
        options_.own_write(step->first_arrival);
        if (proving) options_.applied(server, std::nullopt);
        proving = false;
      } else if (proving) {
        options_.applied(server, AppliedProof{*own_id, applied_before});
      }
      applied_before = *step->position;
    }
    if (now >= next_report) {
      sink_->StreamRead(events, bytes);
      events = bytes = 0;
      next_report = now + kReportEvery;
    }
  }
  sink_->StreamRead(events, bytes);
  if (proving) options_.applied(server, std::nullopt);
  stream_->Stop(token);
  {
    std::lock_guard lock(mu_);
    fd_ = -1;
  }
  return ended;
}

void BinlogListener::Run(std::stop_token stop) {
  std::stop_callback on_stop(stop, [this] { Interrupt(); });
  Millis backoff = kFirstBackoff;
  Millis kind_wait = kFirstKindWait;
  while (!stop.stop_requested()) {
    MysqlTarget target;
    uint64_t generation = 0;
    std::stop_source wake;
    {
      std::lock_guard lock(mu_);
      target = target_;
      generation = target_generation_;
      wake_ = wake;
    }
    // Until the sampler has chosen what to compare, there is nothing to follow.
    const std::optional<PositionsKind> kind = history_->kind();
    Status st = Status::Ok();
    unsigned server_errno = 0;
    bool started = false;
    if (kind && *kind != PositionsKind::kNone) {
      st = Session(target, *kind, generation, stop, &server_errno, &started);
      if (st.ok()) st = Status::Unavailable("the stream ended");
    }
    if (started) backoff = kFirstBackoff;
    Millis wait = kKindPatience;
    if (!kind) {
      wait = kind_wait;
      kind_wait = std::min(kind_wait * 2, kKindPatience);
    } else {
      kind_wait = kFirstKindWait;
    }
    if (kind && *kind != PositionsKind::kNone && st.code() != Status::Code::kCancelled) {
      const char* reason = ReasonOf(st, server_errno);
      sink_->StreamFailed(reason, st);
      const bool refused = std::string_view(reason) == stream_error::kRefused ||
                           std::string_view(reason) == stream_error::kNoBinlog;
      if (options_.own_write) {
        LogLimited(LogLevel::kWarn, "binlog-watch",
                   "writes on " + target.endpoint.Id() + " not watched: " + st.ToString() +
                       (refused ? " (it needs binary logging on, and REPLICATION SLAVE for "
                                  "the account there)"
                                : "; retrying"));
      } else {
        LogLimited(LogLevel::kWarn, "binlog-stream",
                   "binary log stream from " + target.endpoint.Id() + ": " + st.ToString() +
                       (refused ? " (the account needs REPLICATION SLAVE on the primary: GRANT "
                                  "REPLICATION SLAVE ON *.* TO ...); position sampling only"
                                : "; position sampling until it is back"));
      }
      wait = refused ? kRefusedBackoff : backoff;
      backoff = std::min(backoff * 2, kMaxBackoff);
    } else if (st.code() == Status::Code::kCancelled) {
      backoff = kFirstBackoff;
      wait = Millis(0);
    }
    std::stop_callback forward(stop, [&wake] { wake.request_stop(); });
    clock_.SleepUntil(wake.get_token(), clock_.Now() + wait);
  }
}

}  // namespace lagwatch
