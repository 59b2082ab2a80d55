// Pull by HAProxy's agent-check protocol (docs/operations.md, "HAProxy"), on a TCP port of its
// own (haproxy.agent_check.listen). HAProxy connects every `agent-inter`, sends the server's
// `agent-send` string, reads one line and closes. lagwatch's generated configuration sends the
// server's name and a newline ("10.0.0.12:3306\n", "10.0.0.12:3306_primary\n"), optionally with a
// pool's own limit ("10.0.0.12:3306 max_delay_ms=500\n"); the answer is the verdict's agent reply
// (exporters/haproxy_verdict.h), read from memory: hundreds of checks a second cost no query.
//
// No TLS and no authentication: HAProxy 2.6 has neither for agent checks. The answers say only
// whether a server is usable and its delay, but bind the port to loopback or a private address;
// a warning is logged when it listens elsewhere.
//
// Bounded: at most max_connections at once (more are accepted and closed at once, counted
// "busy"), each closed after timeout_ms without a full line ("timeout"); a line longer than 256
// bytes or that is not a server's name is closed without an answer ("malformed"); a name
// lagwatch does not know is answered "maint #unknown" ("unknown"), so a misconfigured pool leaves
// the server out rather than in.
//
// Thread-safe: one thread of its own (an event loop) serves every connection.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"
#include "exporters/haproxy_verdict.h"

namespace lagwatch {

class EventLoop;
struct HaproxyMetrics;

struct AgentCheckOptions {
  std::string listen;  // "address:port"; empty: no agent-check port
  int max_connections = 64;
  int timeout_ms = 1000;
  bool operator==(const AgentCheckOptions&) const = default;
};

// An agent-send line (without its newline): "<name>" or "<name> max_delay_ms=<0..86400000>", blanks
// and a "\r" around it ignored; nullopt otherwise.
std::optional<CheckTarget> ParseAgentSend(std::string_view line);

class AgentCheckServer {
 public:
  // Listens on options.listen and serves until destroyed; `answer` is called on the server's
  // thread. InvalidArgument naming
  // haproxy.agent_check.listen when the address is malformed or cannot be bound. `metrics` must
  // outlive the server.
  static Result<std::unique_ptr<AgentCheckServer>> Start(const AgentCheckOptions& options,
                                                         HaproxyAnswerFn answer,
                                                         HaproxyMetrics* metrics);
  ~AgentCheckServer();
  AgentCheckServer(const AgentCheckServer&) = delete;
  AgentCheckServer& operator=(const AgentCheckServer&) = delete;

  // The port bound (useful with port 0).
  int port() const { return port_; }

 private:
  explicit AgentCheckServer(const AgentCheckOptions& options);
  class Connections;

  const AgentCheckOptions options_;
  int port_ = 0;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Connections> connections_;  // lives on loop_'s thread
};

}  // namespace lagwatch
