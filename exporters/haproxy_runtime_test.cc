#include "exporters/haproxy_runtime.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include <doctest/doctest.h>

#include "base/strings.h"
#include "exporters/metrics.h"
#include "exporters/verdict_board.h"

namespace lagwatch {
namespace {

using namespace std::chrono_literals;

// `show servers state reads` as HAProxy 2.6.12 printed it (a disabled server that was set ready:
// admin 4; one drained by its agent: 8; a backup).
constexpr char kStateReply[] =
    "1\n"
    "# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
    "srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health "
    "srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord "
    "srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n"
    "2 reads 1 127.0.0.1:3307 127.0.0.1 2 4 100 100 5 1 0 0 8 0 0 0 - 3307 - 0 0 - - 0\n"
    "2 reads 2 127.0.0.1:3308 127.0.0.1 2 8 256 100 3 1 0 0 0 23 0 0 - 3308 - 0 0 - 127.0.0.1 "
    "9911\n"
    "2 reads 3 127.0.0.1:3307_primary 127.0.0.1 2 0 1 1 9 1 0 2 0 0 0 0 - 3307 - 0 0 - - 0\n"
    "\n";

// `show info` of HAProxy 2.6.12, shortened (some names have a space).
constexpr char kInfoReply[] =
    "Name: HAProxy\nVersion: 2.6.12-1+deb12u4\nRelease_date: 2026/10/17\nNbthread: 2\n"
    "Pid: 31026\nUptime: 0d 0h00m01s\nUptime_sec: 1\nNode: vm\nDescription: \n"
    "Unstoppable Jobs: 0\nBuild info: 2.6.12-1+deb12u4\nStart_time_sec: 1796406995\n"
    "Tainted: 0\n\n";

TEST_CASE("a runtime API address is an absolute socket path or host:port") {
  auto s = ParseHaproxySocket("/run/haproxy/admin.sock");
  REQUIRE(s);
  CHECK(s->path == "/run/haproxy/admin.sock");
  CHECK(s->ToString() == "/run/haproxy/admin.sock");
  s = ParseHaproxySocket("127.0.0.1:9999");
  REQUIRE(s);
  CHECK(s->host == "127.0.0.1");
  CHECK(s->port == 9999);
  CHECK(ParseHaproxySocket("[::1]:9999")->ToString() == "[::1]:9999");
  for (const char* bad :
       {"", "admin.sock", "run/admin.sock", "127.0.0.1", "host:0", "host:99999", "/run/a\nb"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseHaproxySocket(bad));
  }
  CHECK_FALSE(ParseHaproxySocket("/" + std::string(200, 'a')));
}

TEST_CASE("show servers state is read by its header, every line checked") {
  auto r = ParseServersState(kStateReply, "reads");
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].name == "127.0.0.1:3307");
  CHECK((*r)[0].op_state == 2);
  CHECK_FALSE((*r)[0].forced_maint());  // 4: a `disabled` server set ready keeps only CMAINT
  CHECK((*r)[0].weight == 100);
  CHECK((*r)[1].forced_drain());
  CHECK((*r)[1].weight == 256);
  CHECK((*r)[2].name == "127.0.0.1:3307_primary");
  // The fields are found by name, not by position.
  auto moved = ParseServersState(
      "1\n# srv_uweight srv_name be_name srv_admin_state srv_op_state\n7 a:1 reads 1 0\n", "reads");
  REQUIRE(moved.ok());
  CHECK((*moved)[0].weight == 7);
  CHECK((*moved)[0].forced_maint());
  CHECK(
      ParseServersState("1\n# be_name srv_name srv_op_state srv_admin_state srv_uweight\n", "reads")
          ->empty());
}

TEST_CASE("a malformed or hostile servers state is a DataError, HAProxy's refusal a ServerError") {
  const std::string header = "1\n# be_name srv_name srv_op_state srv_admin_state srv_uweight\n";
  struct Case {
    std::string reply;
    Status::Code code;
  };
  for (const Case& c : {
           Case{"Can't find backend.\n", Status::Code::kServerError},
           Case{"Permission denied\n", Status::Code::kServerError},
           Case{"Unknown command. Please enter one of the following commands only :\n",
                Status::Code::kServerError},
           Case{"", Status::Code::kDataError},
           Case{"2\n# be_name srv_name\n", Status::Code::kDataError},
           Case{"1\n", Status::Code::kDataError},
           Case{"1\nbe_name srv_name srv_op_state srv_admin_state srv_uweight\n",
                Status::Code::kDataError},
           Case{"1\n# be_name srv_name srv_op_state srv_admin_state\n",
                Status::Code::kDataError},                                  // no weight
           Case{header + "reads a:1 2 0\n", Status::Code::kDataError},      // short
           Case{header + "reads a:1 2 0 1 9\n", Status::Code::kDataError},  // long
           Case{header + "other a:1 2 0 1\n", Status::Code::kDataError},    // backend
           Case{header + "reads a:1 7 0 1\n", Status::Code::kDataError},    // op state
           Case{header + "reads a:1 2 -1 1\n", Status::Code::kDataError},   // admin
           Case{header + "reads a:1 2 0 257\n", Status::Code::kDataError},  // weight
           Case{header + "reads a:1 2 0 x\n", Status::Code::kDataError},    // number
           Case{header + "reads a;b 2 0 1\n", Status::Code::kDataError},    // name
           Case{header + "reads a:1 2 0 1\nreads a:1 2 0 1\n", Status::Code::kDataError},
           Case{"\xff\xfe garbage \x01\x02\n", Status::Code::kDataError},
       }) {
    CAPTURE(EscapeControl(c.reply));
    auto r = ParseServersState(c.reply, "reads");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == c.code);
  }
}

TEST_CASE("show info gives the process id and uptime, strictly") {
  auto r = ParseShowInfo(kInfoReply);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->pid == 31026);
  CHECK(r->uptime_sec == 1);
  for (const char* bad : {"", "Pid: 1\n", "Uptime_sec: 1\n", "Pid: x\nUptime_sec: 1\n",
                          "Pid: 1\nUptime_sec: 1\nnot a line\n", "Pid:1\nUptime_sec: 1\n",
                          "Pid: 0\nUptime_sec: 1\n", "\x01\x02: 3\nPid: 1\nUptime_sec: 1\n"}) {
    CAPTURE(EscapeControl(bad));
    CHECK(ParseShowInfo(bad).status().code() == Status::Code::kDataError);
  }
  CHECK(ParseShowInfo("Permission denied\n").status().code() == Status::Code::kServerError);
}

HaproxyAnswer Answer(HaproxyAnswer::Verdict v, int weight = 50) {
  HaproxyAnswer a;
  a.verdict = v;
  a.weight = weight;
  return a;
}

TEST_CASE("commands take a server from what HAProxy shows to the verdict, and nothing more") {
  using V = HaproxyAnswer::Verdict;
  const HaproxyServerState ready{"a:1", 2, 0, 50};
  const HaproxyServerState maint{"a:1", 2, 1, 50};
  const HaproxyServerState disabled_ready{"a:1", 2, 4, 50};  // CMAINT stays after `state ready`
  const HaproxyServerState drain{"a:1", 2, 8, 50};
  auto cmds = [](const HaproxyServerState& s, V v, int w = 50,
                 HaproxyEntry e = HaproxyEntry::kReplica) {
    return HaproxyCommandsFor("reads", s, Answer(v, w), e);
  };
  using L = std::vector<std::string>;
  CHECK(cmds(ready, V::kUp) == L{});
  CHECK(cmds(disabled_ready, V::kUp) == L{});
  CHECK(cmds(ready, V::kUp, 60) == L{"set server reads/a:1 weight 60"});
  CHECK(cmds(ready, V::kUp, 900) == L{"set server reads/a:1 weight 256"});
  CHECK(cmds(maint, V::kUp) == L{"set server reads/a:1 state ready"});
  CHECK(cmds(drain, V::kUp, 7) ==
        L{"set server reads/a:1 state ready", "set server reads/a:1 weight 7"});
  // A backup entry's weight is the configuration's.
  CHECK(cmds(maint, V::kUp, 100, HaproxyEntry::kPrimary) == L{"set server reads/a:1 state ready"});
  CHECK(cmds(ready, V::kDrain, 0) == L{"set server reads/a:1 state drain"});
  CHECK(cmds(maint, V::kDrain, 0) == L{"set server reads/a:1 state drain"});
  CHECK(cmds(drain, V::kDrain, 0) == L{});
  for (V v : {V::kDown, V::kMaint}) {
    CHECK(cmds(ready, v) ==
          L{"set server reads/a:1 state maint", "shutdown sessions server reads/a:1"});
    CHECK(cmds(drain, v) ==
          L{"set server reads/a:1 state maint", "shutdown sessions server reads/a:1"});
    CHECK(cmds(maint, v) == L{});
  }
  HaproxyServerState s = maint;
  ApplyToState(Answer(V::kUp, 7), HaproxyEntry::kReplica, s);
  CHECK(cmds(s, V::kUp, 7) == L{});
  ApplyToState(Answer(V::kDrain, 0), HaproxyEntry::kReplica, s);
  CHECK(s.forced_drain());
  ApplyToState(Answer(V::kDown), HaproxyEntry::kReplica, s);
  CHECK(s.forced_maint());
}

// A HAProxy runtime API on a unix socket, in a thread: it keeps each server's admin state and
// weight, answers `show info` and `show servers state` from them and carries out `set server` and
// `shutdown sessions` commands, or answers as told (garbage, a huge reply, nothing).
class FakeHaproxy {
 public:
  enum class Mode { kNormal, kGarbage, kHuge, kSilent, kRefuse };

  FakeHaproxy(const std::string& path, std::vector<std::string> servers) : path_(path) {
    for (const auto& s : servers) state_[s] = HaproxyServerState{s, 2, 5, 100};  // disabled
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof addr.sun_path);
    memcpy(addr.sun_path, path.data(), path.size());
    ::unlink(path.c_str());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeHaproxy() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    ::unlink(path_.c_str());
  }

  void SetMode(Mode m) { mode_ = m; }
  // A restart: a new process, every server back to the configuration's state.
  void Restart() {
    std::lock_guard lock(mu_);
    ++pid_;
    for (auto& [name, s] : state_) s = HaproxyServerState{name, 2, 5, 100};
  }
  void SetByHand(const std::string& name, int admin_state) {
    std::lock_guard lock(mu_);
    state_[name].admin_state = admin_state;
  }
  HaproxyServerState State(const std::string& name) {
    std::lock_guard lock(mu_);
    return state_[name];
  }
  std::vector<std::string> Commands() {
    std::lock_guard lock(mu_);
    return commands_;
  }
  int connections() const { return connections_; }

 private:
  void Serve() {
    while (!stop_) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++connections_;
      std::string line;
      char buf[4096];
      ssize_t n;
      while (line.find('\n') == std::string::npos && (n = ::recv(c, buf, sizeof buf, 0)) > 0) {
        line.append(buf, static_cast<size_t>(n));
      }
      Reply(c, line.substr(0, line.find('\n')));
      ::close(c);
    }
  }

  void Send(int c, const std::string& text) {
    for (size_t off = 0; off < text.size();) {
      const ssize_t n = ::send(c, text.data() + off, text.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }

  void Reply(int c, const std::string& line) {
    switch (mode_.load()) {
      case Mode::kGarbage:
        return Send(c, "\x01\x02 HTTP/1.1 200 OK\r\n<html>\xff\n");
      case Mode::kHuge:
        return Send(c, "1\n" + std::string(5 << 20, 'x'));
      case Mode::kSilent:
        // Hung (a stopped process): no answer, the connection held for up to 10 s, or until the
        // test ends the hang (another mode).
        for (int i = 0; i < 1000 && !stop_ && mode_.load() == Mode::kSilent; ++i) {
          std::this_thread::sleep_for(10ms);
        }
        return;
      case Mode::kRefuse:
        if (line.rfind("set", 0) == 0) return Send(c, "Permission denied\n");
        break;
      case Mode::kNormal:
        break;
    }
    std::lock_guard lock(mu_);
    if (line == "show info") {
      return Send(c, "Name: HAProxy\nPid: " + std::to_string(pid_) + "\nUptime_sec: 5\n\n");
    }
    if (line == "show servers state reads") {
      std::string out =
          "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
          "srv_iweight\n";
      for (const auto& [name, s] : state_) {
        out += "2 reads 1 " + name + " 127.0.0.1 " + std::to_string(s.op_state) + " " +
               std::to_string(s.admin_state) + " " + std::to_string(s.weight) + " 100\n";
      }
      return Send(c, out + "\n");
    }
    if (line.rfind("show servers state", 0) == 0) return Send(c, "Can't find backend.\n");
    std::string out;
    for (std::string_view cmd : Split(line)) {
      commands_.emplace_back(cmd);
      out += Apply(std::string(cmd));
    }
    Send(c, out);
  }

  static std::vector<std::string_view> Split(std::string_view line) {
    std::vector<std::string_view> out;
    while (!line.empty()) {
      const size_t semi = line.find("; ");
      out.push_back(line.substr(0, semi));
      if (semi == std::string_view::npos) break;
      line.remove_prefix(semi + 2);
    }
    return out;
  }

  // One command's reply: "\n" when carried out. REQUIRES: mu_ held.
  std::string Apply(const std::string& cmd) {
    char server[256], what[32];
    int weight = 0;
    auto find = [&](const char* backend_server) -> HaproxyServerState* {
      std::string s = backend_server;
      if (s.rfind("reads/", 0) != 0) return nullptr;
      auto it = state_.find(s.substr(6));
      return it == state_.end() ? nullptr : &it->second;
    };
    if (std::sscanf(cmd.c_str(), "set server %255s state %31s", server, what) == 2) {
      HaproxyServerState* s = find(server);
      if (!s) return "No such server.\n";
      const std::string w = what;
      if (w == "ready") s->admin_state &= ~0x09;
      if (w == "drain") s->admin_state = (s->admin_state & ~0x01) | 0x08;
      if (w == "maint") s->admin_state |= 0x01;
      return "\n";
    }
    if (std::sscanf(cmd.c_str(), "set server %255s weight %d", server, &weight) == 2) {
      HaproxyServerState* s = find(server);
      if (!s) return "No such server.\n";
      s->weight = weight;
      return "\n";
    }
    if (std::sscanf(cmd.c_str(), "shutdown sessions server %255s", server) == 1) {
      return find(server) ? "\n" : "No such server.\n";
    }
    return "Unknown command.\n";
  }

  const std::string path_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<Mode> mode_{Mode::kNormal};
  std::atomic<int> connections_{0};
  std::thread thread_;
  std::mutex mu_;
  int pid_ = 100;                                    // GUARDED_BY(mu_)
  std::map<std::string, HaproxyServerState> state_;  // GUARDED_BY(mu_)
  std::vector<std::string> commands_;                // GUARDED_BY(mu_)
};

// A private directory for sockets, removed at the end.
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/lw-hxrt-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  std::string path;
};

bool Eventually(const std::function<bool()>& cond, Millis timeout = 3000ms) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (cond()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return cond();
}

ReplicaSnapshot Record(const std::string& id, const std::string& state, bool healthy,
                       int weight = 50) {
  ReplicaSnapshot r;
  r.id = id;
  r.state = state;
  r.healthy = healthy;
  r.delay_ms = healthy ? 10 : 900;
  r.weight = weight;
  r.tier = "tier1";
  r.max_delay_ms = 200;
  r.measured_mono = SystemClock::Get().Now();
  return r;
}

double Value(prometheus::Family<prometheus::Counter>& f, const prometheus::Labels& labels) {
  return f.Add(labels).Value();
}

struct PushFixture {
  TempDir dir;
  Metrics metrics{"test"};
  VerdictBoard board;
  std::vector<std::string> names = {"p:1", "r:2", "p:1_primary", "r:2_primary", "other"};

  PushFixture() {
    board.SetServers({"p:1", "r:2"});
    board.SetPrimary("p:1");
  }
  HaproxyPushOptions Options(std::vector<HaproxyInstance> instances) {
    HaproxyPushOptions o;
    o.instances = std::move(instances);
    o.resync_ms = 300;
    // Generous: the sanitizer suites run these beside other tests on a loaded host, where a
    // timed-out exchange (HAProxy acting, its answer late) would make a counter miss one.
    o.timeout_ms = 2000;
    o.ttl_ms = 60'000;  // records do not expire during a test unless it says so
    o.max_backoff_ms = 200;
    return o;
  }
  double Errors(const std::string& instance, const char* reason) {
    return Value(metrics.haproxy.errors, {{"haproxy", instance}, {"reason", reason}});
  }
};

TEST_CASE("the pusher sets lagwatch's servers at once and leaves others alone") {
  PushFixture f;
  FakeHaproxy haproxy(f.dir.path + "/admin.sock", f.names);
  f.board.Put(Record("r:2", "ok", true));
  HaproxyPushOptions o = f.Options({{"lb1", f.dir.path + "/admin.sock", "reads"}});
  o.resync_ms = 5000;  // what follows is pushed at each change, not found at a resync
  HaproxyPusher pusher(o, &f.board, &f.metrics.haproxy);
  pusher.Start();
  // The first sync: the replica and the primary's backup ready, the rest in maintenance.
  REQUIRE(Eventually([&] { return !haproxy.State("r:2").forced_maint(); }));
  CHECK(haproxy.State("r:2").weight == 50);
  CHECK_FALSE(haproxy.State("p:1_primary").forced_maint());
  CHECK(haproxy.State("p:1").forced_maint());
  CHECK(haproxy.State("r:2_primary").forced_maint());
  CHECK(haproxy.State("other").admin_state == 5);  // not lagwatch's: untouched
  CHECK(Eventually([&] { return f.metrics.haproxy.up.Add({{"haproxy", "lb1"}}).Value() == 1; }));

  // A verdict change is pushed at once, sessions cut.
  const auto before = haproxy.Commands().size();
  const auto t0 = std::chrono::steady_clock::now();
  f.board.Put(Record("r:2", "lagging", false));
  REQUIRE(Eventually([&] { return haproxy.State("r:2").forced_maint(); }));
  const auto took = std::chrono::steady_clock::now() - t0;
  MESSAGE("verdict to HAProxy: " << std::chrono::duration<double, std::milli>(took).count()
                                 << " ms");
  CHECK(took < 500ms);
  const auto commands = haproxy.Commands();
  REQUIRE(commands.size() == before + 2);
  CHECK(commands[before] == "set server reads/r:2 state maint");
  CHECK(commands[before + 1] == "shutdown sessions server reads/r:2");
  CHECK(Eventually([&] { return Value(f.metrics.haproxy.commands, {{"haproxy", "lb1"}}) >= 2; }));

  // Weight 0 drains; back with a weight, ready with it.
  f.board.Put(Record("r:2", "ok", true, 0));
  REQUIRE(Eventually([&] { return haproxy.State("r:2").forced_drain(); }));
  CHECK_FALSE(haproxy.State("r:2").forced_maint());
  f.board.Put(Record("r:2", "ok", true, 400));
  REQUIRE(Eventually([&] { return haproxy.State("r:2").admin_state == 4; }));
  CHECK(haproxy.State("r:2").weight == 256);

  // A switchover: the backup entries follow the primary, and the old primary joins the pool once
  // judged as a replica.
  f.board.ClearRecords();
  f.board.SetPrimary("r:2");
  REQUIRE(Eventually([&] { return !haproxy.State("r:2_primary").forced_maint(); }));
  CHECK(haproxy.State("p:1_primary").forced_maint());
  CHECK(haproxy.State("r:2").forced_maint());
  f.board.Put(Record("p:1", "ok", true, 20));
  REQUIRE(Eventually([&] { return !haproxy.State("p:1").forced_maint(); }));
  CHECK(haproxy.State("p:1").weight == 20);
  CHECK(f.Errors("lb1", "bad_data") == 0);
}

TEST_CASE("the pusher sets again what a restart, a reload or a hand changed, within a resync") {
  PushFixture f;
  FakeHaproxy haproxy(f.dir.path + "/admin.sock", f.names);
  f.board.Put(Record("r:2", "ok", true));
  HaproxyPusher pusher(f.Options({{"lb1", f.dir.path + "/admin.sock", "reads"}}), &f.board,
                       &f.metrics.haproxy);
  pusher.Start();
  REQUIRE(Eventually([&] { return !haproxy.State("r:2").forced_maint(); }));
  haproxy.Restart();  // every server back to `disabled`, then set again at the next resync
  REQUIRE(Eventually(
      [&] {
        return Value(f.metrics.haproxy.restarts, {{"haproxy", "lb1"}}) == 1;
      },
      3000ms));
  REQUIRE(Eventually([&] { return !haproxy.State("r:2").forced_maint(); }, 3000ms));
  CHECK(!haproxy.State("p:1_primary").forced_maint());
  CHECK(Value(f.metrics.haproxy.restarts, {{"haproxy", "lb1"}}) == 1);
  // Counted once HAProxy has answered, a moment after it acted.
  CHECK(Eventually([&] {
    return Value(f.metrics.haproxy.corrections, {{"haproxy", "lb1"}}) >= 2;
  }));
  haproxy.SetByHand("r:2_primary", 0);  // `set server ... state ready` by hand
  REQUIRE(Eventually([&] { return haproxy.State("r:2_primary").forced_maint(); }, 3000ms));
  CHECK(Value(f.metrics.haproxy.restarts, {{"haproxy", "lb1"}}) == 1);
}

TEST_CASE("a record nobody refreshes takes its replica out when it expires") {
  PushFixture f;
  FakeHaproxy haproxy(f.dir.path + "/admin.sock", f.names);
  HaproxyPushOptions o = f.Options({{"lb1", f.dir.path + "/admin.sock", "reads"}});
  o.ttl_ms = 400;
  o.resync_ms = 5000;  // the expiry, not a resync, must do it
  HaproxyPusher pusher(o, &f.board, &f.metrics.haproxy);
  pusher.Start();
  REQUIRE(Eventually([&] { return !haproxy.State("p:1_primary").forced_maint(); }));
  const auto t0 = std::chrono::steady_clock::now();
  f.board.Put(Record("r:2", "ok", true));  // and never again, as from a hung prober
  REQUIRE(Eventually([&] { return !haproxy.State("r:2").forced_maint(); }));
  REQUIRE(Eventually([&] { return haproxy.State("r:2").forced_maint(); }, 3000ms));
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took >= 400ms);
  CHECK(took < 2000ms);  // the expiry, not the resync 5 s away
}

TEST_CASE("garbage, huge, silent and refusing sockets are counted and survived") {
  PushFixture f;
  FakeHaproxy haproxy(f.dir.path + "/admin.sock", f.names);
  f.board.Put(Record("r:2", "ok", true));
  HaproxyPushOptions o = f.Options({{"lb1", f.dir.path + "/admin.sock", "reads"}});
  // For the silent socket (the fake holds it until its mode changes); long enough that the huge
  // reply's 4 MiB are read under TSan on a busy host: 0.3 s on an idle one, and at 1,000 ms the
  // TSan suite once timed out before it was found too big (at 300 ms, more often).
  o.timeout_ms = 2500;
  HaproxyPusher pusher(o, &f.board, &f.metrics.haproxy);
  pusher.Start();
  REQUIRE(Eventually([&] { return !haproxy.State("r:2").forced_maint(); }));
  auto up = [&] { return f.metrics.haproxy.up.Add({{"haproxy", "lb1"}}).Value(); };
  struct Case {
    FakeHaproxy::Mode mode;
    const char* reason;
  };
  for (const Case& c :
       {Case{FakeHaproxy::Mode::kGarbage, "bad_data"}, Case{FakeHaproxy::Mode::kHuge, "bad_data"},
        Case{FakeHaproxy::Mode::kSilent, "timeout"},
        Case{FakeHaproxy::Mode::kRefuse, "server_error"}}) {
    const std::string reason = c.reason;
    CAPTURE(reason);
    const double errors = f.Errors("lb1", c.reason);
    haproxy.SetMode(c.mode);
    // The refusal shows only when there is something to set.
    f.board.Put(Record("r:2", "lagging", false));
    REQUIRE(Eventually([&] { return f.Errors("lb1", c.reason) > errors; }, 5000ms));
    CHECK(up() == 0);
    haproxy.SetMode(FakeHaproxy::Mode::kNormal);
    REQUIRE(Eventually([&] { return up() == 1 && haproxy.State("r:2").forced_maint(); }, 5000ms));
    f.board.Put(Record("r:2", "ok", true));
    REQUIRE(Eventually([&] { return !haproxy.State("r:2").forced_maint(); }, 5000ms));
  }
}

TEST_CASE("an unreachable or hung instance delays no other, and is retried with a backoff") {
  PushFixture f;
  FakeHaproxy good(f.dir.path + "/good.sock", f.names);
  FakeHaproxy hung(f.dir.path + "/hung.sock", f.names);
  hung.SetMode(FakeHaproxy::Mode::kSilent);
  f.board.Put(Record("r:2", "ok", true));
  HaproxyPushOptions o = f.Options({{"gone", f.dir.path + "/nothing.sock", "reads"},
                                    {"hung", f.dir.path + "/hung.sock", "reads"},
                                    {"good", f.dir.path + "/good.sock", "reads"}});
  o.timeout_ms = 1500;  // what the good one would wait for, were it behind the hung one
  HaproxyPusher pusher(o, &f.board, &f.metrics.haproxy);
  pusher.Start();
  REQUIRE(Eventually([&] { return !good.State("r:2").forced_maint(); }));
  const auto t0 = std::chrono::steady_clock::now();
  f.board.Put(Record("r:2", "lagging", false));
  REQUIRE(Eventually([&] { return good.State("r:2").forced_maint(); }));
  CHECK(std::chrono::steady_clock::now() - t0 < 750ms);
  std::this_thread::sleep_for(1600ms);
  CHECK(f.Errors("gone", "unavailable") >= 2);
  CHECK(f.Errors("hung", "timeout") >= 1);
  // 100, 200, 200, ... ms apart (max_backoff_ms 200), each attempt bounded by its deadline: a few
  // in 1.6 s, not hundreds.
  CHECK(f.Errors("gone", "unavailable") <= 16);
  CHECK(hung.connections() <= 3);
}

}  // namespace
}  // namespace lagwatch
