#include "heartbeat/heartbeat_sql.h"

#include "base/position.h"

namespace lagwatch {

HeartbeatSql::HeartbeatSql(const HeartbeatConfig& heartbeat, int64_t agent_id) {
  const std::string t = heartbeat.QualifiedName();
  const std::string id = std::to_string(agent_id);
  create_database = "CREATE DATABASE IF NOT EXISTS `" + heartbeat.database + "`";
  create_table = "CREATE TABLE IF NOT EXISTS " + t +
                 " (id INT UNSIGNED NOT NULL PRIMARY KEY,"
                 " updated_at DATETIME(6) NOT NULL,"
                 " seq BIGINT UNSIGNED NOT NULL,"
                 " server_id INT UNSIGNED NOT NULL) ENGINE=InnoDB";
  read_own_seq = "SELECT seq FROM " + t + " WHERE id = " + id;
  // NOW(6), not SYSDATE(6): it replicates as the primary's time (docs/architecture.md, "Facts
  // the code relies on").
  upsert_prefix =
      "INSERT INTO " + t + " (id, updated_at, seq, server_id) VALUES (" + id + ", NOW(6), ";
  // Which server answers and whether it takes writes, for following the primary (agent/topology.h).
  const std::string seq = "(SELECT seq FROM " + t + " WHERE id = " + id +
                          ") AS seq, @@server_id AS sid, @@read_only AS ro";
  probe = "SELECT " + seq + ", " + ReplicaPositionVariable(PositionsKind::kMariaDbGtid) + " AS pos";
  probe_mysql_gtid =
      "SELECT " + seq + ", " + ReplicaPositionVariable(PositionsKind::kMysqlGtid) + " AS pos";
  probe_heartbeat_only = "SELECT " + seq;
}

std::string HeartbeatSql::Upsert(uint64_t seq) const {
  return upsert_prefix + std::to_string(seq) +
         ", @@server_id) ON DUPLICATE KEY UPDATE updated_at = VALUES(updated_at),"
         " seq = VALUES(seq), server_id = VALUES(server_id)";
}

}  // namespace lagwatch
