#include "exporters/haproxy_http_check.h"

#include "base/strings.h"
#include "exporters/metrics.h"

namespace lagwatch {
namespace {

constexpr char kText[] = "text/plain; charset=utf-8";

// The `name=<backend>/<server>` field of X-Haproxy-Server-State ("UP 2/3; name=bck/srv2;
// node=lb1; weight=1/2; ..."): the server part.
std::optional<std::string_view> ServerFromState(std::string_view state) {
  while (!state.empty()) {
    const size_t semi = state.find(';');
    const std::string_view field = Trim(state.substr(0, semi));
    if (field.starts_with("name=")) {
      const std::string_view value = field.substr(5);
      const size_t slash = value.find('/');
      if (slash == std::string_view::npos) return std::nullopt;
      return value.substr(slash + 1);
    }
    if (semi == std::string_view::npos) break;
    state.remove_prefix(semi + 1);
  }
  return std::nullopt;
}

}  // namespace

Result<CheckTarget> ParseHttpCheck(const HttpRequest& request) {
  std::string_view rest = request.path;
  if (!rest.starts_with(kHaproxyCheckPath)) return Status::InvalidArgument("not a check path");
  rest.remove_prefix(kHaproxyCheckPath.size());
  std::string_view name;
  if (rest.size() > 1 && rest.front() == '/') {
    name = rest.substr(1);
  } else if (!rest.empty() && rest != "/") {
    return Status::InvalidArgument("not a check path");
  } else if (const std::string* state = request.Header("X-Haproxy-Server-State")) {
    auto server = ServerFromState(*state);
    if (!server)
      return Status::InvalidArgument("X-Haproxy-Server-State has no name=<backend>/<server>");
    name = *server;
  } else {
    return Status::InvalidArgument(
        "no server: GET /check/<name>, or X-Haproxy-Server-State (http-check send-state)");
  }
  auto server = ParseHaproxyServerName(name);
  if (!server) return Status::InvalidArgument("not a server name");
  CheckTarget t{std::move(*server), std::nullopt};
  std::string_view query = request.query;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    if (param.starts_with("max_delay_ms=")) {
      auto limit = ParseInt<int64_t>(param.substr(13));
      if (!limit || *limit < 0 || *limit > 86'400'000) {
        return Status::InvalidArgument("max_delay_ms must be an integer in 0..86400000");
      }
      t.max_delay_ms = *limit;
    } else if (!param.empty()) {
      return Status::InvalidArgument("unknown parameter (only max_delay_ms)");
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return t;
}

HttpResponse HaproxyHttpCheck(const HttpRequest& request, const HaproxyAnswerFn& answer,
                              HaproxyMetrics* metrics) {
  auto target = ParseHttpCheck(request);
  if (!target.ok()) {
    metrics->Check("http", "malformed").Increment();
    return {400, kText, "bad check: " + target.status().message() + "\n"};
  }
  std::optional<HaproxyAnswer> a = answer(*target);
  if (!a) {
    metrics->Check("http", "unknown").Increment();
    return {404,
            kText,
            "unknown server " + target->server.ToString() + "\n",
            {{"X-Lagwatch-Verdict", "unknown"}}};
  }
  metrics->Check("http", VerdictName(a->verdict)).Increment();
  HttpResponse r{
      a->HttpStatus(),
      kText,
      a->HttpBody(),
      {{"X-Lagwatch-Verdict", a->usable() && a->HttpStatus() == 200 ? "usable" : a->reason}}};
  if (a->delay_ms) r.headers.emplace_back("X-Lagwatch-Delay-Ms", std::to_string(*a->delay_ms));
  return r;
}

}  // namespace lagwatch
