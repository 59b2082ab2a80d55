#include "base/secret_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "base/log.h"

namespace lagwatch {

Status CheckSecretFile(const std::string& key, const std::string& path, InsecureFiles policy,
                       const std::string& refuse_hint) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(path.c_str(), R_OK) != 0) {
    return Status::InvalidArgument(key + ": cannot read " + path);
  }
  const mode_t exposed = st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH);
  if (exposed == 0) return Status::Ok();
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  const std::string what = key + ": " + path + " holds credentials but its group or others may " +
                           "read or write it (mode " + mode + "); chmod 600 it";
  if (policy == InsecureFiles::kRefuse) return Status::InvalidArgument(what + refuse_hint);
  Log(LogLevel::kWarn, what);
  return Status::Ok();
}

Result<std::string> ReadSecretLine(const std::string& key, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(key + ": cannot read " + path);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) {
    return Status::InvalidArgument(key + ": " + path + " is empty (the secret is its first line)");
  }
  return line;
}

}  // namespace lagwatch
