#include "cli/status_cmd.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include "base/contract.h"
#include "base/exit_code.h"
#include "base/http_client.h"
#include "base/secret_file.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

constexpr int kExitUnhealthy = 1;
constexpr int kExitUnreachable = 3;

constexpr char kUsage[] =
    "usage: lagwatch status [--url http[s]://HOST:PORT | --config FILE | --all [--dir DIR]]\n"
    "                       [--cacert FILE] [--user NAME --password-file FILE]\n";

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

std::string RenderClusterLine(const std::string& replicas_json) {
  auto doc = nlohmann::json::parse(replicas_json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return "";
  auto cluster = doc.find(contract::field::kCluster);
  if (cluster == doc.end() || !cluster->is_string()) return "";
  return "cluster " + EscapeControl(cluster->get<std::string>().substr(0, 256)) + "\n";
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
  std::string url, config_path, cacert, user, password_file, dir;
  bool all = false;
};

// Reads `--flag value` pairs and --all; nullopt (after printing the usage) on anything else.
std::optional<StatusFlags> ParseStatusFlags(const std::vector<std::string>& args) {
  StatusFlags f;
  size_t i = 0;
  while (i < args.size()) {
    if (args[i] == "--all" && !f.all) {
      f.all = true;  // the one flag without a value
      ++i;
      continue;
    }
    std::string* value = args[i] == "--url"             ? &f.url
                         : args[i] == "--config"        ? &f.config_path
                         : args[i] == "--cacert"        ? &f.cacert
                         : args[i] == "--user"          ? &f.user
                         : args[i] == "--password-file" ? &f.password_file
                         : args[i] == "--dir"           ? &f.dir
                                                        : nullptr;
    if (value == nullptr || i + 1 >= args.size() || !value->empty() || args[i + 1].empty()) {
      std::fputs(kUsage, stderr);
      return std::nullopt;
    }
    *value = args[i + 1];
    i += 2;
  }
  if ((!f.url.empty() && !f.config_path.empty()) || f.user.empty() != f.password_file.empty() ||
      (f.all && (!f.url.empty() || !f.config_path.empty())) || (!f.all && !f.dir.empty())) {
    std::fputs(kUsage, stderr);
    return std::nullopt;
  }
  return f;
}

// Makes `url` (http[s]://HOST:PORT) the target's address; false (after saying why) if it is not
// one, or has no use for --cacert.
bool SetAddress(const std::string& url, const std::string& cacert, HttpTarget* target) {
  const std::string_view scheme = url.rfind("https://", 0) == 0  ? "https://"
                                  : url.rfind("http://", 0) == 0 ? "http://"
                                                                 : "";
  std::string_view rest = std::string_view(url).substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  auto host_port = scheme.empty() ? std::nullopt : ParseListenAddress(rest);
  if (!host_port) {
    std::fprintf(stderr, "lagwatch status: not an http[s]://HOST:PORT URL: %s\n", url.c_str());
    return false;
  }
  target->tls = scheme == "https://";
  target->host = host_port->host;
  target->port = std::to_string(host_port->port);
  if (target->host == "0.0.0.0") target->host = "127.0.0.1";
  if (target->host == "::") target->host = "::1";
  if (!target->tls && !cacert.empty()) {
    std::fprintf(stderr, "lagwatch status: --cacert needs an https agent (%s)\n", url.c_str());
    return false;
  }
  return true;
}

// The target of an agent whose configuration gave `listener`: its scheme, and without --cacert
// its own certificate pinned.
HttpTarget TargetOf(const AgentListener& listener, const std::string& cacert) {
  HttpTarget target;
  target.cacert = cacert;
  if (!listener.cert_file.empty() && cacert.empty()) target.pinned_cert = listener.cert_file;
  return target;
}

// Where to ask and how to check the answer's certificate: from --url, or from the agent's
// configuration (--config), or the default listener. Sets `url` to what was asked. False (after
// saying why) when the flags do not make a valid target.
bool ResolveTarget(const StatusFlags& f, const ListenerFromConfig& from_config, HttpTarget* target,
                   std::string* url) {
  *url = f.url;
  target->cacert = f.cacert;
  if (!f.config_path.empty()) {
    auto listener = from_config(f.config_path, std::nullopt);
    if (!listener.ok()) {
      std::fprintf(stderr, "lagwatch status: invalid config %s: %s\n", f.config_path.c_str(),
                   listener.status().message().c_str());
      return false;
    }
    *url = listener->url;
    *target = TargetOf(*listener, f.cacert);
  } else if (url->empty()) {
    *url = "http://127.0.0.1:9877";
  }
  return SetAddress(*url, f.cacert, target);
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

// What an agent answered: its replicas, and its primary when the replicas were answered.
struct Answers {
  HttpReply replicas;
  HttpReply primary;
};

Answers Ask(const HttpTarget& target, const std::string& authorization) {
  HttpRequestOptions request;
  request.path = "/api/v1/replicas";
  request.timeout = kStatusTimeout;
  request.authorization = authorization;
  Answers a;
  a.replicas = HttpGet(target, request);
  if (a.replicas.code == 200) {
    request.path = "/api/v1/primary";
    a.primary = HttpGet(target, request);
  }
  OPENSSL_cleanse(request.authorization.data(), request.authorization.size());
  return a;
}

// Why the replicas were not answered (REQUIRES: their code is not 200).
std::string WhyNot(const HttpReply& reply, bool sent_credentials) {
  std::string why = reply.code == 0 ? reply.error : "HTTP " + std::to_string(reply.code);
  if (reply.code == 401) {
    why += !sent_credentials ? ": the agent wants basic auth (--user NAME --password-file FILE)"
                             : ": the agent refused the credentials";
  }
  return why;
}

// The cluster, primary and table of a 200 answer; sets *unhealthy as RenderStatusTable does
// (-1, and "", when the answer is not the API).
std::string RenderAnswers(const Answers& a, int* unhealthy) {
  std::string table = RenderStatusTable(a.replicas.body, unhealthy);
  if (*unhealthy < 0) return "";
  return RenderClusterLine(a.replicas.body) +
         (a.primary.code == 200 ? RenderPrimaryLine(a.primary.body) : "") + table;
}

// Prints what the agent at `url` answered; the exit code.
int Report(const Answers& a, const std::string& url, bool sent_credentials) {
  if (a.replicas.code != 200) {
    std::fprintf(stderr, "lagwatch status: no answer from %s/api/v1/replicas: %s\n", url.c_str(),
                 WhyNot(a.replicas, sent_credentials).c_str());
    return kExitUnreachable;
  }
  int unhealthy = 0;
  std::string text = RenderAnswers(a, &unhealthy);
  if (unhealthy < 0) {
    std::fprintf(stderr, "lagwatch status: %s answered with something that is not the API\n",
                 url.c_str());
    return kExitUnreachable;
  }
  std::fputs(text.c_str(), stdout);
  return unhealthy > 0 ? kExitUnhealthy : 0;
}

// What a file of the configuration directory is, at a glance.
enum class FileKind { kConfig, kOther, kUnreadable };

// A lagwatch configuration is a JSON object (comments allowed) with "primary" and "replicas": the
// keys every one must have. Whether it is a valid one is for the configuration's reader to say.
FileKind Classify(const std::filesystem::path& path, std::string* why) {
  std::ifstream in(path);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    *why = "cannot read it";
    return FileKind::kUnreadable;
  }
  auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false,
                                   /*ignore_comments=*/true);
  return doc.is_object() && doc.contains("primary") && doc.contains("replicas") ? FileKind::kConfig
                                                                                : FileKind::kOther;
}

// `lagwatch status --all`: one block per configuration in the directory.
int RunAll(const StatusFlags& f, const ListenerFromConfig& from_config) {
  const std::filesystem::path dir = f.dir.empty() ? kDefaultConfigDir : f.dir;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json" && !it->is_directory(ec)) files.push_back(it->path());
  }
  if (ec) {
    std::fprintf(stderr, "lagwatch status: cannot list %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return kExitUsage;
  }
  std::sort(files.begin(), files.end());
  auto authorization = Authorization(f);
  if (!authorization) return kExitUsage;
  const bool sent_credentials = !authorization->empty();

  int agents = 0, down = 0, unhealthy_agents = 0;
  for (const auto& path : files) {
    std::string why;
    const FileKind kind = Classify(path, &why);
    if (kind == FileKind::kOther) continue;
    ++agents;
    std::string out = (agents > 1 ? "\n== " : "== ") + EscapeControl(path.string());
    // lagwatch@NAME reads NAME.json with LAGWATCH_INSTANCE=NAME; lagwatch.service, lagwatch.json.
    const std::string stem = path.stem().string();
    auto listener =
        kind == FileKind::kConfig
            ? from_config(path.string(),
                          stem == "lagwatch" ? std::nullopt : std::optional<std::string>(stem))
            : Result<AgentListener>(Status::InvalidArgument(why));
    HttpTarget target;
    if (listener.ok()) target = TargetOf(*listener, f.cacert);
    if (!listener.ok() || !SetAddress(listener->url, f.cacert, &target)) {
      ++down;
      out += ": NOT LOADED: " +
             EscapeControl(listener.ok() ? "its listener cannot be asked"
                                         : listener.status().message()) +
             "\n";
      std::fputs(out.c_str(), stdout);
      continue;
    }
    out += " (" + listener->url + ")\n";
    const Answers a = Ask(target, *authorization);
    int unhealthy = -1;
    const std::string text = a.replicas.code == 200 ? RenderAnswers(a, &unhealthy) : "";
    if (unhealthy < 0) {
      ++down;
      out += "cluster " + EscapeControl(listener->cluster) + ": NOT ANSWERING: " +
             (a.replicas.code == 200 ? std::string("not the API")
                                     : EscapeControl(WhyNot(a.replicas, sent_credentials))) +
             "\n";
    } else {
      if (unhealthy > 0) ++unhealthy_agents;
      out += text;
    }
    std::fputs(out.c_str(), stdout);
  }
  OPENSSL_cleanse(authorization->data(), authorization->size());
  if (agents == 0) {
    std::fprintf(stderr, "lagwatch status: no lagwatch configuration in %s\n", dir.c_str());
    return kExitUsage;
  }
  if (down > 0) return kExitUnreachable;
  return unhealthy_agents > 0 ? kExitUnhealthy : 0;
}

}  // namespace

int RunStatusCommand(const std::vector<std::string>& args, const ListenerFromConfig& from_config) {
  auto flags = ParseStatusFlags(args);
  if (!flags) return kExitUsage;
  if (flags->all) return RunAll(*flags, from_config);
  HttpTarget target;
  std::string url;
  if (!ResolveTarget(*flags, from_config, &target, &url)) return kExitUsage;
  auto authorization = Authorization(*flags);
  if (!authorization) return kExitUsage;
  const bool sent_credentials = !authorization->empty();
  const Answers answers = Ask(target, *authorization);
  OPENSSL_cleanse(authorization->data(), authorization->size());
  return Report(answers, url, sent_credentials);
}

}  // namespace lagwatch
