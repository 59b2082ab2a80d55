// The plain records the floors exchange: what a prober measured (ReplicaSnapshot, ReplicaView),
// what the heartbeat writer knows of the primary (PrimarySnapshot, PrimaryView). The agent makes
// them; the exporters (Redis publisher, API) read them, so neither side needs the other's
// classes (docs/architecture.md). Value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <vector>

#include "base/applier_status.h"
#include "base/clock.h"
#include "base/endpoint.h"
#include "base/server_flavor.h"
#include "base/slave_status.h"

namespace lagwatch {

// One replica's published record (docs/redis.md): what the prober produces after every probe and
// what the Redis publisher, the metrics and the API show.
struct ReplicaSnapshot {
  std::string id;              // "host:port"
  int64_t delay_ms = 0;        // upper bound at the probe
  int64_t delay_lower_ms = 0;  // lower bound at the probe
  std::string state;           // StateName()
  bool healthy = false;
  std::string tier;
  int weight = 0;
  std::optional<int64_t> max_delay_ms;  // nullopt: the tier has no limit
  uint64_t seq = 0;                     // last heartbeat seq seen on the replica
  int64_t measured_at_ms = 0;           // agent wall clock, unix ms
  // The upper bound at the answer's own microsecond, and that moment (unix µs): delay_ms is the
  // same bound carried to the next whole ms. Equal to them in µs where there is no finer moment.
  int64_t delay_us = 0;
  int64_t measured_at_us = 0;
  int64_t agent_id = 0;
  std::string cluster;  // the agent's Config::cluster
  // The replica's applied position at the probe (read-your-writes: docs/redis.md), as the server
  // prints it, and its kind's name (PositionsKindName); "" and "none" when there is none to
  // compare with the primary's.
  std::string position;
  std::string position_kind = "none";
  MonoTime measured_mono;  // the same moment on the monotonic clock (not published)
};

// The primary's published record: `lagwatch:primary:<host>:<port>` (docs/redis.md).
struct PrimarySnapshot {
  std::string id;             // "host:port"
  std::string state;          // "up", "degraded", "down"
  int64_t last_write_ms = 0;  // unix ms of the last acknowledged heartbeat; 0: none yet
  int consecutive_failures = 0;
  bool read_only = false;  // the primary is read-only, so the writer is paused
  // The topology's state (agent/topology.h): "ok", "unknown" or "ambiguous" (then `state` says
  // "ambiguous" too: writes have no one primary to go to).
  std::string topology = "ok";
  std::string cluster;     // the agent's Config::cluster
  MonoTime measured_mono;  // when this was decided (not published)
};

// What a replica is configured as: its identity and its tier's limit (for the API).
struct ReplicaInfo {
  Endpoint endpoint;
  std::string tier;
  int weight = 0;
  std::optional<int64_t> max_delay_ms;  // nullopt: the tier has no limit
  bool tier_enabled = true;
};

// Rolling-window statistics of one replica over one window.
struct WindowStats {
  std::string name;  // "1m", "5m"
  size_t probes = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;  // NaN when no probe was measured
  std::optional<double> slar;                             // nullopt when no probe ran
};

// MySQL 8.0+'s applier signals as the replica's last read showed them (base/applier_status.h):
// diagnostics beside the bound, never part of it.
struct ApplierView {
  std::optional<ApplierStatus> status;  // nullopt: not available
  // Why not, while status is nullopt: not asked (MariaDB, MySQL before 8.0, an unknown server),
  // refused on this connection, unreadable, or not read yet.
  std::string reason = "not read yet";
};

// Everything the prober knows about its replica, for the API and the live view.
struct ReplicaView {
  // The verdict of the latest probe (also before the first measurement, when no key is
  // published yet).
  std::string state = "unreachable";
  bool healthy = false;
  std::optional<ReplicaSnapshot> last;  // the last published record; nullopt until measured
  ReplicationStatus status;
  // Which server answers (nullopt until it was asked on a connection) and the statement its
  // replication status is read with.
  std::optional<ServerFlavor> server;
  std::string status_statement;
  // The positions kind the bounds use: "mariadb_gtid" or "none" (heartbeat bounds only).
  std::string positions;
  // Which bounds gave the upper bound last ("stream", "positions", "heartbeat"); "" until
  // measured.
  std::string bound;
  std::string last_error;
  int64_t last_error_at_ms = 0;
  uint64_t probes = 0;
  uint64_t failures = 0;
  std::vector<WindowStats> windows;  // 1m, 5m
  ApplierView applier;
};

// The writer's view of the primary, for the API and the primary's Redis hash.
struct PrimaryView {
  std::string state = "down";  // CircuitBreaker::PublicState()
  int consecutive_failures = 0;
  bool read_only = false;     // writes paused because the primary is read-only
  int64_t last_write_ms = 0;  // unix ms of the last acknowledged heartbeat; 0: none yet
  std::string last_error;
  int64_t last_error_at_ms = 0;
};

}  // namespace lagwatch
