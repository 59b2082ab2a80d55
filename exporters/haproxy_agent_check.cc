#include "exporters/haproxy_agent_check.h"

#include <netdb.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>

#include "base/event_loop.h"
#include "base/log.h"
#include "base/strings.h"
#include "exporters/metrics.h"

namespace lagwatch {
namespace {

constexpr size_t kMaxCheckLineBytes = 256;
constexpr std::string_view kLimitKey = "max_delay_ms=";

Result<int> Listen(const std::string& listen) {
  const std::string key = "haproxy.agent_check.listen";
  auto address = ParseListenAddress(listen);
  if (!address) return Status::InvalidArgument(key + ": must be \"address:port\"");
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(address->port);
  if (int rc = getaddrinfo(address->host.c_str(), port.c_str(), &hints, &res); rc != 0 || !res) {
    return Status::InvalidArgument(key + ": cannot resolve " + address->host + ": " +
                                   gai_strerror(rc));
  }
  const int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  const bool ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
                  ::bind(fd, res->ai_addr, res->ai_addrlen) == 0 && ::listen(fd, 128) == 0;
  const int err = errno;
  freeaddrinfo(res);
  if (!ok) {
    if (fd >= 0) close(fd);
    return Status::InvalidArgument(key + ": cannot listen on " + listen + ": " + strerror(err));
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

}  // namespace

std::optional<CheckTarget> ParseAgentSend(std::string_view line) {
  line = Trim(line);
  if (line.ends_with('\r')) line = Trim(line.substr(0, line.size() - 1));
  CheckTarget t;
  const size_t sp = line.find(' ');
  if (sp != std::string_view::npos) {
    std::string_view rest = Trim(line.substr(sp + 1));
    line = line.substr(0, sp);
    if (!rest.starts_with(kLimitKey)) return std::nullopt;
    auto limit = ParseInt<int64_t>(rest.substr(kLimitKey.size()));
    if (!limit || *limit < 0 || *limit > 86'400'000) return std::nullopt;
    t.max_delay_ms = *limit;
  }
  auto name = ParseHaproxyServerName(line);
  if (!name) return std::nullopt;
  t.server = std::move(*name);
  return t;
}

// The connections, used only on the loop's thread.
class AgentCheckServer::Connections {
 public:
  Connections(EventLoop* loop, int listen_fd, const AgentCheckOptions& options,
              HaproxyAnswerFn answer, HaproxyMetrics* metrics)
      : loop_(loop),
        listen_fd_(listen_fd),
        max_(static_cast<size_t>(options.max_connections)),
        timeout_(options.timeout_ms),
        answer_(std::move(answer)),
        metrics_(metrics) {}

  ~Connections() {
    for (auto& [fd, c] : conns_) {
      loop_->Unwatch(fd);
      loop_->Cancel(c.timer);
      close(fd);
    }
    loop_->Unwatch(listen_fd_);
    close(listen_fd_);
  }

  Status Watch() {
    return loop_->Watch(listen_fd_, EPOLLIN, [this](uint32_t) { Accept(); });
  }

 private:
  struct Conn {
    std::string line;
    EventLoop::TimerId timer = 0;
  };

  void Count(const char* answer) { metrics_->Check("agent", answer).Increment(); }

  void Accept() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or an error the next readiness reports again
      if (conns_.size() >= max_) {
        Count("busy");
        close(fd);
        continue;
      }
      Conn& c = conns_[fd];
      c.timer = loop_->At(loop_->clock().Now() + timeout_, [this, fd] {
        auto it = conns_.find(fd);
        if (it == conns_.end()) return;
        it->second.timer = 0;
        Count("timeout");
        Close(fd);
      });
      if (!loop_->Watch(fd, EPOLLIN, [this, fd](uint32_t) { Read(fd); }).ok()) Close(fd);
    }
  }

  void Read(int fd) {
    Conn& c = conns_[fd];
    char buf[kMaxCheckLineBytes + 1];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0 || (n == 0 && c.line.empty())) {
      // Reset, or closed without a word (a port scan, a plain TCP check): nothing to answer.
      Close(fd);
      return;
    }
    if (n == 0) {
      Answer(fd, c.line);  // a last line without its newline
      return;
    }
    c.line.append(buf, static_cast<size_t>(n));
    if (const size_t nl = c.line.find('\n'); nl != std::string::npos) {
      Answer(fd, c.line.substr(0, nl));
    } else if (c.line.size() > kMaxCheckLineBytes) {
      Answer(fd, c.line);  // refused as too long
    }
  }

  // Answers the line (if it asks for a server) and closes.
  void Answer(int fd, std::string line) {
    auto target = ParseAgentSend(line);
    if (!target || line.size() > kMaxCheckLineBytes) {
      Count("malformed");
      LogLimited(LogLevel::kWarn, "agent-check-malformed",
                 "haproxy agent-check: a request that is not a server name: '" +
                     EscapeControl(std::string_view(line).substr(0, 80)) + "'",
                 60);
      Close(fd);
      return;
    }
    std::optional<HaproxyAnswer> a = answer_(*target);
    const std::string reply = a ? a->AgentReply() : "maint #unknown\n";
    Count(a ? VerdictName(a->verdict) : "unknown");
    // A line this short fits in an empty socket buffer: one send, whatever it manages.
    (void)!::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    Close(fd);
  }

  void Close(int fd) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    loop_->Unwatch(fd);
    if (it->second.timer) loop_->Cancel(it->second.timer);
    conns_.erase(it);
    close(fd);
  }

  EventLoop* const loop_;
  const int listen_fd_;
  const size_t max_;
  const Millis timeout_;
  const HaproxyAnswerFn answer_;
  HaproxyMetrics* const metrics_;
  std::map<int, Conn> conns_;
};

AgentCheckServer::AgentCheckServer(const AgentCheckOptions& options)
    : options_(options), loop_(std::make_unique<EventLoop>("lw-haproxy-agent")) {}

Result<std::unique_ptr<AgentCheckServer>> AgentCheckServer::Start(const AgentCheckOptions& options,
                                                                  HaproxyAnswerFn answer,
                                                                  HaproxyMetrics* metrics) {
  auto fd = Listen(options.listen);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<AgentCheckServer> s(new AgentCheckServer(options));
  s->port_ = BoundPort(*fd);
  s->connections_ =
      std::make_unique<Connections>(s->loop_.get(), *fd, options, std::move(answer), metrics);
  if (Status st = s->connections_->Watch(); !st.ok()) return st;
  s->loop_->Start();
  const std::string host = ParseListenAddress(options.listen)->host;
  if (host != "localhost" && !host.starts_with("127.") && host != "::1") {
    Log(LogLevel::kWarn, "haproxy.agent_check.listen " + options.listen +
                             " is reachable from other hosts: HAProxy's agent checks have no TLS "
                             "or authentication, so anyone who reaches it reads every server's "
                             "verdict; prefer loopback or a private address");
  }
  return s;
}

AgentCheckServer::~AgentCheckServer() {
  loop_->Stop();
  connections_.reset();  // the loop is stopped: its watches and timers go on this thread
}

}  // namespace lagwatch
