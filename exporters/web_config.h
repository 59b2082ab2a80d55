// The HTTP listener's web config file (http.web_config_file), in the spirit of the Prometheus
// exporter-toolkit's --web.config.file: a TLS certificate and key, and basic-auth users with
// bcrypt password hashes. Also BasicAuth, the check those users configure.
//
// The file is YAML (libyaml), so an exporter-toolkit web config works as it is and so does JSON
// (JSON is YAML). Supported keys, everything else is an error that names the key:
//
//   tls_server_config:          # optional; both files required when present
//     cert_file: server.crt     # PEM: the certificate, then any intermediates
//     key_file: server.key      # PEM: its private key, unencrypted
//     min_version: TLS12        # TLS12 (default) or TLS13
//   basic_auth_users:           # optional; at least one user when present
//     alice: $2y$10$...         # bcrypt ($2a$, $2b$, $2y$), e.g. from `htpasswd -nBC 10 alice`
//
// Relative file names are resolved against the web config file's directory.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"

namespace lagwatch {

// The parsed file: plain data, constant after load.
struct WebConfig {
  // Both empty (plain HTTP) or both absolute paths of readable PEM files.
  std::string cert_file;
  std::string key_file;
  bool tls13_only = false;  // min_version: TLS13 (else TLS 1.2 and 1.3)
  // user -> bcrypt hash; empty: no authentication.
  std::map<std::string, std::string> basic_auth_users;

  bool tls() const { return !cert_file.empty(); }
  bool auth() const { return !basic_auth_users.empty(); }
  bool operator==(const WebConfig&) const = default;
};

// Parses the text of the web config file at `path` (used in messages and to resolve relative
// file names). Checks structure and hash formats only, not the certificate and key files. On
// error returns InvalidArgument "PATH: KEY: what", e.g. "/etc/lagwatch/web.yml:
// basic_auth_users.alice: not a bcrypt hash ($2a$, $2b$ or $2y$)".
Result<WebConfig> ParseWebConfig(const std::string& text, const std::string& path);

// Reads and parses `path`, then checks that cert_file and key_file can be read and hold a PEM
// certificate and an unencrypted PEM private key. Whether they belong together is only known when
// the HTTP server loads them (HttpServer::Start).
Result<WebConfig> LoadWebConfig(const std::string& path);

// Checks an HTTP Authorization header against bcrypt hashes (libcrypt's crypt_rn).
//
// bcrypt is slow by design (about 85 ms at cost 10), so after a success the user's password is
// remembered for `cache_ttl` as a salted SHA-256-crypt digest (never in plain text) and the same
// password is then accepted at the cost of that digest (well under 1 ms). Unknown users cost one
// bcrypt like known ones, so timing does not tell which user names exist. An empty password, or
// one longer than bcrypt's 72 bytes, never matches. The decoded password is wiped before Check
// returns.
//
// Thread-safe.
class BasicAuth {
 public:
  enum class Verdict {
    kOk,
    kMissing,         // no Authorization header
    kMalformed,       // not "Basic <base64 of user:password>"
    kBadCredentials,  // unknown user or wrong password
  };

  // REQUIRES: every hash in `users` passed ParseWebConfig's format check. `clock` must outlive
  // this object.
  BasicAuth(std::map<std::string, std::string> users, const Clock& clock,
            Millis cache_ttl = std::chrono::minutes(5));
  ~BasicAuth();

  // `authorization` is the header's value, nullptr when absent. On kOk sets *user (if given).
  Verdict Check(const char* authorization, std::string* user = nullptr) const;

  // A short stable token for metric labels and logs: "ok", "missing", "malformed",
  // "bad_credentials".
  static const char* Reason(Verdict v);

 private:
  bool Bcrypt(const std::string& password, const std::string& hash) const;
  // The cache digest of `password` (SHA-256-crypt with this object's random salt).
  std::string Digest(const std::string& password) const;

  // Constant after construction.
  const std::map<std::string, std::string> users_;
  const Clock& clock_;
  const Millis cache_ttl_;
  std::string digest_setting_;  // "$5$rounds=1000$<random salt>$"

  struct CacheEntry {
    std::string digest;
    MonoTime expires;
  };
  mutable std::mutex mu_;
  mutable std::map<std::string, CacheEntry> cache_;  // GUARDED_BY(mu_); keys: known users only
};

// http.* apart from http.listen (Config::http_listen).
struct HttpConfig {
  // Requests served at once (CivetWeb worker threads); further connections wait in a short queue.
  int max_connections = 4;
  // Request line plus headers; a larger request is answered 4xx and closed.
  int max_request_bytes = 16384;
  // Deadline to read a request's headers and, separately, to write its response; a connection
  // whose request body is left unread is closed after at most twice this.
  int request_timeout_ms = 5000;
  std::string web_config_file;  // empty: plain HTTP, no authentication
  WebConfig web;                // loaded from web_config_file by ParseConfig
  bool operator==(const HttpConfig&) const = default;
};

}  // namespace lagwatch
