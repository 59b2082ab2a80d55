// The heartbeat table and every statement lagwatch runs against it: what the writer upserts on the
// primary and what the probers read on the replicas (docs/measurement.md, "Heartbeat").
// Statements are built once from validated identifiers only; value types.
#pragma once

#include <cstdint>
#include <string>

namespace lagwatch {

// The `heartbeat` section of the configuration.
struct HeartbeatConfig {
  std::string database = "heartbeat";
  std::string table = "mysql_heartbeat";
  int interval_ms = 500;
  bool create_table = true;
  // "db.table", validated: each part matches [A-Za-z0-9_$]{1,64}.
  std::string QualifiedName() const { return "`" + database + "`.`" + table + "`"; }
};

// SQL used by the writer and the probers. `agent_id` is the row this agent owns.
struct HeartbeatSql {
  HeartbeatSql(const HeartbeatConfig& heartbeat, int64_t agent_id);
  std::string create_database;
  std::string create_table;
  std::string read_own_seq;   // SELECT seq ... WHERE id = agent_id
  std::string upsert_prefix;  // completed by Upsert()
  std::string Upsert(uint64_t seq) const;
  // One autocommit round trip: our seq, the server's @@server_id as `sid` and @@read_only as
  // `ro` (on MySQL, super_read_only implies read_only), and the replica's applied GTIDs as `pos`:
  // MariaDB's @@gtid_slave_pos, or MySQL's @@GLOBAL.gtid_executed.
  std::string probe;
  std::string probe_mysql_gtid;
  // Our seq, `sid` and `ro` alone: positions "none", or "binlog" (whose coordinates the status
  // poll reads).
  std::string probe_heartbeat_only;
};

}  // namespace lagwatch
