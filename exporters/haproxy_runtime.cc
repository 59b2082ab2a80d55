#include "exporters/haproxy_runtime.h"

#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include "base/log.h"
#include "base/net_stream.h"
#include "base/strings.h"
#include "base/worker.h"
#include "exporters/metrics.h"
#include "exporters/verdict_board.h"

namespace lagwatch {
namespace {

// A command line HAProxy reads whole (its buffer is tune.bufsize, 16 KB by default).
constexpr size_t kMaxLineBytes = 8000;
// Replies to `set server` chains are empty lines; anything longer is refused before it is read.
constexpr size_t kMaxSetReplyBytes = 64 << 10;
constexpr size_t kMaxServers = 100'000;
constexpr Millis kFirstBackoff(100);

// A closed descriptor on every path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string Errno(int err) { return strerror(err); }

// Connects `fd` (non-blocking) to `addr` before `deadline`.
Status ConnectFd(int fd, const sockaddr* addr, socklen_t len, MonoTime deadline,
                 const std::string& label) {
  if (::connect(fd, addr, len) == 0) return Status::Ok();
  if (errno != EINPROGRESS && errno != EAGAIN) {
    const int err = errno;
    return Status::Unavailable("cannot connect to " + label + ": " + Errno(err) +
                               (err == EACCES ? " (lagwatch's user needs read and write "
                                                "access to the socket)"
                                              : ""));
  }
  if (Status st = WaitFd(fd, POLLOUT, deadline); !st.ok()) {
    return Status::DeadlineExceeded("connecting to " + label + ": timed out");
  }
  int err = 0;
  socklen_t n = sizeof err;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n);
  if (err != 0) return Status::Unavailable("cannot connect to " + label + ": " + Errno(err));
  return Status::Ok();
}

Result<int> Open(const HaproxySocket& s, MonoTime deadline, const std::string& label) {
  if (!s.path.empty()) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (s.path.size() >= sizeof addr.sun_path) {
      return Status::InvalidArgument(label + ": socket path too long");
    }
    memcpy(addr.sun_path, s.path.data(), s.path.size());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return Status::Unavailable("socket: " + Errno(errno));
    if (Status st = ConnectFd(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr, deadline, label);
        !st.ok()) {
      close(fd);
      return st;
    }
    return fd;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(s.port);
  if (int rc = getaddrinfo(s.host.c_str(), port.c_str(), &hints, &res); rc != 0 || !res) {
    return Status::Unavailable("cannot resolve " + s.host + ": " + gai_strerror(rc));
  }
  const int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  Status st = fd < 0 ? Status::Unavailable("socket: " + Errno(errno))
                     : ConnectFd(fd, res->ai_addr, res->ai_addrlen, deadline, label);
  freeaddrinfo(res);
  if (!st.ok()) {
    if (fd >= 0) close(fd);
    return st;
  }
  return fd;
}

// The lines of `text`, without their "\n" (a last line without one included).
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  while (!line.empty()) {
    const size_t sp = line.find(' ');
    if (sp != 0) out.push_back(line.substr(0, sp));
    if (sp == std::string_view::npos) break;
    line.remove_prefix(sp + 1);
  }
  return out;
}

// `text`'s first non-blank line for a message: escaped, at most 120 bytes.
std::string Quote(std::string_view text) {
  for (std::string_view line : Lines(text)) {
    line = Trim(line);
    if (line.empty()) continue;
    return "'" + EscapeControl(line.substr(0, 120)) + (line.size() > 120 ? "...'" : "'");
  }
  return "nothing";
}

bool IsBlank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c == '\n' || c == ' '; });
}

// What HAProxy itself answers to a command it refuses (the text is its own, not a format).
bool IsHaproxyRefusal(std::string_view reply) {
  const std::string_view t = Trim(reply);
  for (std::string_view known :
       {"Can't find backend", "Permission denied", "Unknown command", "No such backend"}) {
    if (t.starts_with(known)) return true;
  }
  return false;
}

template <typename T>
std::optional<T> Field(std::string_view s, T lo, T hi) {
  auto v = ParseInt<T>(s);
  if (!v || *v < lo || *v > hi) return std::nullopt;
  return v;
}

}  // namespace

std::string HaproxySocket::ToString() const {
  if (!path.empty()) return path;
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::optional<HaproxySocket> ParseHaproxySocket(std::string_view text) {
  HaproxySocket s;
  if (text.starts_with('/')) {
    if (text.size() >= sizeof(sockaddr_un::sun_path)) return std::nullopt;
    for (char c : text) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
    }
    s.path = std::string(text);
    return s;
  }
  auto address = ParseListenAddress(text);
  if (!address || address->port == 0) return std::nullopt;
  s.host = address->host;
  s.port = address->port;
  return s;
}

Result<std::string> HaproxyExchange(const HaproxySocket& socket, std::string_view command,
                                    MonoTime deadline, size_t max_reply_bytes) {
  const std::string label = "haproxy " + socket.ToString();
  auto opened = Open(socket, deadline, label);
  if (!opened.ok()) return opened.status();
  Fd fd(*opened);
  std::string line = std::string(command) + "\n";
  for (size_t off = 0; off < line.size();) {
    const ssize_t n = ::send(fd.get(), line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return Status::Unavailable("writing to " + label + ": " + Errno(errno));
    }
    if (!WaitFd(fd.get(), POLLOUT, deadline).ok()) {
      return Status::DeadlineExceeded("writing to " + label + ": timed out");
    }
  }
  // Nothing more from us: HAProxy answers the line and closes.
  ::shutdown(fd.get(), SHUT_WR);
  std::string reply;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n == 0) return reply;
    if (n > 0) {
      if (reply.size() + static_cast<size_t>(n) > max_reply_bytes) {
        return Status::DataError(label + ": reply larger than " + std::to_string(max_reply_bytes) +
                                 " bytes");
      }
      reply.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (errno != EAGAIN && errno != EINTR) {
      return Status::Unavailable("reading from " + label + ": " + Errno(errno));
    }
    if (!WaitFd(fd.get(), POLLIN, deadline).ok()) {
      return Status::DeadlineExceeded("reading from " + label + ": timed out after " +
                                      std::to_string(reply.size()) + " bytes");
    }
  }
}

Result<std::vector<HaproxyServerState>> ParseServersState(std::string_view reply,
                                                          std::string_view backend) {
  const std::vector<std::string_view> lines = Lines(reply);
  if (lines.empty() || Trim(lines[0]) != "1") {
    if (IsHaproxyRefusal(reply)) {
      return Status::ServerError("show servers state " + std::string(backend) + ": " +
                                 Quote(reply));
    }
    return Status::DataError("show servers state: not format version 1: " + Quote(reply));
  }
  if (lines.size() < 2 || !lines[1].starts_with("# ")) {
    return Status::DataError("show servers state: no header line");
  }
  const std::vector<std::string_view> header = Fields(lines[1].substr(2));
  auto index = [&](std::string_view name) -> std::optional<size_t> {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) return std::nullopt;
    return static_cast<size_t>(it - header.begin());
  };
  const auto be = index("be_name"), name = index("srv_name"), op = index("srv_op_state"),
             admin = index("srv_admin_state"), weight = index("srv_uweight");
  if (!be || !name || !op || !admin || !weight) {
    return Status::DataError("show servers state: the header lacks a field lagwatch reads");
  }
  std::vector<HaproxyServerState> out;
  std::set<std::string_view> names;
  for (size_t i = 2; i < lines.size(); ++i) {
    if (IsBlank(lines[i])) continue;
    const std::string line_no = "show servers state: line " + std::to_string(i + 1);
    const std::vector<std::string_view> f = Fields(lines[i]);
    if (f.size() != header.size()) {
      return Status::DataError(line_no + ": " + std::to_string(f.size()) +
                               " fields, the header has " + std::to_string(header.size()));
    }
    if (f[*be] != backend) return Status::DataError(line_no + ": another backend");
    HaproxyServerState s;
    if (!IsHaproxyName(f[*name])) return Status::DataError(line_no + ": not a server name");
    s.name = std::string(f[*name]);
    auto o = Field<int>(f[*op], 0, 3);
    auto a = Field<int>(f[*admin], 0, 0xff);
    auto w = Field<int>(f[*weight], 0, 256);
    if (!o || !a || !w) return Status::DataError(line_no + ": a state or weight out of range");
    s.op_state = *o;
    s.admin_state = *a;
    s.weight = *w;
    if (!names.insert(f[*name]).second) return Status::DataError(line_no + ": a name twice");
    if (out.size() >= kMaxServers) return Status::DataError("show servers state: too many servers");
    out.push_back(std::move(s));
  }
  return out;
}

Result<HaproxyProcess> ParseShowInfo(std::string_view reply) {
  if (IsHaproxyRefusal(reply)) return Status::ServerError("show info: " + Quote(reply));
  if (IsBlank(reply)) return Status::DataError("show info: an empty reply");
  std::optional<int64_t> pid, uptime;
  for (std::string_view line : Lines(reply)) {
    if (IsBlank(line)) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 ||
        !IsToken(line.substr(0, colon), "_- ", 1, 64) ||
        (colon + 1 < line.size() && line[colon + 1] != ' ')) {
      return Status::DataError("show info: not a 'Name: value' line: " + Quote(line));
    }
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    if (key == "Pid") pid = Field<int64_t>(value, 1, INT32_MAX);
    if (key == "Uptime_sec") uptime = Field<int64_t>(value, 0, INT64_MAX);
    if ((key == "Pid" && !pid) || (key == "Uptime_sec" && !uptime)) {
      return Status::DataError("show info: " + std::string(key) + " is not a number");
    }
  }
  if (!pid || !uptime) return Status::DataError("show info: no Pid or Uptime_sec");
  return HaproxyProcess{*pid, *uptime};
}

std::vector<std::string> HaproxyCommandsFor(std::string_view backend,
                                            const HaproxyServerState& current,
                                            const HaproxyAnswer& answer, HaproxyEntry entry) {
  using Verdict = HaproxyAnswer::Verdict;
  const std::string server = std::string(backend) + "/" + current.name;
  std::vector<std::string> out;
  switch (answer.verdict) {
    case Verdict::kUp:
      if (current.forced_maint() || current.forced_drain()) {
        out.push_back("set server " + server + " state ready");
      }
      if (entry == HaproxyEntry::kReplica && current.weight != answer.RuntimeWeight()) {
        out.push_back("set server " + server + " weight " + std::to_string(answer.RuntimeWeight()));
      }
      break;
    case Verdict::kDrain:
      if (current.forced_maint() || !current.forced_drain()) {
        out.push_back("set server " + server + " state drain");
      }
      break;
    case Verdict::kDown:
    case Verdict::kMaint:
      if (!current.forced_maint()) {
        out.push_back("set server " + server + " state maint");
        out.push_back("shutdown sessions server " + server);
      }
      break;
  }
  return out;
}

void ApplyToState(const HaproxyAnswer& answer, HaproxyEntry entry, HaproxyServerState& s) {
  using Verdict = HaproxyAnswer::Verdict;
  switch (answer.verdict) {
    case Verdict::kUp:
      s.admin_state &= ~0x09;
      if (entry == HaproxyEntry::kReplica) s.weight = answer.RuntimeWeight();
      break;
    case Verdict::kDrain:
      s.admin_state = (s.admin_state & ~0x01) | 0x08;
      break;
    case Verdict::kDown:
    case Verdict::kMaint:
      s.admin_state |= 0x01;
      break;
  }
}

// One instance's thread: its connection state, what it last saw of HAProxy, and the loop.
class HaproxyPusher::Instance {
 public:
  Instance(HaproxyInstance config, const HaproxyPushOptions& options, const VerdictBoard* board,
           HaproxyMetrics* metrics, const Clock& clock)
      : config_(std::move(config)),
        socket_(ParseHaproxySocket(config_.socket).value_or(HaproxySocket{})),
        resync_(options.resync_ms),
        timeout_(options.timeout_ms),
        ttl_(options.ttl_ms),
        max_backoff_(options.max_backoff_ms),
        board_(board),
        clock_(clock),
        up_(metrics->up.Add({{"haproxy", config_.name}})),
        commands_(metrics->commands.Add({{"haproxy", config_.name}})),
        corrections_(metrics->corrections.Add({{"haproxy", config_.name}})),
        restarts_(metrics->restarts.Add({{"haproxy", config_.name}})),
        last_sync_(metrics->last_sync_seconds.Add({{"haproxy", config_.name}})),
        push_seconds_(metrics->push_seconds.Add(
            {{"haproxy", config_.name}},
            prometheus::Histogram::BucketBoundaries(kLatencyBucketsSeconds.begin(),
                                                    kLatencyBucketsSeconds.end()))),
        metrics_(metrics) {
    for (const char* reason : kErrorReasons) {
      metrics_->errors.Add({{"haproxy", config_.name}, {"reason", reason}});
    }
    up_.Set(0);
  }

  void Start() {
    worker_.Start([this](std::stop_token stop) { Run(stop); });
  }
  void Stop() { worker_.Stop(); }

 private:
  // What HAProxy should show for one of its servers that is lagwatch's.
  struct Wanted {
    HaproxyEntry entry;
    HaproxyAnswer answer;
  };

  void Run(const std::stop_token& stop) {
    MonoTime next_sync = clock_.Now();
    uint64_t seen = 0;
    while (!stop.stop_requested()) {
      const VerdictBoard::Version version = board_->version();
      const MonoTime now = clock_.Now();
      if (!synced_ || now >= next_sync) {
        seen = version.number;
        if (Status st = Sync(); !st.ok()) {
          Failed(st);
          next_sync = clock_.Now() + backoff_;
          // During the backoff a verdict change waits: the next attempt sends everything.
          clock_.SleepUntil(stop, next_sync);
          continue;
        }
        next_sync = clock_.Now() + resync_;
      } else if (version.number != seen || (expiry_ && now >= *expiry_)) {
        const bool changed = version.number != seen;
        seen = version.number;
        if (Status st = Push(changed ? std::optional<MonoTime>(version.changed_at) : std::nullopt);
            !st.ok()) {
          Failed(st);
          next_sync = clock_.Now() + backoff_;
          clock_.SleepUntil(stop, next_sync);
          continue;
        }
      }
      MonoTime wake = next_sync;
      if (expiry_) wake = std::min(wake, *expiry_);
      board_->WaitForChange(seen, wake, stop);
    }
  }

  Result<std::string> Exchange(const std::string& command, size_t max_bytes) {
    return HaproxyExchange(socket_, command, clock_.Now() + timeout_, max_bytes);
  }

  // Reads the process and the backend's servers, then sets what differs.
  Status Sync() {
    auto info = Exchange("show info", kHaproxyMaxReplyBytes);
    if (!info.ok()) return info.status();
    auto process = ParseShowInfo(*info);
    if (!process.ok()) return process.status();
    auto state = Exchange("show servers state " + config_.backend, kHaproxyMaxReplyBytes);
    if (!state.ok()) return state.status();
    auto servers = ParseServersState(*state, config_.backend);
    if (!servers.ok()) return servers.status();

    const bool first = !process_;
    if (process_ && (process->pid != process_->pid || process->uptime_sec < process_->uptime_sec)) {
      restarts_.Increment();
      Log(LogLevel::kInfo, Name() + " restarted or reloaded (pid " + std::to_string(process_->pid) +
                               " -> " + std::to_string(process->pid) +
                               "): lagwatch's verdicts are sent again");
    }
    process_ = *process;
    actual_.clear();
    for (auto& s : *servers) actual_.emplace(s.name, std::move(s));
    auto changed = SendDifferences(true, first ? nullptr : &corrections_, std::nullopt);
    if (!changed.ok()) return changed.status();
    if (!synced_) {
      Log(LogLevel::kInfo, Name() + (was_up_ ? " reachable again" : " reached") + ": " +
                               std::to_string(managed_) + " of its servers are lagwatch's, " +
                               std::to_string(*changed) + " set");
    }
    synced_ = true;
    was_up_ = true;
    backoff_ = Millis(0);
    up_.Set(1);
    last_sync_.Set(std::chrono::duration<double>(clock_.WallNow().time_since_epoch()).count());
    return Status::Ok();
  }

  // A verdict changed (at `changed_at`) or a usable record expired: sends what differs from what
  // HAProxy was last seen or told to show.
  Status Push(std::optional<MonoTime> changed_at) {
    auto sent = SendDifferences(false, nullptr, changed_at);
    return sent.ok() ? Status::Ok() : sent.status();
  }

  // Compares every server of lagwatch's in the backend with its verdict and sends the commands
  // for those that differ (counting them in `corrections` when given); the number of servers set.
  // `at_sync`: after reading the backend (lagwatch's servers it lacks are then logged).
  Result<int> SendDifferences(bool at_sync, prometheus::Counter* corrections,
                              std::optional<MonoTime> changed_at) {
    const MonoTime now = clock_.Now();
    const std::map<std::string, HaproxyFacts> facts = board_->All();
    expiry_.reset();
    managed_ = 0;
    std::vector<std::string> commands;
    std::vector<std::pair<HaproxyServerState*, Wanted>> applied;
    std::set<std::string> present;
    for (auto& [name, state] : actual_) {
      auto parsed = ParseHaproxyServerName(name);
      if (!parsed) continue;
      auto f = facts.find(parsed->id);
      if (f == facts.end()) continue;  // not a server of lagwatch's: left alone
      ++managed_;
      present.insert(name);
      const Wanted w{parsed->entry, JudgeForHaproxy(f->second, parsed->entry, now, ttl_)};
      if (w.answer.usable_until && (!expiry_ || *w.answer.usable_until < *expiry_)) {
        expiry_ = w.answer.usable_until;
      }
      std::vector<std::string> c = HaproxyCommandsFor(config_.backend, state, w.answer, w.entry);
      if (c.empty()) continue;
      LogLimited(LogLevel::kInfo, "haproxy-push:" + config_.name + ":" + name,
                 Name() + ": " + config_.backend + "/" + name + " -> " +
                     VerdictName(w.answer.verdict) + " (" + w.answer.reason + ")");
      commands.insert(commands.end(), c.begin(), c.end());
      applied.emplace_back(&state, w);
    }
    if (at_sync) WarnMissing(facts, present);
    if (commands.empty()) return 0;
    if (Status st = Send(commands); !st.ok()) return st;
    for (auto& [state, w] : applied) ApplyToState(w.answer, w.entry, *state);
    commands_.Increment(static_cast<double>(commands.size()));
    if (corrections) {
      corrections->Increment(static_cast<double>(applied.size()));
      LogLimited(LogLevel::kInfo, "haproxy-corrections:" + config_.name,
                 Name() + ": " + std::to_string(applied.size()) +
                     " servers differed from lagwatch's verdicts at the resync (a restart, a "
                     "reload or a change by hand) and were set again");
    }
    if (changed_at) {
      push_seconds_.Observe(std::chrono::duration<double>(clock_.Now() - *changed_at).count());
    }
    return static_cast<int>(applied.size());
  }

  // Sends `commands`, as few lines as fit, each line's reply checked: HAProxy says nothing to a
  // command it carried out.
  Status Send(const std::vector<std::string>& commands) {
    std::string line;
    auto flush = [&]() -> Status {
      if (line.empty()) return Status::Ok();
      auto reply = Exchange(line, kMaxSetReplyBytes);
      line.clear();
      if (!reply.ok()) return reply.status();
      if (!IsBlank(*reply)) {
        return Status::ServerError(Name() + " refused a command: " + Quote(*reply) +
                                   (reply->find("Permission denied") != std::string::npos
                                        ? " (the stats socket needs 'level admin')"
                                        : ""));
      }
      return Status::Ok();
    };
    for (const auto& c : commands) {
      if (!line.empty() && line.size() + 2 + c.size() > kMaxLineBytes) {
        if (Status st = flush(); !st.ok()) return st;
      }
      line += (line.empty() ? "" : "; ") + c;
    }
    return flush();
  }

  // Logs (rarely) lagwatch's servers that have no entry in the backend.
  void WarnMissing(const std::map<std::string, HaproxyFacts>& facts,
                   const std::set<std::string>& present) {
    std::string missing;
    for (const auto& [id, f] : facts) {
      for (HaproxyEntry e : {HaproxyEntry::kReplica, HaproxyEntry::kPrimary}) {
        const std::string name = HaproxyServerName{id, e}.ToString();
        if (!present.count(name)) missing += (missing.empty() ? "" : ", ") + name;
      }
    }
    if (missing.empty()) return;
    LogLimited(LogLevel::kWarn, "haproxy-missing:" + config_.name,
               Name() + ": backend " + config_.backend + " has no server " + missing +
                   " (regenerate it with lagwatch haproxy-config)",
               600);
  }

  void Failed(const Status& st) {
    metrics_->errors.Add({{"haproxy", config_.name}, {"reason", st.reason()}}).Increment();
    up_.Set(0);
    synced_ = false;
    backoff_ = std::min(backoff_ == Millis(0) ? kFirstBackoff : backoff_ * 2, max_backoff_);
    LogLimited(LogLevel::kWarn, "haproxy:" + config_.name,
               Name() + ": " + st.ToString() + "; retrying in " + std::to_string(backoff_.count()) +
                   " ms (HAProxy keeps the state it was last given)");
  }

  std::string Name() const {
    return "haproxy instance " + config_.name + " (" + socket_.ToString() + ")";
  }

  // Constant after construction.
  const HaproxyInstance config_;
  const HaproxySocket socket_;
  const Millis resync_, timeout_, ttl_, max_backoff_;
  const VerdictBoard* const board_;
  const Clock& clock_;
  prometheus::Gauge& up_;
  prometheus::Counter& commands_;
  prometheus::Counter& corrections_;
  prometheus::Counter& restarts_;
  prometheus::Gauge& last_sync_;
  prometheus::Histogram& push_seconds_;
  HaproxyMetrics* const metrics_;

  // Used only on the instance's thread.
  bool synced_ = false;  // the last exchange succeeded and actual_ is what HAProxy shows
  bool was_up_ = false;
  Millis backoff_{0};
  std::optional<HaproxyProcess> process_;
  std::map<std::string, HaproxyServerState> actual_;  // by server name
  std::optional<MonoTime> expiry_;  // the soonest moment a usable answer stops being one
  size_t managed_ = 0;
  Worker worker_;
};

HaproxyPusher::HaproxyPusher(HaproxyPushOptions options, const VerdictBoard* board,
                             HaproxyMetrics* metrics, const Clock& clock) {
  for (const auto& i : options.instances) {
    instances_.push_back(std::make_unique<Instance>(i, options, board, metrics, clock));
  }
}

HaproxyPusher::~HaproxyPusher() { Stop(); }

void HaproxyPusher::Start() {
  for (auto& i : instances_) i->Start();
}

void HaproxyPusher::Stop() {
  for (auto& i : instances_) i->Stop();
}

}  // namespace lagwatch
