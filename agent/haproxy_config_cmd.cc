#include "agent/haproxy_config_cmd.h"

#include <cstdio>

#include "base/exit_code.h"
#include "base/secret_file.h"
#include "base/strings.h"
#include "cli/status_cmd.h"
#include "exporters/haproxy_http_check.h"
#include "exporters/haproxy_verdict.h"

namespace lagwatch {
namespace {

constexpr char kUsage[] =
    "usage: lagwatch haproxy-config --config FILE [--mode push|http|agent] [--backend NAME]\n"
    "                               [--check-address HOST] [--max-delay-ms N]\n"
    "                               [--ca-file FILE] [--user NAME --password-file FILE]\n";

// An address as HAProxy writes it on a server line: IPv6 in brackets.
std::string HaproxyAddress(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

const char* ModeName(HaproxyMode m) {
  return m == HaproxyMode::kPush ? "push" : m == HaproxyMode::kHttp ? "http" : "agent";
}

// Where HAProxy reaches lagwatch's `listen` ("addr:port"): the given address, else the listener's
// own (loopback for a wildcard).
Result<std::pair<std::string, int>> CheckEndpoint(const std::string& listen,
                                                  const std::string& check_address) {
  auto address = ParseListenAddress(listen);
  if (!address) return Status::InvalidArgument("cannot read the listener's address " + listen);
  std::string host = check_address.empty() ? address->host : check_address;
  if (host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  if (!IsToken(host, ".:-", 1, 253)) {
    return Status::InvalidArgument("--check-address: not a host name or address");
  }
  return std::pair<std::string, int>{host, address->port};
}

}  // namespace

Result<std::string> HaproxyBackendConfig(const Config& c, const HaproxyConfigOptions& o) {
  const std::string backend = o.backend.empty() ? c.haproxy.backend : o.backend;
  if (!IsHaproxyName(backend, 100)) {
    return Status::InvalidArgument("--backend: must match [A-Za-z0-9_.:-]{1,100}");
  }
  const std::vector<ReplicaConfig> servers = c.Servers();
  const std::string limit =
      o.max_delay_ms ? " max_delay_ms=" + std::to_string(*o.max_delay_ms) : "";
  std::string out = std::string("# lagwatch haproxy-config --mode ") + ModeName(o.mode) +
                    (o.source.empty() ? "" : " (from " + o.source + ")") +
                    ": regenerate rather than edit.\n"
                    "# Every configured server twice: under its lagwatch id, in the pool while "
                    "lagwatch finds it\n"
                    "# usable, and as <id>_primary, a backup used only while it is the "
                    "primary.\n";
  std::string defaults;  // the default-server line
  std::string checks;    // lines before the servers
  bool start_disabled = true;
  switch (o.mode) {
    case HaproxyMode::kPush:
      out +=
          "# lagwatch sets their state through the runtime API of each instance in "
          "haproxy.instances,\n"
          "# which needs a stats socket its user may read and write, at level admin (global "
          "section):\n";
      for (const auto& i : c.haproxy.push.instances) {
        auto s = ParseHaproxySocket(i.socket);
        out += "#   stats socket " +
               (s && !s->path.empty() ? s->path + " mode 660 level admin group lagwatch"
                                      : "ipv4@" + i.socket + " level admin") +
               "   (" + i.name + ")\n";
      }
      if (c.haproxy.push.instances.empty()) {
        out +=
            "#   stats socket /run/haproxy/admin.sock mode 660 level admin group lagwatch\n"
            "# and haproxy.instances naming it in lagwatch's configuration (none yet).\n";
      }
      out +=
          "# Servers start in maintenance until lagwatch sets them, the configured primary's "
          "backup aside.\n";
      break;
    case HaproxyMode::kAgent: {
      if (c.haproxy.agent_check.listen.empty()) {
        return Status::InvalidArgument(
            "--mode agent needs haproxy.agent_check.listen in the configuration");
      }
      auto at = CheckEndpoint(c.haproxy.agent_check.listen, o.check_address);
      if (!at.ok()) return at.status();
      out +=
          "# Each server asks lagwatch's agent-check port (haproxy.agent_check.listen) every "
          "100 ms;\n"
          "# servers start in maintenance until it answers, the configured primary's backup "
          "aside.\n";
      defaults = "    default-server agent-check agent-addr " + at->first + " agent-port " +
                 std::to_string(at->second) +
                 " agent-inter 100ms on-marked-down shutdown-sessions\n";
      break;
    }
    case HaproxyMode::kHttp: {
      start_disabled = false;
      auto at = CheckEndpoint(c.http_listen, o.check_address);
      if (!at.ok()) return at.status();
      out +=
          "# Each server is checked with GET /check/<name> on lagwatch's HTTP listener every "
          "100 ms.\n";
      std::string send =
          "    http-check send meth GET uri-lf " + std::string(kHaproxyCheckPath) + "/%[srv_name]" +
          (o.max_delay_ms ? "?max_delay_ms=" + std::to_string(*o.max_delay_ms) : "") +
          " ver HTTP/1.1 hdr Host lagwatch";
      if (c.http.web.auth() && o.authorization.empty()) {
        out +=
            "# Basic auth: replace CHANGE-ME with the base64 of user:password "
            "(printf %s user:password | base64),\n"
            "# or generate with --user NAME --password-file FILE.\n";
        send += " hdr Authorization \"Basic CHANGE-ME\"";
      } else if (c.http.web.auth()) {
        out += "# Basic auth: this holds a password; keep the file as private as lagwatch's.\n";
        send += " hdr Authorization \"" + o.authorization + "\"";
      }
      std::string tls;
      if (c.http.web.tls()) {
        if (o.ca_file.empty()) {
          out +=
              "# TLS: ca-file is the certificate lagwatch serves (self-signed); name its CA "
              "with --ca-file if one signed it.\n";
        }
        tls = " check-ssl verify required ca-file " +
              (o.ca_file.empty() ? c.http.web.cert_file : o.ca_file);
      }
      checks = "    option httpchk\n" + send + "\n    http-check expect status 200\n";
      defaults = "    default-server check addr " + at->first + " port " +
                 std::to_string(at->second) + tls +
                 " inter 100ms fall 1 rise 1 on-marked-down shutdown-sessions\n";
      break;
    }
  }
  out += "backend " + backend +
         "\n"
         "    mode tcp\n"
         "    balance leastconn\n"
         "    timeout connect 1s\n"
         "    timeout server 1h\n";
  if (o.mode != HaproxyMode::kPush) out += "    timeout check 1s\n";
  out += checks + defaults;
  auto server_line = [&](const ReplicaConfig& s, HaproxyEntry entry) {
    const std::string name = HaproxyServerName{s.endpoint.Id(), entry}.ToString();
    std::string line =
        "    server " + name + " " + HaproxyAddress(s.endpoint.host, s.endpoint.port);
    line += entry == HaproxyEntry::kReplica ? " weight 100" : " backup";
    const bool configured_primary_backup =
        entry == HaproxyEntry::kPrimary && s.endpoint == c.primary;
    if (start_disabled && !configured_primary_backup) line += " disabled";
    if (o.mode == HaproxyMode::kAgent) line += " agent-send \"" + name + limit + "\\n\"";
    return line + "\n";
  };
  for (const auto& s : servers) out += server_line(s, HaproxyEntry::kReplica);
  for (const auto& s : servers) out += server_line(s, HaproxyEntry::kPrimary);
  return out;
}

int RunHaproxyConfigCommand(const std::vector<std::string>& args) {
  std::string path, user, password_file;
  HaproxyConfigOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--config" && has_value) {
      path = args[++i];
    } else if (a == "--mode" && has_value) {
      const std::string& m = args[++i];
      if (m == "push") {
        o.mode = HaproxyMode::kPush;
      } else if (m == "http") {
        o.mode = HaproxyMode::kHttp;
      } else if (m == "agent") {
        o.mode = HaproxyMode::kAgent;
      } else {
        std::fprintf(stderr, "lagwatch haproxy-config: --mode must be push, http or agent\n%s",
                     kUsage);
        return kExitUsage;
      }
    } else if (a == "--backend" && has_value) {
      o.backend = args[++i];
    } else if (a == "--check-address" && has_value) {
      o.check_address = args[++i];
    } else if (a == "--ca-file" && has_value) {
      o.ca_file = args[++i];
    } else if (a == "--user" && has_value) {
      user = args[++i];
    } else if (a == "--password-file" && has_value) {
      password_file = args[++i];
    } else if (a == "--max-delay-ms" && has_value) {
      auto v = ParseInt<int64_t>(args[++i]);
      if (!v || *v < 0 || *v > 86'400'000) {
        std::fprintf(stderr, "lagwatch haproxy-config: --max-delay-ms must be 0..86400000\n");
        return kExitUsage;
      }
      o.max_delay_ms = *v;
    } else {
      std::fputs(kUsage, stderr);
      return kExitUsage;
    }
  }
  if (path.empty()) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  if (user.empty() != password_file.empty() || user.find(':') != std::string::npos) {
    std::fprintf(stderr,
                 "lagwatch haproxy-config: --user and --password-file go together (a user name "
                 "without ':')\n");
    return kExitUsage;
  }
  if (!password_file.empty()) {
    Status st = CheckSecretFile("--password-file", password_file, InsecureFiles::kRefuse);
    auto password =
        st.ok() ? ReadSecretLine("--password-file", password_file) : Result<std::string>(st);
    if (!password.ok()) {
      std::fprintf(stderr, "lagwatch haproxy-config: %s\n", password.status().message().c_str());
      return kExitUsage;
    }
    o.authorization = BasicAuthorization(user, std::move(password.value()));
  }
  if (o.max_delay_ms && o.mode == HaproxyMode::kPush) {
    std::fprintf(stderr,
                 "lagwatch haproxy-config: --max-delay-ms is for pull (http, agent); push uses "
                 "each tier's limit\n");
    return kExitUsage;
  }
  auto config = LoadConfig(path);
  if (!config.ok()) {
    std::fprintf(stderr, "lagwatch haproxy-config: invalid config %s: %s\n", path.c_str(),
                 config.status().message().c_str());
    return kExitUsage;
  }
  o.source = path;
  auto text = HaproxyBackendConfig(*config, o);
  if (!text.ok()) {
    std::fprintf(stderr, "lagwatch haproxy-config: %s\n", text.status().message().c_str());
    return kExitUsage;
  }
  std::fputs(text->c_str(), stdout);
  return 0;
}

}  // namespace lagwatch
