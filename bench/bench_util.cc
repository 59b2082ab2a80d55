#include "bench/bench_util.h"

#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <hiredis/hiredis.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "base/http_client.h"
#include "base/redis_pipeline.h"
#include "base/secret_file.h"

namespace lagwatch::bench {
namespace {

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");

void OnSignal(int) { g_interrupted.store(true); }

const int64_t g_start_us = NowUs();

// argv as the char* array execvp wants; points into `args`, which must outlive it.
std::vector<char*> Argv(const std::vector<std::string>& args) {
  std::vector<char*> v;
  v.reserve(args.size() + 1);
  for (const auto& a : args) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

// In a freshly forked child, before exec: only async-signal-safe calls.
void PrepareChild(pid_t parent, bool new_group) {
  if (new_group) setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  // Undo what the parent set up for itself.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Forks a child in a process group of its own that runs argv[0] (a path or a name looked up in
// PATH) with stdout and stderr on `out_fd` and, if `null_stdin`, stdin from /dev/null. Returns
// its PID, or -1 if fork failed.
pid_t ForkExec(const std::vector<std::string>& argv, int out_fd, bool null_stdin) {
  auto args = Argv(argv);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  PrepareChild(parent, /*new_group=*/true);
  if (null_stdin) dup2(open("/dev/null", O_RDONLY), 0);
  dup2(out_fd, 1);
  dup2(out_fd, 2);
  execvp(args[0], args.data());
  _exit(127);
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// True once no thread of `pid` can run: each is stopped (T), traced (t), or gone (Z, X).
bool AllThreadsStopped(pid_t pid) {
  std::error_code ec;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& e : std::filesystem::directory_iterator(task, ec)) {
    const std::string stat = ReadFile(e.path().string() + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) continue;  // the thread is gone
    if (std::string("TtZX").find(stat[paren + 2]) == std::string::npos) return false;
  }
  return !ec;
}

}  // namespace

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string IsoUtc(int64_t unix_us) {
  time_t secs = static_cast<time_t>(unix_us / 1'000'000);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

int64_t StartUs() { return g_start_us; }

void Progress(const std::string& msg) {
  std::fprintf(stderr, "[%6.1fs] %s\n", static_cast<double>(NowUs() - g_start_us) / 1e6,
               msg.c_str());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

size_t CountSubstr(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string LoadAverage() {
  std::istringstream in(ReadFile("/proc/loadavg"));
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

void WriteResults(const std::string& base, const nlohmann::json& results,
                  const std::function<std::string(const nlohmann::json&)>& markdown,
                  const std::function<std::string(const nlohmann::json&)>& text) {
  std::ofstream(base + ".json") << results.dump(2) << "\n";
  std::ofstream(base + ".md") << markdown(results);
  std::cout << text(results) << std::flush;
  Progress("wrote " + base + ".json and " + base + ".md");
}

bool Interrupted() { return g_interrupted.load(); }

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void PauseUntil(std::chrono::steady_clock::time_point deadline) {
  constexpr auto kSlice = std::chrono::milliseconds(20);
  for (;;) {
    if (Interrupted()) throw InterruptedError();
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return;
    std::this_thread::sleep_until(std::min(deadline, now + kSlice));
  }
}

void Pause(std::chrono::milliseconds d) { PauseUntil(std::chrono::steady_clock::now() + d); }

// ---------------------------------------------------------------------------------------------
// SQL

std::optional<std::string> SqlResult::Get(const std::string& column) const {
  if (rows.empty()) return std::nullopt;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == column) return i < rows[0].size() ? rows[0][i] : std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> SqlResult::First() const {
  if (rows.empty() || rows[0].empty()) return std::nullopt;
  return rows[0][0];
}

Sql::Sql(std::string socket, unsigned timeout_s)
    : socket_(std::move(socket)), timeout_s_(timeout_s) {}

Sql::Sql(Tcp tcp, unsigned timeout_s)
    : socket_(tcp.host + ":" + std::to_string(tcp.port)),
      tcp_(std::move(tcp)),
      timeout_s_(timeout_s) {}

Sql::~Sql() { Disconnect(); }

void Sql::Disconnect() {
  if (conn_) mysql_close(conn_);
  conn_ = nullptr;
}

bool Sql::Connect() {
  if (conn_) return true;
  conn_ = mysql_init(nullptr);
  if (!conn_) {
    error_ = "mysql_init failed";
    return false;
  }
  mysql_options(conn_, MYSQL_OPT_CONNECT_TIMEOUT, &timeout_s_);
  mysql_options(conn_, MYSQL_OPT_READ_TIMEOUT, &timeout_s_);
  mysql_options(conn_, MYSQL_OPT_WRITE_TIMEOUT, &timeout_s_);
  const bool connected =
      tcp_ ? mysql_real_connect(conn_, tcp_->host.c_str(), tcp_->user.c_str(),
                                tcp_->password.c_str(), nullptr, static_cast<unsigned>(tcp_->port),
                                nullptr, 0) != nullptr
           : mysql_real_connect(conn_, nullptr, "root", nullptr, nullptr, 0, socket_.c_str(), 0) !=
                 nullptr;
  if (!connected) {
    error_ = "connect to " + socket_ + ": " + mysql_error(conn_);
    errno_ = mysql_errno(conn_);
    Disconnect();
    return false;
  }
  return true;
}

std::optional<SqlResult> Sql::Query(const std::string& sql) {
  if (!Connect()) return std::nullopt;
  if (mysql_real_query(conn_, sql.data(), sql.size()) != 0) {
    error_ = sql + ": " + mysql_error(conn_);
    errno_ = mysql_errno(conn_);
    Disconnect();
    return std::nullopt;
  }
  SqlResult out;
  MYSQL_RES* res = mysql_store_result(conn_);
  if (!res) {
    if (mysql_field_count(conn_) != 0) {
      error_ = sql + ": " + mysql_error(conn_);
      errno_ = mysql_errno(conn_);
      Disconnect();
      return std::nullopt;
    }
    last_insert_id_ = mysql_insert_id(conn_);
    return out;
  }
  const unsigned n = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  for (unsigned i = 0; i < n; ++i) out.columns.emplace_back(fields[i].name);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    unsigned long* lengths = mysql_fetch_lengths(res);
    std::vector<std::optional<std::string>> r(n);
    for (unsigned i = 0; i < n; ++i) {
      if (row[i]) r[i] = std::string(row[i], lengths[i]);
    }
    out.rows.push_back(std::move(r));
  }
  mysql_free_result(res);
  return out;
}

SqlResult AdminQuery(const std::string& socket, const std::string& sql) {
  Sql conn(socket);
  auto r = conn.Query(sql);
  if (!r) throw std::runtime_error(conn.error());
  return std::move(*r);
}

// ---------------------------------------------------------------------------------------------
// The sandbox's logins

SandboxEnv::SandboxEnv(std::string dir) : dir_(std::move(dir)), text_(ReadFile(dir_ + "/env")) {
  if (text_.empty()) {
    throw std::runtime_error("no " + dir_ + "/env: is a sandbox up there (scripts/sandbox up)?");
  }
}

std::string SandboxEnv::Get(const std::string& var) const {
  std::istringstream in(text_);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(var + "=")) return line.substr(var.size() + 1);
  }
  throw std::runtime_error(dir_ + "/env has no " + var +
                           " (made by an older scripts/sandbox? run it down and up again)");
}

bool SandboxEnv::Tls() const { return Get("TLS") == "1"; }

TlsOptions SandboxEnv::ClientTls() const {
  TlsOptions tls;
  if (!Tls()) return tls;
  tls.enabled = true;
  tls.ca_file = Get("TLS_CA");
  tls.cert_file = Get("TLS_CLIENT_CERT");
  tls.key_file = Get("TLS_CLIENT_KEY");
  return tls;
}

RedisConfig SandboxRedis(const SandboxEnv& env, RedisUser who) {
  RedisConfig c;
  c.host = "127.0.0.1";
  c.port = std::atoi(env.Get("REDIS_PORT").c_str());
  if (who == RedisUser::kRouter) c.username = env.Get("REDIS_ROUTER_USER");
  c.password_file = env.Get(who == RedisUser::kAdmin ? "REDIS_ADMIN_PASSWORD_FILE"
                                                     : "REDIS_ROUTER_PASSWORD_FILE");
  auto password = ReadSecretLine("the sandbox's Redis password", c.password_file);
  if (!password.ok()) throw std::runtime_error(password.status().ToString());
  c.password = *password;
  c.key_prefix = "slave_delay";
  c.ttl_ms = 1000;
  c.tls = env.ClientTls();
  return c;
}

RedisConfig SandboxRedis(const std::string& dir, RedisUser who) {
  return SandboxRedis(SandboxEnv(dir), who);
}

// ---------------------------------------------------------------------------------------------
// Redis

namespace {

// A reply that is not the one expected, for a message: Redis's error text (NOAUTH, NOPERM, ...).
std::string Describe(const redisReply& r) {
  if (r.type == REDIS_REPLY_ERROR || r.type == REDIS_REPLY_STATUS) return ReplyText(r);
  return "unexpected reply of type " + std::to_string(r.type);
}

}  // namespace

Redis::Redis(RedisConfig config) : config_(std::move(config)) {}

Redis::~Redis() = default;

void Redis::Fail(std::string why) {
  last_error_ = std::move(why);
  conn_.reset();
}

bool Redis::Connect() {
  if (conn_) return true;
  auto conn = RedisConnect(config_, std::chrono::milliseconds(2000));
  if (!conn.ok()) {
    Fail(conn.status().ToString());
    return false;
  }
  conn_ = std::move(*conn);
  return true;
}

std::optional<std::vector<std::map<std::string, std::string>>> Redis::HGetAll(
    const std::vector<std::string>& keys) {
  if (!Connect()) return std::nullopt;
  for (const auto& k : keys) conn_->Append({"HGETALL", k});
  std::vector<std::map<std::string, std::string>> out(keys.size());
  std::string error;
  for (size_t i = 0; i < keys.size(); ++i) {
    RedisReply r = conn_->Next();
    if (!r) {
      Fail(conn_->error().ToString());
      return std::nullopt;
    }
    if (r->type == REDIS_REPLY_ARRAY) {
      for (size_t j = 0; j + 1 < r->elements; j += 2) {
        out[i][ReplyText(*r->element[j])] = ReplyText(*r->element[j + 1]);
      }
    } else if (error.empty()) {  // read the other replies: the connection stays in step
      error = "HGETALL " + keys[i] + ": " + Describe(*r);
    }
  }
  if (!error.empty()) {  // a refusal (NOAUTH, NOPERM): the connection itself is fine
    last_error_ = std::move(error);
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> Redis::Info(const std::string& section) {
  if (!Connect()) return std::nullopt;
  RedisReply r = conn_->Run({"INFO", section});
  if (!r) {
    Fail(conn_->error().ToString());
    return std::nullopt;
  }
  if (r->type != REDIS_REPLY_STRING) {
    Fail("INFO " + section + ": " + Describe(*r));
    return std::nullopt;
  }
  return ReplyText(*r);
}

// ---------------------------------------------------------------------------------------------
// HTTP

HttpResult HttpGet(int port, const std::string& path, std::chrono::milliseconds timeout) {
  HttpTarget target;
  target.host = "127.0.0.1";
  target.port = std::to_string(port);
  HttpRequestOptions request;
  request.path = path;
  request.timeout = timeout;
  HttpResult res;
  const auto start = std::chrono::steady_clock::now();
  res.sent_us = NowUs();  // as before: taken before connecting, which on loopback costs nothing
  HttpReply reply = lagwatch::HttpGet(target, request);
  res.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  res.status = reply.code;
  res.body = std::move(reply.body);
  res.error = std::move(reply.error);
  return res;
}

// ---------------------------------------------------------------------------------------------
// Child processes

std::unique_ptr<Child> Child::Spawn(const std::vector<std::string>& argv,
                                    const std::string& log_path) {
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) throw std::runtime_error("cannot open " + log_path);
  const pid_t pid = ForkExec(argv, log_fd, /*null_stdin=*/true);
  close(log_fd);
  if (pid < 0) throw std::runtime_error("fork failed for " + argv[0]);
  return std::unique_ptr<Child>(new Child(pid, -1, argv[0]));
}

std::unique_ptr<Child> Child::SpawnOnPty(const std::vector<std::string>& argv) {
  auto args = Argv(argv);
  termios raw{};
  cfmakeraw(&raw);  // no echo, no "\n" -> "\r\n"
  const pid_t parent = getpid();
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, &raw, nullptr);
  if (pid < 0) throw std::runtime_error("forkpty failed for " + argv[0]);
  if (pid == 0) {
    // forkpty made us a session (and group) leader on the new terminal.
    PrepareChild(parent, /*new_group=*/false);
    execvp(args[0], args.data());
    _exit(127);
  }
  fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
  fcntl(master, F_SETFD, FD_CLOEXEC);
  return std::unique_ptr<Child>(new Child(pid, master, argv[0]));
}

Child::~Child() {
  Stop();
  if (pty_fd_ >= 0) close(pty_fd_);
}

bool Child::Reap(bool block) {
  if (exit_code_) return true;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid_, &status, block ? 0 : WNOHANG);
    if (r == pid_) {
      exit_code_ = DecodeStatus(status);
      return true;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {  // not our child any more (cannot happen); do not signal the PID again
      exit_code_ = -1;
      return true;
    }
    return false;
  }
}

bool Child::Running() { return !Reap(false); }

std::optional<int> Child::Wait(std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (!Reap(false)) {
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exit_code_;
}

int Child::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return -1;
  if (!Reap(false)) {
    if (grace > std::chrono::milliseconds(0)) kill(pid_, SIGTERM);
    auto until = std::chrono::steady_clock::now() + grace;
    while (!Reap(false) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!Reap(false)) {
      kill(pid_, SIGKILL);
      Reap(true);
    }
  }
  return *exit_code_;
}

// ---------------------------------------------------------------------------------------------
// Sandbox servers

pid_t SandboxServerPid(const std::string& dir, const std::string& name) {
  const bool redis = name == "redis";
  const std::string server = dir + "/" + name;
  const std::string pid_file = server + (redis ? "/redis.pid" : "/mysqld.pid");
  const pid_t pid = static_cast<pid_t>(std::atoi(ReadFile(pid_file).c_str()));
  const std::string want_cwd = redis ? server : server + "/data";
  std::error_code ec;
  auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec);
  if (pid <= 0 || ec || cwd != want_cwd) {
    throw std::runtime_error(name + ": no live server of this sandbox behind " + pid_file);
  }
  return pid;
}

Frozen::Frozen(pid_t pid) : pid_(pid) {
  if (kill(pid_, SIGSTOP) != 0) throw std::runtime_error("cannot SIGSTOP " + std::to_string(pid));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!AllThreadsStopped(pid_)) {
    if (std::chrono::steady_clock::now() >= until) {
      kill(pid_, SIGCONT);
      throw std::runtime_error("process " + std::to_string(pid) + " not stopped 2 s after SIGSTOP");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  stopped_us_ = NowUs();
}

Frozen::~Frozen() { kill(pid_, SIGCONT); }

CommandResult RunCommand(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {-1, "pipe failed"};
  const pid_t pid = ForkExec(argv, fds[1], /*null_stdin=*/false);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return {-1, "fork failed"};
  }
  CommandResult r;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      r.output.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = DecodeStatus(status);
  return r;
}

std::string CommandVersion(const std::vector<std::string>& argv) {
  CommandResult r = RunCommand(argv);
  std::string first = Trim(r.output.substr(0, r.output.find('\n')));
  return r.exit_code == 0 ? first : "unknown (" + first + ")";
}

int RunBenchmarkMain(const std::string& program, const std::function<int()>& run) {
  InstallSignalHandlers();
  mysql_library_init(0, nullptr, nullptr);
  int rc = 1;
  try {
    rc = run();
  } catch (const InterruptedError&) {
    std::cerr << program << ": interrupted; stopped everything it started\n";
    rc = 130;
  } catch (const std::exception& e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    rc = 1;
  }
  mysql_library_end();
  return rc;
}

}  // namespace lagwatch::bench
