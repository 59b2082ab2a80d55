// The server error numbers lagwatch acts on (MysqlConn::last_errno()), in one place. MySQL and
// MariaDB share these numbers.
#pragma once

namespace lagwatch {

// ER_ACCESS_DENIED_ERROR: a login refused (also MariaDB's answer to a plaintext login under
// require_secure_transport=ON).
inline constexpr unsigned kErAccessDenied = 1045;
// ER_SECURE_TRANSPORT_REQUIRED (MySQL 5.7+): a plaintext connection under
// require_secure_transport=ON.
// https://dev.mysql.com/doc/mysql-errors/8.0/en/server-error-reference.html
inline constexpr unsigned kErSecureTransportRequired = 3159;

// ER_PARSE_ERROR: a statement the server does not know (MySQL 8.4+ answers SHOW SLAVE STATUS
// with it).
inline constexpr unsigned kErParseError = 1064;
// ER_NO_SUCH_TABLE: e.g. the heartbeat table before the writer created it.
inline constexpr unsigned kErNoSuchTable = 1146;
// ER_BAD_DB_ERROR, ER_BAD_FIELD_ERROR: a schema or a column the server does not have (a
// performance_schema table of another version).
inline constexpr unsigned kErBadDb = 1049;
inline constexpr unsigned kErBadField = 1054;
// ER_DBACCESS_DENIED_ERROR, ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR: no SELECT
// on the schema, the table or a column.
inline constexpr unsigned kErDbAccessDenied = 1044;
inline constexpr unsigned kErTableAccessDenied = 1142;
inline constexpr unsigned kErColumnAccessDenied = 1143;
// ER_UNKNOWN_SYSTEM_VARIABLE: the server has no @@gtid_slave_pos / @@gtid_binlog_pos (MySQL);
// lagwatch then falls back to heartbeat bounds.
inline constexpr unsigned kErUnknownSystemVariable = 1193;
// ER_SPECIFIC_ACCESS_DENIED_ERROR: "you need (at least one of) the ... privilege(s)".
inline constexpr unsigned kErSpecificAccessDenied = 1227;
// Writes refused because the server is read-only (--read-only; MySQL's super_read_only).
inline constexpr unsigned kErOptionPreventsStatement = 1290;
inline constexpr unsigned kErReadOnlyMode = 1836;

}  // namespace lagwatch
