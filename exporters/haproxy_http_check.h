// Pull by HTTP check (docs/operations.md, "HAProxy"; docs/api.md): `GET /check/<name>` on the
// agent's HTTP listener, behind its TLS and basic auth like every API route, answered from memory
// (the verdict board): 200 for a server in the pool, 503 otherwise, the verdict in a one-line body
// and in headers (X-Lagwatch-Verdict: usable or the reason; X-Lagwatch-Delay-Ms when known).
//
// The server is named in the path (HAProxy 2.6: `http-check send uri-lf /check/%[srv_name]`),
// or, for a fixed URI, by `http-check send-state`'s header, X-Haproxy-Server-State: "...;
// name=<backend>/<server>; ...". `?max_delay_ms=N` judges against a pool's own limit.
//
// Thread-safety: a pure function of the request and what `answer` says.
#pragma once

#include <string_view>

#include "base/status.h"
#include "exporters/haproxy_verdict.h"
#include "exporters/http_server.h"

namespace lagwatch {

struct HaproxyMetrics;

// The route's prefix.
inline constexpr std::string_view kHaproxyCheckPath = "/check";

// What `request` asks: the server from the path below kHaproxyCheckPath, else from
// X-Haproxy-Server-State's `name=`; the limit from the query's `max_delay_ms` (0..86400000).
// InvalidArgument saying what is wrong otherwise (an unknown query parameter included).
Result<CheckTarget> ParseHttpCheck(const HttpRequest& request);

// The response to `request`: 200/503 with the answer, 404 for a server lagwatch does not know,
// 400 for a malformed request. Counted in metrics->checks (protocol "http").
HttpResponse HaproxyHttpCheck(const HttpRequest& request, const HaproxyAnswerFn& answer,
                              HaproxyMetrics* metrics);

}  // namespace lagwatch
