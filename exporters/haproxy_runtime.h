// Push (docs/operations.md, "HAProxy"): lagwatch drives each configured HAProxy's runtime API
// (its stats socket, `level admin`) so a replica leaves the pool the moment its verdict changes,
// without waiting for a check interval.
//
// The client speaks HAProxy's non-interactive mode: one connection per command line (commands
// chained with "; "), HAProxy answers and closes. Every exchange has a deadline, and every reply is
// read strictly and capped in size: a malformed, hostile, huge or slow reply is an error Status
// (counted and logged, rate-limited), never a crash. Commands are built only from names that
// pass IsHaproxyName (exporters/haproxy_verdict.h).
//
// The pusher runs one thread per instance, so an unreachable or hung socket delays no other. Each
// thread sends the commands a verdict change calls for at once (the verdict board wakes it), and
// every resync_ms reads `show info` and `show servers state <backend>` and sets again whatever
// differs from lagwatch's verdicts: that re-sends every verdict after HAProxy restarts or reloads
// (it forgets runtime state) and undoes a change made by hand. A failed exchange is retried with a
// capped exponential backoff; meanwhile HAProxy keeps the last state it was given.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "exporters/haproxy_verdict.h"

namespace lagwatch {

class VerdictBoard;
struct HaproxyMetrics;

// Where a runtime API listens: a unix socket (an absolute path) or TCP "host:port".
struct HaproxySocket {
  std::string path;  // the unix socket; empty for TCP
  std::string host;  // TCP: an address or a name (resolved by the system resolver)
  int port = 0;
  std::string ToString() const;
};

// "/run/haproxy/admin.sock" (absolute, at most 107 bytes, no control characters) or "host:port"
// ("127.0.0.1:9999", "[::1]:9999"); nullopt otherwise.
std::optional<HaproxySocket> ParseHaproxySocket(std::string_view text);

// Replies are cut off (and refused) past this size: `show servers state` of a 1,000-server backend
// is about 150 KB.
inline constexpr size_t kHaproxyMaxReplyBytes = 4 << 20;

// Sends `command` and a newline to `socket` and returns all HAProxy wrote before closing. Errors:
// Unavailable (cannot connect: refused, no such socket, permission denied; or the connection
// failed), DeadlineExceeded (`deadline` passed first), DataError (more than `max_reply_bytes`).
Result<std::string> HaproxyExchange(const HaproxySocket& socket, std::string_view command,
                                    MonoTime deadline,
                                    size_t max_reply_bytes = kHaproxyMaxReplyBytes);

// One server of `show servers state <backend>` (format version 1; fields found by the header line).
struct HaproxyServerState {
  std::string name;
  int op_state = 0;     // srv_op_state: 0 stopped, 1 starting, 2 running, 3 stopping
  int admin_state = 0;  // srv_admin_state: bits, 0x01 forced maintenance, 0x08 forced drain
  int weight = 0;       // srv_uweight: the weight in use, 0..256
  bool forced_maint() const { return (admin_state & 0x01) != 0; }
  bool forced_drain() const { return (admin_state & 0x08) != 0; }
};
// The servers of `backend`. DataError for anything but version 1 with a header naming be_name,
// srv_name, srv_op_state, srv_admin_state and srv_uweight, then one line per server with as many
// fields as the header, in range, all of `backend`, no name twice; ServerError for HAProxy's own
// refusals ("Can't find backend.", "Permission denied", "Unknown command").
Result<std::vector<HaproxyServerState>> ParseServersState(std::string_view reply,
                                                          std::string_view backend);

// The process that answered `show info`: a new Pid, or an uptime that went back, is a restart or
// a reload.
struct HaproxyProcess {
  int64_t pid = 0;
  int64_t uptime_sec = 0;
};
// DataError unless every line is "Name: value" and Pid and Uptime_sec are integers.
Result<HaproxyProcess> ParseShowInfo(std::string_view reply);

// The commands that take `current` to `answer` (nothing when it is there already): up is
// `state ready` and, for a normal entry, `weight <RuntimeWeight>`; drain is `state drain`; down
// and maint are `state maint` and `shutdown sessions server` (a pooled connection would keep
// reading stale data otherwise). REQUIRES: IsHaproxyName(backend) and IsHaproxyName(current.name).
std::vector<std::string> HaproxyCommandsFor(std::string_view backend,
                                            const HaproxyServerState& current,
                                            const HaproxyAnswer& answer, HaproxyEntry entry);
// `current` as HAProxy shows it once `answer`'s commands are applied.
void ApplyToState(const HaproxyAnswer& answer, HaproxyEntry entry, HaproxyServerState& current);

// One HAProxy to drive: `haproxy.instances[]` of the configuration.
struct HaproxyInstance {
  std::string name;     // for logs and the `haproxy` label of the metrics
  std::string socket;   // ParseHaproxySocket's text
  std::string backend;  // the backend whose servers are lagwatch's
  bool operator==(const HaproxyInstance&) const = default;
};

struct HaproxyPushOptions {
  std::vector<HaproxyInstance> instances;
  int resync_ms = 1000;       // compare with HAProxy and set again what differs
  int timeout_ms = 500;       // each exchange's deadline
  int ttl_ms = 1000;          // a record's life (redis.ttl_ms): older is not usable
  int max_backoff_ms = 2000;  // retries after a failure: 100 ms, doubling up to this
  bool operator==(const HaproxyPushOptions&) const = default;
};

// Thread-safe: Start and Stop from the owner's thread.
class HaproxyPusher {
 public:
  // `board` and `metrics` must outlive the pusher. REQUIRES: every instance's socket parses and
  // its name and backend pass IsHaproxyName (agent/config validates them).
  HaproxyPusher(HaproxyPushOptions options, const VerdictBoard* board, HaproxyMetrics* metrics,
                const Clock& clock = SystemClock::Get());
  ~HaproxyPusher();
  HaproxyPusher(const HaproxyPusher&) = delete;
  HaproxyPusher& operator=(const HaproxyPusher&) = delete;

  // One thread per instance; harmless with none.
  void Start();
  // Stops and joins them (each within one exchange's deadline).
  void Stop();

 private:
  class Instance;
  std::vector<std::unique_ptr<Instance>> instances_;
};

}  // namespace lagwatch
