// `lagwatch check --config FILE`: the preflight an operator runs before going live, and pastes
// into a bug report. It connects to the primary and every replica with the configured option
// files and prints, per server: flavor and version, the user it logged in as, read_only, the
// replication status (statement, column family, threads, source) or the binary log position, the
// positions kind lagwatch will use and why, the heartbeat table's state, the grants it needs, and
// one PROBLEM line for each thing that stops the server being monitored (WARN for what only
// costs accuracy). Read-only: it writes nothing anywhere. Credentials never appear in what it
// prints (grant lines have their IDENTIFIED ... part redacted).
//
// Exit code: 0 every server can be monitored, 1 some cannot, 2 bad command line or config.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lagwatch {

// args: what follows "check" on the command line: --config FILE.
int RunCheckCommand(const std::vector<std::string>& args);

// Whether the SHOW GRANTS lines grant every one of `privileges` on `database`.`table` (through
// `*.*`, `database`.* or `database`.`table`, or ALL PRIVILEGES there). Privilege names are
// compared case-insensitively. Grants through roles are not followed: false then means "not
// confirmed", not "missing". Exposed for tests.
bool GrantsInclude(const std::vector<std::string>& grant_lines,
                   const std::vector<std::string>& privileges, std::string_view database,
                   std::string_view table);

// A SHOW GRANTS line with the credentials after IDENTIFIED removed, e.g.
// "GRANT USAGE ON *.* TO `u`@`h` IDENTIFIED BY PASSWORD '*AB..'" -> "... IDENTIFIED BY <redacted>".
std::string RedactGrant(std::string_view line);

}  // namespace lagwatch
