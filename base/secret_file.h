// Files that hold credentials (MySQL option files, the Redis password file, `lagwatch status
// --password-file`): checked for who may read them before they are used, and read without the
// secret ever reaching a log line.
#pragma once

#include <string>

#include "base/status.h"

namespace lagwatch {

// What to do with a secret file (MySQL option file, Redis password file) that its group or others
// may read or write.
enum class InsecureFiles { kRefuse, kWarn };

// Checks a file that holds credentials, named by `key` (a config key or a command-line flag) in
// messages: it must be a readable regular file (else InvalidArgument). One that its group or
// others may read or write is refused with InvalidArgument "KEY: PATH holds credentials but ...
// (mode 0644); chmod 600 it" + `refuse_hint`, or with kWarn logged as a warning and accepted.
Status CheckSecretFile(const std::string& key, const std::string& path, InsecureFiles policy,
                       const std::string& refuse_hint = "");

// The first line of a secret file (without its line end); InvalidArgument naming `key` when the
// file cannot be read or the line is empty.
Result<std::string> ReadSecretLine(const std::string& key, const std::string& path);

}  // namespace lagwatch
