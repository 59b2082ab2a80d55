#include "cli/status_cmd.h"

#include <cstdio>
#include <string_view>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include "base/contract.h"
#include "base/http_client.h"
#include "base/secret_file.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

constexpr int kExitUnhealthy = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

constexpr char kUsage[] =
    "usage: lagwatch status [--url http[s]://HOST:PORT | --config FILE] [--cacert FILE]\n"
    "                       [--user NAME --password-file FILE]\n";

// lagwatch status gives up on an agent that has not answered within this time.
constexpr Millis kStatusTimeout{3000};

// A field as text for the terminal (control bytes escaped), or "-".
std::string Field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  return EscapeControl(it->is_string() ? it->get<std::string>() : it->dump());
}

// "p99_ms" of window `w`, or "-".
std::string Window(const nlohmann::json& r, const char* w, const char* key, bool percent) {
  auto wins = r.find("windows");
  if (wins == r.end() || !wins->contains(w) || !(*wins)[w].contains(key) ||
      !(*wins)[w][key].is_number()) {
    return "-";
  }
  char out[32];
  double v = (*wins)[w][key].get<double>();
  if (percent) {
    std::snprintf(out, sizeof out, "%.2f%%", 100 * v);
  } else {
    std::snprintf(out, sizeof out, "%.0f", v);
  }
  return out;
}

// "MariaDB 10.11.19" from the replica's "server" object (its version up to the first '-'), or "-".
std::string ServerCell(const nlohmann::json& r) {
  auto s = r.find("server");
  if (s == r.end() || !s->is_object()) return "-";
  auto flavor = s->find("flavor");
  auto version = s->find("version");
  if (flavor == s->end() || !flavor->is_string() || version == s->end() || !version->is_string()) {
    return "-";
  }
  const std::string v = version->get<std::string>();
  return EscapeControl(flavor->get<std::string>() + " " +
                       v.substr(0, std::min<size_t>(v.find('-'), 24)));
}

}  // namespace

std::string BasicAuthorization(const std::string& user, std::string password) {
  std::string plain = user + ":" + password;
  std::string out(4 * ((plain.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(plain.data()),
                          static_cast<int>(plain.size()));
  out.resize(static_cast<size_t>(n));
  std::string header = "Basic " + out;
  OPENSSL_cleanse(out.data(), out.size());
  OPENSSL_cleanse(plain.data(), plain.size());
  OPENSSL_cleanse(password.data(), password.size());
  return header;
}

std::string RenderPrimaryLine(const std::string& primary_json) {
  auto doc = nlohmann::json::parse(primary_json, nullptr, /*allow_exceptions=*/false);
  auto str = [&](const nlohmann::json& j, const char* key) -> std::optional<std::string> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return EscapeControl(it->get<std::string>().substr(0, 256));
  };
  if (!doc.is_object()) return "";
  auto primary = str(doc, contract::primary_field::kPrimary);
  auto topology = doc.find("topology");
  if (!primary || topology == doc.end() || !topology->is_object()) return "";
  auto state = str(*topology, "state");
  auto configured = str(*topology, "configured_primary");
  auto changes = topology->find("changes");
  if (!state || !configured || changes == topology->end() || !changes->is_number_unsigned()) {
    return "";
  }
  const uint64_t moves = changes->get<uint64_t>();
  std::string out = "primary " + *primary + " (" +
                    str(doc, contract::primary_field::kState).value_or("-") + "; topology " +
                    *state;
  if (*state == "ambiguous") out += ": SEVERAL WRITABLE SERVERS, NO REPLICA HEALTHY";
  if (moves > 0 || *configured != *primary) {
    out += "; moved " + std::to_string(moves) + (moves == 1 ? " time" : " times") +
           " since start, configured " + *configured;
  }
  return out + ")\n";
}

// Never throws: whatever the JSON holds, a replica is healthy only if its "healthy" is 1.
std::string RenderStatusTable(const std::string& replicas_json, int* unhealthy) {
  auto doc = nlohmann::json::parse(replicas_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("replicas") || !doc["replicas"].is_array()) {
    *unhealthy = -1;
    return "";
  }
  *unhealthy = 0;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %-8s %-16s %-8s %-14s %9s %9s  %-12s %s\n", "REPLICA",
                "TIER", "STATE", "HEALTHY", "DELAY ms", "P99 1m", "SLAR 5m", "POSITIONS", "SERVER");
  out += line;
  for (const auto& r : doc["replicas"]) {
    if (!r.is_object()) {
      *unhealthy = -1;
      return "";
    }
    namespace f = contract::field;
    auto h = r.find(f::kHealthy);
    const bool healthy = h != r.end() && h->is_number_integer() && h->get<int64_t>() == 1;
    if (!healthy) ++*unhealthy;
    std::string delay = r.contains(f::kDelayMs) && r[f::kDelayMs].is_number()
                            ? Field(r, f::kDelayLowerMs) + ".." + Field(r, f::kDelayMs)
                            : "-";
    std::snprintf(line, sizeof line, "%-24s %-8s %-16s %-8s %-14s %9s %9s  %-12s %s\n",
                  Field(r, "replica").c_str(), Field(r, f::kTier).c_str(),
                  Field(r, f::kState).c_str(), healthy ? "yes" : "NO", delay.c_str(),
                  Window(r, "1m", "p99_ms", false).c_str(), Window(r, "5m", "slar", true).c_str(),
                  Field(r, "positions").c_str(), ServerCell(r).c_str());
    out += line;
    if (r.contains("last_error") && r["last_error"].is_string() && !healthy) {
      out += "    last error: " + Field(r, "last_error") + "\n";
    }
  }
  return out;
}

namespace {

// The command line, as given.
struct StatusFlags {
  std::string url, config_path, cacert, user, password_file;
};

// Reads `--flag value` pairs; nullopt (after printing the usage) on anything else.
std::optional<StatusFlags> ParseStatusFlags(const std::vector<std::string>& args) {
  StatusFlags f;
  for (size_t i = 0; i < args.size(); i += 2) {
    std::string* value = args[i] == "--url"             ? &f.url
                         : args[i] == "--config"        ? &f.config_path
                         : args[i] == "--cacert"        ? &f.cacert
                         : args[i] == "--user"          ? &f.user
                         : args[i] == "--password-file" ? &f.password_file
                                                        : nullptr;
    if (value == nullptr || i + 1 >= args.size() || !value->empty() || args[i + 1].empty()) {
      std::fputs(kUsage, stderr);
      return std::nullopt;
    }
    *value = args[i + 1];
  }
  if ((!f.url.empty() && !f.config_path.empty()) || f.user.empty() != f.password_file.empty()) {
    std::fputs(kUsage, stderr);
    return std::nullopt;
  }
  return f;
}

// Where to ask and how to check the answer's certificate: from --url, or from the agent's
// configuration (--config), or the default listener. Sets `url` to what was asked. False (after
// saying why) when the flags do not make a valid target.
bool ResolveTarget(const StatusFlags& f, const ListenerFromConfig& from_config, HttpTarget* target,
                   std::string* url) {
  *url = f.url;
  target->cacert = f.cacert;
  if (!f.config_path.empty()) {
    auto listener = from_config(f.config_path);
    if (!listener.ok()) {
      std::fprintf(stderr, "lagwatch status: invalid config %s: %s\n", f.config_path.c_str(),
                   listener.status().message().c_str());
      return false;
    }
    *url = listener->url;
    if (!listener->cert_file.empty() && f.cacert.empty()) target->pinned_cert = listener->cert_file;
  } else if (url->empty()) {
    *url = "http://127.0.0.1:9877";
  }
  const std::string_view scheme = url->rfind("https://", 0) == 0  ? "https://"
                                  : url->rfind("http://", 0) == 0 ? "http://"
                                                                  : "";
  std::string_view rest = std::string_view(*url).substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  auto host_port = scheme.empty() ? std::nullopt : ParseListenAddress(rest);
  if (!host_port) {
    std::fprintf(stderr, "lagwatch status: not an http[s]://HOST:PORT URL: %s\n", url->c_str());
    return false;
  }
  target->tls = scheme == "https://";
  target->host = host_port->host;
  target->port = std::to_string(host_port->port);
  if (target->host == "0.0.0.0") target->host = "127.0.0.1";
  if (target->host == "::") target->host = "::1";
  if (!target->tls && !f.cacert.empty()) {
    std::fprintf(stderr, "lagwatch status: --cacert needs an https agent (%s)\n", url->c_str());
    return false;
  }
  return true;
}

// "Basic ..." from --user and --password-file, or "" without them; nullopt (after saying why)
// when the password file is refused.
std::optional<std::string> Authorization(const StatusFlags& f) {
  if (f.password_file.empty()) return std::string();
  Status st = CheckSecretFile("--password-file", f.password_file, InsecureFiles::kRefuse);
  auto password =
      st.ok() ? ReadSecretLine("--password-file", f.password_file) : Result<std::string>(st);
  if (!password.ok()) {
    std::fprintf(stderr, "lagwatch status: %s\n", password.status().message().c_str());
    return std::nullopt;
  }
  return BasicAuthorization(f.user, std::move(password.value()));
}

// Prints the primary's line (when `primary` answered) and the table for a 200 answer; the exit
// code.
int Report(const HttpReply& reply, const HttpReply& primary, const std::string& url,
           bool sent_credentials) {
  if (reply.code != 200) {
    std::string why = reply.code == 0 ? reply.error : "HTTP " + std::to_string(reply.code);
    if (reply.code == 401) {
      why += !sent_credentials ? ": the agent wants basic auth (--user NAME --password-file FILE)"
                               : ": the agent refused the credentials";
    }
    std::fprintf(stderr, "lagwatch status: no answer from %s/api/v1/replicas: %s\n", url.c_str(),
                 why.c_str());
    return kExitUnreachable;
  }
  int unhealthy = 0;
  std::string table = RenderStatusTable(reply.body, &unhealthy);
  if (unhealthy < 0) {
    std::fprintf(stderr, "lagwatch status: %s answered with something that is not the API\n",
                 url.c_str());
    return kExitUnreachable;
  }
  if (primary.code == 200) std::fputs(RenderPrimaryLine(primary.body).c_str(), stdout);
  std::fputs(table.c_str(), stdout);
  return unhealthy > 0 ? kExitUnhealthy : 0;
}

}  // namespace

int RunStatusCommand(const std::vector<std::string>& args, const ListenerFromConfig& from_config) {
  auto flags = ParseStatusFlags(args);
  if (!flags) return kExitUsage;
  HttpTarget target;
  std::string url;
  if (!ResolveTarget(*flags, from_config, &target, &url)) return kExitUsage;
  HttpRequestOptions request;
  request.path = "/api/v1/replicas";
  request.timeout = kStatusTimeout;
  auto authorization = Authorization(*flags);
  if (!authorization) return kExitUsage;
  request.authorization = std::move(*authorization);
  const bool sent_credentials = !request.authorization.empty();
  HttpReply reply = HttpGet(target, request);
  HttpReply primary;
  if (reply.code == 200) {
    request.path = "/api/v1/primary";
    primary = HttpGet(target, request);
  }
  OPENSSL_cleanse(request.authorization.data(), request.authorization.size());
  return Report(reply, primary, url, sent_credentials);
}

}  // namespace lagwatch
