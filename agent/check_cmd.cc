#include "agent/check_cmd.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include <hiredis/hiredis.h>
#include <optional>

#include "agent/assessment.h"
#include "agent/config.h"
#include "base/binlog_coords.h"
#include "base/exit_code.h"
#include "base/mysql_conn.h"
#include "base/mysql_errors.h"
#include "base/net_stream.h"
#include "base/position.h"
#include "base/redis_client.h"
#include "base/redis_conn.h"
#include "base/server_flavor.h"
#include "base/slave_status.h"
#include "base/strings.h"
#include "exporters/record_merge.h"
#include "heartbeat/heartbeat_sql.h"
#include "heartbeat/sampler.h"
#include "version.h"

namespace lagwatch {
namespace {

constexpr int kExitProblem = 1;
// Each statement's deadline: generous, this is a person's command, not a probe.
constexpr Millis kQueryTimeout(3000);

// One server's section of the report.
class Report {
 public:
  explicit Report(std::string title) : title_(std::move(title)) {}
  // "  key:        value", the values aligned.
  void Line(const std::string& key, const std::string& value) {
    std::string k = key + ":";
    k.resize(std::max<size_t>(13, k.size() + 1), ' ');
    lines_.push_back("  " + k + EscapeControl(value));
  }
  void Problem(const std::string& what) {
    lines_.push_back("  PROBLEM: " + EscapeControl(what));
    ok_ = false;
  }
  void Warn(const std::string& what) { lines_.push_back("  WARN: " + EscapeControl(what)); }
  bool ok() const { return ok_; }
  void Print() const {
    std::printf("%s\n", title_.c_str());
    for (const auto& l : lines_) std::printf("%s\n", l.c_str());
    std::printf("  => %s\n\n", ok_ ? "can be monitored" : "CANNOT be monitored as configured");
  }

 private:
  std::string title_;
  std::vector<std::string> lines_;
  bool ok_ = true;
};

// "TLSv1.3 TLS_AES_256_GCM_SHA384, verified, certificate expires in 29 days (2027-01-02)", or
// "plaintext". `wanted`: the configuration's block (TLS without it came from an option file).
std::string DescribeTls(const TlsPeer& peer, const TlsOptions& wanted) {
  if (!peer.tls) return "plaintext";
  std::string out = peer.protocol + " " + peer.cipher + ", " +
                    (!wanted.enabled ? "from the option file's ssl-* lines (verified as they say)"
                     : peer.verified ? "verified"
                                     : "NOT verified (verify_server_cert is false)");
  if (peer.not_after_unix) {
    const int64_t now = UnixMillis(SystemClock::Get().WallNow()) / 1000;
    const int64_t days = DaysUntil(*peer.not_after_unix, now);
    char date[32];
    const time_t t = static_cast<time_t>(*peer.not_after_unix);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
    out += days >= 0
               ? ", certificate expires in " + std::to_string(days) + " days (" + date + ")"
               : ", certificate EXPIRED " + std::to_string(-days) + " days ago (" + date + ")";
  }
  return out;
}

// The line for a connection that failed on TLS: its named reason first.
std::string TlsProblem(const Status& st) {
  return std::string("TLS (") + st.tls_reason() + "): " + st.message();
}

// Certificates expiring within this many days are warned about (as the alert rule does).
constexpr int64_t kExpiryWarnDays = 14;

void ReportTls(Report& r, const TlsPeer& peer, const TlsOptions& wanted) {
  r.Line("tls", DescribeTls(peer, wanted));
  if (wanted.enabled && !peer.tls) {
    r.Warn("tls is enabled but the server has no TLS, and tls.required is false: plaintext");
  }
  if (peer.not_after_unix &&
      DaysUntil(*peer.not_after_unix, UnixMillis(SystemClock::Get().WallNow()) / 1000) <
          kExpiryWarnDays) {
    r.Warn("the server's certificate expires in less than " + std::to_string(kExpiryWarnDays) +
           " days");
  }
}

// A connection to one server and what the check learned of it.
struct Server {
  explicit Server(MysqlTarget t) : target(t), conn(std::move(t)) {}
  MysqlTarget target;
  MysqlConn conn;
  ServerFlavor flavor;
  std::optional<int64_t> server_id;
  std::vector<std::string> grants;

  Result<QueryResult> Query(std::string_view sql) {
    return conn.Query(sql, SystemClock::Get().Now() + kQueryTimeout);
  }
  // The column `v` of a one-value query ("SELECT ... AS v") as text ("" for NULL); nullopt when
  // the query failed.
  std::optional<std::string> Scalar(std::string_view sql) {
    auto r = Query(sql);
    if (!r.ok()) return std::nullopt;
    return CellText(*r, "v");
  }
};

// Whether a plaintext login refused as "Access denied" succeeds over TLS (verification off,
// credentials the same): MariaDB's answer to a plaintext client under require_secure_transport.
bool RefusedForPlaintext(const MysqlTarget& target) {
  MysqlTarget tls = target;
  tls.tls.enabled = true;
  tls.tls.verify = false;
  MysqlConn conn(std::move(tls));
  return conn.Query("SELECT 1", SystemClock::Get().Now() + kQueryTimeout).ok();
}

// Connects and asks which server it is; false (with the problem reported) when it cannot.
bool Connect(Server& s, Report& r) {
  auto flavor = s.Query(kServerFlavorQuery);
  if (!flavor.ok()) {
    const Status& st = flavor.status();
    if (st.code() == Status::Code::kTls) {
      r.Problem(TlsProblem(st));
    } else if (!s.target.tls.enabled && s.conn.last_errno() == kErAccessDenied &&
               RefusedForPlaintext(s.target)) {
      r.Problem(std::string("TLS (") + tls_reason::kPlaintextRefused +
                "): the server refuses this login in plaintext and accepts it over TLS "
                "(require_secure_transport=ON): configure tls");
    } else {
      r.Problem("cannot connect or query: " + st.ToString());
    }
    return false;
  }
  if (auto parsed = ParseServerFlavor(*flavor); parsed.ok()) s.flavor = parsed.value();
  r.Line("server", s.flavor.Describe());
  if (s.flavor.kind == ServerFlavor::kUnknown) {
    r.Warn("the server's version is not one lagwatch knows; it is treated as an old MySQL");
  }
  if (auto peer = s.conn.InspectTls(SystemClock::Get().Now() + kQueryTimeout); peer.ok()) {
    ReportTls(r, *peer, s.target.tls);
  } else {
    r.Warn("cannot read the connection's TLS status: " + peer.status().ToString());
  }
  auto who = s.Query("SELECT CURRENT_USER() AS user, @@server_id AS id, @@read_only AS ro");
  if (who.ok()) {
    r.Line("user", CellText(*who, "user"));
    r.Line("server_id", CellText(*who, "id"));
    r.Line("read_only", CellText(*who, "ro"));
    s.server_id = ParseInt<int64_t>(CellText(*who, "id"));
  }
  auto grants = s.Query("SHOW GRANTS");
  if (grants.ok()) {
    for (const auto& row : grants->rows) {
      if (!row.empty() && row[0]) s.grants.push_back(*row[0]);
    }
    for (const auto& g : s.grants) r.Line("grant", RedactGrant(g));
  } else {
    r.Warn("SHOW GRANTS failed (" + grants.status().ToString() + "): privileges not checked");
  }
  return true;
}

// The heartbeat table and this agent's row in it.
void CheckHeartbeat(Server& s, Report& r, const Config& c, bool primary) {
  const HeartbeatSql sql(c.heartbeat, c.agent_id);
  auto row = s.Query(sql.read_own_seq);
  const std::string table = c.heartbeat.QualifiedName();
  if (row.ok()) {
    r.Line("heartbeat",
           table + (row->rows.empty() ? ": exists, no row for agent " + std::to_string(c.agent_id) +
                                            " yet (the writer adds it)"
                                      : ": row for agent " + std::to_string(c.agent_id) + ", seq " +
                                            row->rows[0][0].value_or("NULL")));
  } else if (s.conn.last_errno() == kErNoSuchTable) {
    if (primary && c.heartbeat.create_table) {
      r.Line("heartbeat", table + ": missing; the writer creates it (heartbeat.create_table)");
    } else if (primary) {
      r.Problem(table + " does not exist and heartbeat.create_table is false");
    } else {
      r.Line("heartbeat", table + ": missing here; it replicates once the writer creates it");
    }
  } else {
    r.Problem("cannot read " + table + ": " + row.status().ToString());
  }
  std::vector<std::string> needed = primary ? std::vector<std::string>{"SELECT", "INSERT", "UPDATE"}
                                            : std::vector<std::string>{"SELECT"};
  if (primary && c.heartbeat.create_table) needed.push_back("CREATE");
  if (s.grants.empty()) return;
  std::string list;
  for (const auto& p : needed) list += (list.empty() ? "" : ", ") + p;
  if (GrantsInclude(s.grants, needed, c.heartbeat.database, c.heartbeat.table)) {
    r.Line("privileges", list + " on " + table + ": granted");
  } else {
    r.Warn(list + " on " + table + " not found in SHOW GRANTS (granted through a role?)");
  }
}

// Why auto chose `kind` for a primary of `flavor`.
std::string AutoReason(PositionsKind kind, const ServerFlavor& flavor) {
  switch (kind) {
    case PositionsKind::kMariaDbGtid:
      return HasMariaDbGtid(flavor) ? "auto: MariaDB" : "auto: the server does not say what it is";
    case PositionsKind::kMysqlGtid:
      return "auto: MySQL with gtid_mode ON";
    case PositionsKind::kBinlog:
      return "auto: MySQL with gtid_mode not ON";
    case PositionsKind::kNone:
      break;
  }
  return "auto";
}

// The primary's binary log and its positions; returns the positions kind lagwatch will compare
// (kNone when it cannot sample the chosen one).
PositionsKind CheckPrimary(Server& s, Report& r, const Config& c) {
  const char* statement = BinaryLogStatusStatement(s.flavor);
  if (auto b = s.Query(statement); b.ok()) {
    auto status = ParseBinaryLogStatus(*b);
    r.Line("binary log",
           std::string(statement) + ": " +
               (status.ok() ? Position(status->coords).ToString() : status.status().message()));
  } else {
    r.Line("binary log", std::string(statement) + " not answered (" + b.status().message() + ")");
  }
  auto kind =
      ChoosePositionsKind(s.conn, s.flavor, c.positions, SystemClock::Get().Now() + kQueryTimeout);
  if (!kind) {
    r.Problem("the connection failed while choosing the positions kind");
    return PositionsKind::kNone;
  }
  const std::string why = c.positions ? "set in the configuration" : AutoReason(*kind, s.flavor);
  if (*kind != PositionsKind::kNone) {
    bool binlog_off = false;
    auto pos = ReadPrimaryPosition(s.conn, *kind, s.flavor,
                                   SystemClock::Get().Now() + kQueryTimeout, &binlog_off);
    if (!pos.ok()) {
      const bool denied = s.conn.last_errno() == kErSpecificAccessDenied;
      r.Warn(std::string("cannot sample ") + PositionsKindName(*kind) + " positions (" + why +
             "): " + pos.status().message() +
             (denied ? std::string(" (") + kBinaryLogStatusGrantHint + ")" : "") +
             "; the agent falls back to " +
             (!c.positions && *kind != PositionsKind::kBinlog ? "binlog, then " : "") +
             "heartbeat bounds");
      CheckHeartbeat(s, r, c, /*primary=*/true);
      return PositionsKind::kNone;
    }
    r.Line("positions", std::string(PositionsKindName(*kind)) + " (" + why +
                            "): " + pos->ToString() + ", sampled every " +
                            std::to_string(c.sampler_interval_ms) + " ms");
  } else {
    r.Line("positions", "none (" + why + "): heartbeat bounds only");
  }
  CheckHeartbeat(s, r, c, /*primary=*/true);
  return *kind;
}

// The replica's replication status as the agent reads it: SHOW REPLICA STATUS (or SHOW SLAVE
// STATUS), and on MariaDB every connection when the default one is absent or not from
// `primary`; of several channels, the one from `primary` (ParseSlaveStatus). nullopt, with a
// problem reported, when it cannot be read or the server is no replica.
std::optional<ReplicationStatus> ReadReplicaStatus(Server& s, Report& r,
                                                   const ChannelSource& primary) {
  const char* statement = ReplicaStatusStatement(s.flavor);
  auto reply = s.Query(statement);
  if (const char* retry =
          reply.ok() ? nullptr : ReplicaStatusRetry(statement, s.conn.last_errno())) {
    r.Line("status", std::string(statement) + " refused as unknown; using " + retry);
    statement = retry;
    reply = s.Query(statement);
  }
  if (!reply.ok()) {
    r.Problem(std::string(statement) + " failed: " + reply.status().ToString() +
              (s.conn.last_errno() == kErSpecificAccessDenied
                   ? std::string(" (") + kReplicaStatusGrantHint + ")"
                   : ""));
    return std::nullopt;
  }
  if (NeedsAllConnections(*reply, s.flavor, primary)) {
    if (auto all = s.Query(kAllConnectionsStatusStatement); all.ok()) {
      statement = kAllConnectionsStatusStatement;
      reply = std::move(all);
    }
  }
  auto st = ParseSlaveStatus(*reply, &primary);
  if (!st.ok() || !st->configured) {
    r.Problem(!st.ok() ? std::string(statement) + ": " + st.status().message()
                       : "not a replica: " + std::string(statement) + " returned no row");
    return std::nullopt;
  }
  r.Line("status", std::string(statement) + ", " + std::to_string(reply->columns.size()) +
                       " columns (" +
                       (st->column_family == ColumnFamily::kReplica ? "Replica_*/Source_*"
                                                                    : "Slave_*/Master_*") +
                       " names)");
  if (st->channel_match == ChannelMatch::kNone) {
    r.Warn(DescribeChannel(*st) + ": the agent reports it unverified (the first is shown)");
  } else if (st->channel_match != ChannelMatch::kOnly) {
    r.Line("channel", DescribeChannel(*st) + "; the others are ignored");
  }
  return st.value();
}

// The judged channel's threads and source against the configured primary; `kind` becomes none
// where the agent would not compare coordinates.
void ReportSource(Report& r, const Config& c, const ReplicationStatus& st,
                  std::optional<int64_t> primary_server_id, PositionsKind* kind) {
  r.Line("threads", "IO " + st.io_state + ", SQL " + (st.sql_running ? "Yes" : "No"));
  const std::string source =
      st.source_host + ":" + (st.source_port ? std::to_string(*st.source_port) : "?");
  r.Line("source", source + " (server id " +
                       (st.source_server_id ? std::to_string(*st.source_server_id) : "?") + ")");
  r.Line("mode", !st.using_gtid.empty() ? "Using_Gtid " + st.using_gtid
                 : st.auto_position
                     ? std::string(*st.auto_position ? "GTID auto-position" : "file and position")
                     : "?");
  if ((!st.io_running || !st.sql_running) && st.channel_match != ChannelMatch::kNone) {
    r.Warn("a replication thread is not running: the replica is reported stopped");
  }
  const bool same_server = ReplicatesFromPrimary(st, primary_server_id);
  const bool same_address =
      st.source_host == c.primary.host && st.source_port && *st.source_port == c.primary.port;
  if (!same_server && !same_address) {
    r.Warn("its source " + source + " is not the configured primary " + c.primary.Id() +
           " (a chained replica, or the primary's address differs)" +
           (*kind == PositionsKind::kBinlog
                ? ": its coordinates are its source's, so it is compared by heartbeat only"
                : ": GTIDs are compared across the chain"));
  } else if (*kind == PositionsKind::kBinlog && !same_server) {
    r.Warn(
        "its source's server id is not known to be the primary's: its coordinates are "
        "compared by heartbeat only");
  }
  // As the agent does: coordinates only for a replica of the primary's server id.
  if (*kind == PositionsKind::kBinlog && !same_server) *kind = PositionsKind::kNone;
}

// Replication status, its source against the configured primary, and the positions kind.
void CheckReplica(Server& s, Report& r, const Config& c, const ReplicaConfig& rc,
                  std::optional<int64_t> primary_server_id, PositionsKind kind) {
  std::optional<ReplicationStatus> status =
      ReadReplicaStatus(s, r, {primary_server_id, c.primary.host, c.primary.port});
  if (status) ReportSource(r, c, *status, primary_server_id, &kind);
  const TierConfig& tier = c.Tier(rc.tier);
  // What the agent compares (agent/assessment.h): the replica's position variable, or the
  // executed coordinates of the status read above.
  const char* variable = ReplicaPositionVariable(kind);
  const std::string from = variable ? variable : "the executed source coordinates";
  std::optional<std::string> text;
  if (variable) text = s.Scalar(std::string("SELECT ") + variable + " AS v");
  if (text && text->empty()) text.reset();
  std::string applied;
  if (kind != PositionsKind::kNone) {
    auto pos = AppliedPosition(kind, text, status ? &*status : nullptr);
    if (!pos.ok()) {
      r.Warn(from + " not usable: " + pos.status().message());
    } else if (*pos) {
      applied = (*pos)->ToString();
    }
  }
  if (!applied.empty()) {
    r.Line("positions", std::string(PositionsKindName(kind)) + ": " + from + " = " + applied +
                            " (bounds to about one sampling interval)");
  } else {
    if (kind != PositionsKind::kNone) {
      r.Warn(std::string("cannot read ") + from + " here: heartbeat bounds for this replica");
    }
    r.Line("positions", "none: heartbeat bounds only, a band up to heartbeat.interval_ms wide");
    if (tier.max_delay_ms && c.heartbeat.interval_ms > *tier.max_delay_ms) {
      r.Warn("heartbeat.interval_ms (" + std::to_string(c.heartbeat.interval_ms) +
             " ms) is above " + tier.name + "'s limit (" + std::to_string(*tier.max_delay_ms) +
             " ms): a replica with no lag can read as over it; lower heartbeat.interval_ms");
    }
  }
  CheckHeartbeat(s, r, c, /*primary=*/false);
}

// Redis as the publisher reaches it: the server (or the master the sentinels name, or each master
// of a Redis Cluster), TLS, the user, and whether the record script loads. True when the agent can
// publish there.
bool CheckRedis(const RedisConfig& redis) {
  std::string where;
  if (!redis.cluster.empty()) {
    where = "cluster of " + std::to_string(redis.cluster.size()) + " seed node" +
            (redis.cluster.size() == 1 ? "" : "s");
  } else if (!redis.sentinels.empty()) {
    where = "master " + redis.master_name + " of " + std::to_string(redis.sentinels.size()) +
            " sentinel" + (redis.sentinels.size() == 1 ? "" : "s");
  } else {
    where = Endpoint{redis.host, redis.port}.Id();
  }
  Report r("redis " + where + (redis.username.empty() ? "" : " as " + redis.username));
  auto client = RedisClient::Open(redis, kQueryTimeout);
  if (!client.ok()) {
    const Status& st = client.status();
    r.Problem(st.code() == Status::Code::kTls ? TlsProblem(st) : st.ToString());
    r.Print();
    return false;
  }
  if ((*client)->cluster()) r.Line("masters", (*client)->Describe());
  for (const Endpoint& master : std::vector<Endpoint>((*client)->masters())) {
    auto conn = (*client)->Connection(master);
    if (!conn.ok()) {
      r.Problem(master.Id() + ": " + conn.status().ToString());
      continue;
    }
    RedisConnection& rc = **conn;
    r.Line("server", rc.server());
    ReportTls(r, rc.tls(), redis.tls);
    if (Status role = RedisCheckMaster(rc); !role.ok()) r.Problem(role.message());
    if (RedisReply who = rc.Run({"ACL", "WHOAMI"}); who && who->type == REDIS_REPLY_STRING) {
      r.Line("user", ReplyText(*who));
    }
    RedisReply sha = rc.Run({"SCRIPT", "LOAD", kMergeRecordScript});
    if (sha && sha->type == REDIS_REPLY_STRING) {
      r.Line("script", "lagwatch's record script loads (" + ReplyText(*sha) + ")");
    } else {
      r.Problem(
          "the record script does not load: " + (sha ? ReplyText(*sha) : rc.error().message()) +
          " (the agent's user needs SCRIPT LOAD and EVALSHA: docs/operations.md, "
          "\"Least privilege in Redis\")");
    }
  }
  r.Print();
  return r.ok();
}

}  // namespace

bool GrantsInclude(const std::vector<std::string>& grant_lines,
                   const std::vector<std::string>& privileges, std::string_view database,
                   std::string_view table) {
  const std::string db = AsciiLower(database), tb = AsciiLower(table);
  auto scope_matches = [&](std::string scope) {
    scope = AsciiLower(scope);
    std::string unquoted;
    for (char ch : scope) {
      if (ch != '`' && ch != '\'' && ch != '"') unquoted += ch;
    }
    return unquoted == "*.*" || unquoted == db + ".*" || unquoted == db + "." + tb;
  };
  std::vector<bool> found(privileges.size(), false);
  for (const auto& line : grant_lines) {
    const std::string l = AsciiLower(line);
    if (l.rfind("grant ", 0) != 0) continue;
    const size_t on = l.find(" on ");
    if (on == std::string::npos) continue;
    const size_t to = l.find(" to ", on);
    if (to == std::string::npos || !scope_matches(line.substr(on + 4, to - on - 4))) continue;
    const std::string granted = l.substr(6, on - 6);
    for (size_t i = 0; i < privileges.size(); ++i) {
      const std::string want = AsciiLower(privileges[i]);
      // Whole names in the comma list: "select" must not match "select_priv" or a column list.
      size_t start = 0;
      while (start <= granted.size()) {
        size_t comma = granted.find(',', start);
        if (comma == std::string::npos) comma = granted.size();
        std::string item(Trim(std::string_view(granted).substr(start, comma - start)));
        if (item == want || item == "all privileges" || item == "all") found[i] = true;
        start = comma + 1;
      }
    }
  }
  for (bool f : found) {
    if (!f) return false;
  }
  return true;
}

std::string RedactGrant(std::string_view line) {
  const std::string lower = AsciiLower(line);
  const size_t at = lower.find(" identified ");
  if (at == std::string::npos) return std::string(line);
  return std::string(line.substr(0, at)) + " IDENTIFIED BY <redacted>";
}

int RunCheckCommand(const std::vector<std::string>& args) {
  if (args.size() != 2 || args[0] != "--config") {
    std::fputs("usage: lagwatch check --config FILE\n", stderr);
    return kExitUsage;
  }
  auto config = LoadConfig(args[1]);
  if (!config.ok()) {
    std::fprintf(stderr, "lagwatch check: invalid config %s: %s\n", args[1].c_str(),
                 config.status().message().c_str());
    return kExitUsage;
  }
  const Config& c = config.value();
  std::printf("lagwatch check %s (lagwatch %s)\n", args[1].c_str(), LAGWATCH_VERSION);
  std::printf("heartbeat %s every %d ms as agent %lld; probes every %d ms\n\n",
              c.heartbeat.QualifiedName().c_str(), c.heartbeat.interval_ms,
              static_cast<long long>(c.agent_id), c.probe.interval_ms);

  int failed = 0;
  Server primary({c.primary, c.primary_defaults_file, "primary " + c.primary.Id(), c.primary_tls});
  Report pr("primary " + c.primary.Id() + " (option file " + c.primary_defaults_file + ")");
  PositionsKind kind = PositionsKind::kNone;
  if (Connect(primary, pr)) kind = CheckPrimary(primary, pr, c);
  pr.Print();
  failed += !pr.ok();

  for (const auto& rc : c.replicas) {
    Server s({rc.endpoint, c.replica_defaults_file, "replica " + rc.endpoint.Id(), rc.tls});
    Report r("replica " + rc.endpoint.Id() + ", " + rc.tier + " (option file " +
             c.replica_defaults_file + ")");
    if (Connect(s, r)) CheckReplica(s, r, c, rc, primary.server_id, kind);
    r.Print();
    failed += !r.ok();
  }
  const size_t servers = 1 + c.replicas.size();
  const bool redis_ok = CheckRedis(c.redis);
  std::printf("%zu servers: %zu can be monitored, %d cannot; Redis %s\n", servers,
              servers - static_cast<size_t>(failed), failed, redis_ok ? "usable" : "NOT usable");
  return failed || !redis_ok ? kExitProblem : 0;
}

}  // namespace lagwatch
