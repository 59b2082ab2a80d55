#include "agent/status_cmd.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <regex>

#include <nlohmann/json.hpp>

#include "agent/config.h"

namespace lagwatch {
namespace {

constexpr int kExitUnhealthy = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

// A plain HTTP/1.1 GET with a 3 s timeout; returns the status code (0: no answer) and the body.
std::pair<int, std::string> Get(const std::string& host, const std::string& port,
                                const std::string& path) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return {0, ""};
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) return {0, ""};
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return {0, ""};
  }
  std::string resp;
  char buf[16384];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 && resp.size() < (64u << 20)) {
    resp.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  int code = 0;
  if (resp.rfind("HTTP/1.", 0) == 0 && resp.size() > 12) code = std::atoi(resp.c_str() + 9);
  size_t body = resp.find("\r\n\r\n");
  return {code, body == std::string::npos ? "" : resp.substr(body + 4)};
}

std::string Field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
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

}  // namespace

std::string RenderStatusTable(const std::string& replicas_json, int* unhealthy) {
  auto doc = nlohmann::json::parse(replicas_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("replicas") || !doc["replicas"].is_array()) {
    *unhealthy = -1;
    return "";
  }
  *unhealthy = 0;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %-8s %-16s %-8s %-14s %9s %9s\n", "REPLICA", "TIER",
                "STATE", "HEALTHY", "DELAY ms", "P99 1m", "SLAR 5m");
  out += line;
  for (const auto& r : doc["replicas"]) {
    bool healthy = r.value("healthy", 0) == 1;
    if (!healthy) ++*unhealthy;
    std::string delay = r.contains("delay_ms") && r["delay_ms"].is_number()
                            ? Field(r, "delay_lower_ms") + ".." + Field(r, "delay_ms")
                            : "-";
    std::snprintf(line, sizeof line, "%-24s %-8s %-16s %-8s %-14s %9s %9s\n",
                  Field(r, "replica").c_str(), Field(r, "tier").c_str(), Field(r, "state").c_str(),
                  healthy ? "yes" : "NO", delay.c_str(), Window(r, "1m", "p99_ms", false).c_str(),
                  Window(r, "5m", "slar", true).c_str());
    out += line;
    if (r.contains("last_error") && r["last_error"].is_string() && !healthy) {
      out += "    last error: " + r["last_error"].get<std::string>() + "\n";
    }
  }
  return out;
}

int RunStatusCommand(const std::vector<std::string>& args) {
  std::string url = "http://127.0.0.1:9877";
  if (args.size() == 2 && args[0] == "--url") {
    url = args[1];
  } else if (args.size() == 2 && args[0] == "--config") {
    auto config = LoadConfig(args[1]);
    if (!config.ok()) {
      std::fprintf(stderr, "lagwatch status: invalid config %s: %s\n", args[1].c_str(),
                   config.status().message().c_str());
      return kExitUsage;
    }
    url = "http://" + config->http_listen;
  } else if (!args.empty()) {
    std::fprintf(stderr, "usage: lagwatch status [--url http://HOST:PORT | --config FILE]\n");
    return kExitUsage;
  }
  static const std::regex url_re(R"(http://(\[[0-9a-fA-F:]+\]|[^:/\[\]]+):([0-9]{1,5})/?)");
  std::smatch m;
  if (!std::regex_match(url, m, url_re)) {
    std::fprintf(stderr, "lagwatch status: not an http://HOST:PORT URL: %s\n", url.c_str());
    return kExitUsage;
  }
  std::string host = m[1].str();
  if (host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host == "0.0.0.0") host = "127.0.0.1";
  auto [code, body] = Get(host, m[2].str(), "/api/v1/replicas");
  if (code != 200) {
    std::fprintf(stderr, "lagwatch status: no answer from %s/api/v1/replicas (HTTP %d)\n",
                 url.c_str(), code);
    return kExitUnreachable;
  }
  int unhealthy = 0;
  std::string table = RenderStatusTable(body, &unhealthy);
  if (unhealthy < 0) {
    std::fprintf(stderr, "lagwatch status: %s answered with something that is not the API\n",
                 url.c_str());
    return kExitUnreachable;
  }
  std::fputs(table.c_str(), stdout);
  return unhealthy > 0 ? kExitUnhealthy : 0;
}

}  // namespace lagwatch
