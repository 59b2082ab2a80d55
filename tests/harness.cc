#include "tests/harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <mysql.h>

#include "base/clock.h"
#include "base/http_client.h"
#include "base/strings.h"

namespace lagwatch::test {
namespace {

std::vector<char*> Argv(const std::vector<std::string>& args) {
  std::vector<char*> v;
  for (const auto& a : args) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ExitCode(status);
}

// Its exit code once it has exited within `timeout`; nullopt if it is still running.
std::optional<int> WaitExitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return ExitCode(status);
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// SIGTERM, then SIGKILL if it has not exited within `grace`; waits for it either way.
void Terminate(pid_t pid, std::chrono::milliseconds grace) {
  kill(pid, SIGTERM);
  if (WaitExitFor(pid, grace)) return;
  kill(pid, SIGKILL);
  WaitExit(pid);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text without its line end (a password file's one line).
std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::mutex logins_mu;
std::map<int, RedisLogin>& Logins() {
  static std::map<int, RedisLogin> logins;  // GUARDED_BY(logins_mu)
  return logins;
}

// A connection to 127.0.0.1:port as `login`; fails the test when it cannot be had.
std::unique_ptr<RedisConnection> ConnectAs(int port, const RedisLogin& login) {
  RedisConfig c;
  c.port = port;
  c.username = login.user;
  c.password = login.password;
  c.tls = login.tls;
  auto conn = RedisConnect(c, std::chrono::seconds(2));
  REQUIRE_MESSAGE(conn.ok(), "Redis 127.0.0.1:" << port << ": " << conn.status().ToString());
  return std::move(conn).value();
}

// A sanitizer report, or an agent that did not stop: failures that can come from destructors
// after the test run has ended, when no doctest assertion can record them.
bool failure_outside_assertions = false;

void ExitIfFailureSeen() {
  if (!failure_outside_assertions) return;
  std::cout.flush();
  std::fflush(nullptr);
  _exit(1);
}

// Registered before any test's function-local environment is built, so it runs after their
// destructors (which stop agents) at exit.
[[maybe_unused]] const bool exit_hook_registered = std::atexit(ExitIfFailureSeen) == 0;

// Every report carries one of these: "ERROR: AddressSanitizer:", "ERROR: LeakSanitizer:",
// "WARNING: ThreadSanitizer:", "SUMMARY: UndefinedBehaviorSanitizer:", "x.cc:1:2: runtime error:".
void CheckForSanitizerReport(const std::string& what, const std::string& output) {
  size_t at = std::string::npos;
  for (const char* marker : {"Sanitizer:", ": runtime error: "})
    at = std::min(at, output.find(marker));
  if (at == std::string::npos) return;
  failure_outside_assertions = true;
  size_t line = output.rfind('\n', at);
  std::fprintf(stderr, "harness: sanitizer report in %s:\n%s\n", what.c_str(),
               output.substr(line == std::string::npos ? 0 : line + 1).c_str());
  if (doctest::is_running_in_test) FAIL_CHECK("sanitizer report in " << what);
}

}  // namespace

// Doctest macros only through CheckForSanitizerReport, which checks that a test is running: this
// also runs from destructors after the test run has ended.
const char* LagwatchBinary() {
  static const char* const binary = [] {
    const char* env = std::getenv("LAGWATCH_BINARY");
    return env != nullptr && *env != '\0' ? env : LAGWATCH_BUILT_BINARY;
  }();
  return binary;
}

RunResult RunCommand(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) return {-1, "pipe failed"};
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return {-1, "fork failed"};
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    auto v = Argv(argv);
    execv(v[0], v.data());
    _exit(127);
  }
  close(fds[1]);
  RunResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  r.exit_code = WaitExit(pid);
  CheckForSanitizerReport(argv.front(), r.output);
  return r;
}

Sandbox::Sandbox(std::string dir, int base_port, std::vector<std::string> options)
    : dir_(std::move(dir)), base_port_(base_port) {
  const std::string lock = dir_ + ".lock";
  lock_fd_ = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE_MESSAGE(lock_fd_ >= 0, "cannot open " << lock << ": " << std::strerror(errno));
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    std::cerr << "sandbox " << dir_ << " is in use by another test run (" << lock
              << " is locked); waiting for it\n";
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(15);
    while (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() < until,
                      "another test run held " << lock << " for 15 minutes");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  const std::string script = std::string(LAGWATCH_SOURCE_DIR) + "/scripts/sandbox";
  RunCommand({script, "down", "--dir", dir_, "--base-port", std::to_string(base_port_)});
  std::vector<std::string> up = {script, "up",          "--dir",
                                 dir_,   "--base-port", std::to_string(base_port_)};
  up.insert(up.end(), options.begin(), options.end());
  RunResult r = RunCommand(up);
  INFO(r.output);
  if (r.exit_code != 0) {
    // No destructor runs for a constructor that fails: let go of the lock here, or the next
    // attempt in this process would wait for it for 15 minutes.
    close(lock_fd_);
    FAIL("scripts/sandbox up failed");
  }
  RedisLogin admin;
  admin.password = Trimmed(ReadFile(Env("REDIS_ADMIN_PASSWORD_FILE")));
  admin.tls = ClientTls();
  RegisterRedisAdminLogin(redis_port(), admin);
}

std::string Sandbox::Env(const std::string& var) const {
  std::istringstream in(ReadFile(dir_ + "/env"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(var + "=", 0) == 0) return line.substr(var.size() + 1);
  }
  return "";
}

TlsOptions Sandbox::ClientTls() const {
  TlsOptions tls;
  if (Env("TLS") != "1") return tls;
  tls.enabled = true;
  tls.ca_file = Env("TLS_CA");
  tls.cert_file = Env("TLS_CLIENT_CERT");
  tls.key_file = Env("TLS_CLIENT_KEY");
  return tls;
}

RedisLogin Sandbox::RouterLogin() const {
  return {Env("REDIS_ROUTER_USER"), Trimmed(ReadFile(Env("REDIS_ROUTER_PASSWORD_FILE"))),
          ClientTls()};
}

RedisConfig Sandbox::RouterRedis() const {
  const RedisLogin login = RouterLogin();
  RedisConfig r;
  r.port = redis_port();
  r.username = login.user;
  r.password_file = Env("REDIS_ROUTER_PASSWORD_FILE");
  r.password = login.password;
  r.tls = login.tls;
  return r;
}

Sandbox::~Sandbox() {
  RunCommand({std::string(LAGWATCH_SOURCE_DIR) + "/scripts/sandbox", "down", "--dir", dir_,
              "--base-port", std::to_string(base_port_)});
  close(lock_fd_);  // releases the lock
}

std::optional<std::string> AdminQuery(const std::string& socket, const std::string& sql) {
  MYSQL* m = mysql_init(nullptr);
  REQUIRE(m != nullptr);
  unsigned timeout = 10;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
  if (!mysql_real_connect(m, nullptr, "root", nullptr, nullptr, 0, socket.c_str(), 0)) {
    std::string err = mysql_error(m);
    mysql_close(m);
    FAIL("admin connect to " << socket << " failed: " << err);
  }
  if (mysql_query(m, sql.c_str()) != 0) {
    std::string err = mysql_error(m);
    mysql_close(m);
    FAIL("admin query failed: " << sql << ": " << err);
  }
  std::optional<std::string> out;
  if (MYSQL_RES* res = mysql_store_result(m)) {
    if (MYSQL_ROW row = mysql_fetch_row(res); row && row[0]) out = row[0];
    mysql_free_result(res);
  }
  mysql_close(m);
  return out;
}

AdminSession::AdminSession(const std::string& socket) : mysql_(mysql_init(nullptr)) {
  REQUIRE(mysql_ != nullptr);
  unsigned timeout = 10;
  mysql_options(mysql_, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  if (!mysql_real_connect(mysql_, nullptr, "root", nullptr, nullptr, 0, socket.c_str(), 0)) {
    std::string err = mysql_error(mysql_);
    mysql_close(mysql_);
    mysql_ = nullptr;
    FAIL("admin connect to " << socket << " failed: " << err);
  }
}

AdminSession::~AdminSession() {
  if (mysql_) mysql_close(mysql_);
}

std::optional<std::string> AdminSession::Query(const std::string& sql) {
  if (mysql_query(mysql_, sql.c_str()) != 0)
    FAIL("admin query failed: " << sql << ": " << mysql_error(mysql_));
  std::optional<std::string> out;
  if (MYSQL_RES* res = mysql_store_result(mysql_)) {
    if (MYSQL_ROW row = mysql_fetch_row(res); row && row[0]) out = row[0];
    mysql_free_result(res);
  }
  return out;
}

ExtraServer::ExtraServer(const Sandbox& sandbox, std::string name, int port, int server_id)
    : dir_(sandbox.dir() + "/" + name), port_(port) {
  RunCommand({"/bin/rm", "-rf", dir_});
  RunCommand({"/bin/mkdir", "-p", dir_ + "/tmp"});
  const std::string cnf = dir_ + "/my.cnf";
  std::ofstream(cnf) << "[mysqld]\nuser=root\ndatadir=" << dir_ << "/data\nsocket=" << socket()
                     << "\npid-file=" << dir_ << "/mysqld.pid\nlog-error=" << dir_
                     << "/error.log\ntmpdir=" << dir_ << "/tmp\nport=" << port
                     << "\nbind-address=127.0.0.1\nskip-name-resolve\nperformance_schema=OFF\n"
                     << "innodb_buffer_pool_size=16M\ninnodb_log_file_size=16M\nserver_id="
                     << server_id << "\nlog_bin=" << dir_ << "/binlog\nbinlog_format=ROW\n"
                     << "gtid_strict_mode=1\nrelay_log=" << dir_ << "/relay\nread_only=1\n"
                     << "log_slave_updates=1\nreport_host=127.0.0.1\n";
  RunResult install =
      RunCommand({"/usr/bin/mariadb-install-db", "--defaults-file=" + cnf, "--skip-test-db"});
  INFO(install.output);
  REQUIRE(install.exit_code == 0);
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    if (chdir(dir_.c_str()) != 0) _exit(127);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    for (int fd = 3; fd < 1024; ++fd) close(fd);  // not the sandbox's lock, nor our sockets
    const std::string defaults = "--defaults-file=" + cnf;
    execl("/usr/sbin/mariadbd", "mariadbd", defaults.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const bool up = WaitFor(
      [&] {
        MYSQL* m = mysql_init(nullptr);
        const bool ok =
            mysql_real_connect(m, nullptr, "root", nullptr, nullptr, 0, socket().c_str(), 0);
        mysql_close(m);
        return ok;
      },
      std::chrono::seconds(20));
  REQUIRE_MESSAGE(up, name << " did not start; see " << dir_ << "/error.log");
}

ExtraServer::~ExtraServer() {
  if (pid_ > 0) Terminate(pid_, std::chrono::seconds(10));
}

void ExtraServer::ReplicateFrom(int source_port, const std::string& user,
                                const std::string& password) {
  AdminQuery(socket(), "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=" +
                           std::to_string(source_port) + ", MASTER_USER='" + user +
                           "', MASTER_PASSWORD='" + password +
                           "', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1");
  AdminQuery(socket(), "START SLAVE");
  const bool running = WaitFor(
      [&] {
        AdminSession s(socket());
        return s.Query(
                   "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = "
                   "'Slave_IO' AND STATE LIKE 'Waiting for master%'") == "1";
      },
      std::chrono::seconds(20));
  REQUIRE_MESSAGE(running, "the IO thread of " << dir_ << " did not connect");
}

std::vector<std::string> AdminSession::QueryRow(const std::string& sql) {
  if (mysql_query(mysql_, sql.c_str()) != 0) {
    FAIL("admin query failed: " << sql << ": " << mysql_error(mysql_));
  }
  std::vector<std::string> out;
  if (MYSQL_RES* res = mysql_store_result(mysql_)) {
    if (MYSQL_ROW row = mysql_fetch_row(res)) {
      for (unsigned i = 0; i < mysql_num_fields(res); ++i) out.push_back(row[i] ? row[i] : "");
    }
    mysql_free_result(res);
  }
  return out;
}

std::map<std::string, std::string> AdminSession::QueryNamed(const std::string& sql) {
  if (mysql_query(mysql_, sql.c_str()) != 0) {
    FAIL("admin query failed: " << sql << ": " << mysql_error(mysql_));
  }
  std::map<std::string, std::string> out;
  if (MYSQL_RES* res = mysql_store_result(mysql_)) {
    MYSQL_FIELD* fields = mysql_fetch_fields(res);
    if (MYSQL_ROW row = mysql_fetch_row(res)) {
      for (unsigned i = 0; i < mysql_num_fields(res); ++i) {
        out[fields[i].name] = row[i] ? row[i] : "";
      }
    }
    mysql_free_result(res);
  }
  return out;
}

Agent::Agent(const std::string& config_path, std::string log_path, std::vector<std::string> env)
    : log_path_(std::move(log_path)) {
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    for (auto& e : env) putenv(e.data());
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    dup2(fd, 1);
    const std::vector<std::string> args = {LagwatchBinary(), "--config", config_path};
    auto v = Argv(args);  // points into `args`, which must outlive it
    execv(v[0], v.data());
    _exit(127);
  }
}

RedisServer::RedisServer(std::string dir, int port, std::vector<std::string> args, bool sentinel)
    : dir_(std::move(dir)), port_(port) {
  RunCommand({"/bin/mkdir", "-p", dir_});
  std::vector<std::string> argv = {sentinel ? "/usr/bin/redis-sentinel" : "/usr/bin/redis-server"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!sentinel) {
    argv.insert(argv.end(), {"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
                             dir_, "--logfile", dir_ + "/log"});
  }
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    if (chdir(dir_.c_str()) != 0) _exit(127);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    auto v = Argv(argv);
    execv(v[0], v.data());
    _exit(127);
  }
  const bool up = WaitFor(
      [&] {
        const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port_));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        close(fd);
        return ok;
      },
      std::chrono::seconds(10));
  REQUIRE_MESSAGE(
      up, argv.front() << " on 127.0.0.1:" << port_ << " does not listen; see " << dir_ << "/log");
}

void RedisServer::Stop() {
  if (pid_ <= 0) return;
  Terminate(pid_, std::chrono::seconds(10));
  pid_ = -1;
}

RedisCluster3x2::RedisCluster3x2(std::string dir, int base_port, std::vector<std::string> args,
                                 std::vector<std::string> cli_args, int node_timeout_ms)
    : dir_(std::move(dir)), base_port_(base_port), cli_args_(std::move(cli_args)) {
  RunCommand({"/bin/rm", "-rf", dir_});
  std::vector<std::string> create = {"/usr/bin/redis-cli"};
  create.insert(create.end(), cli_args_.begin(), cli_args_.end());
  create.insert(create.end(), {"--cluster", "create"});
  for (int i = 0; i < 6; ++i) {
    const int port = base_port_ + i;
    const std::string node_dir = dir_ + "/" + std::to_string(port);
    std::vector<std::string> a = {
        "--port", std::to_string(port), "--cluster-enabled", "yes", "--cluster-config-file",
        node_dir + "/nodes.conf", "--cluster-port", std::to_string(port + 40),
        "--cluster-node-timeout", std::to_string(node_timeout_ms),
        // A replica takes over only once it has synced: at once.
        "--repl-diskless-sync-delay", "0",
        // As docs/redis.md asks of a contract store: the other
        // masters' slots stay served, and reads go on while a
        // master's replica takes over.
        "--cluster-require-full-coverage", "no", "--cluster-allow-reads-when-down", "yes"};
    a.insert(a.end(), args.begin(), args.end());
    nodes_.push_back(std::make_unique<RedisServer>(node_dir, port, a));
    create.push_back("127.0.0.1:" + std::to_string(port));
  }
  create.insert(create.end(), {"--cluster-replicas", "1", "--cluster-yes"});
  RunResult made = RunCommand(create);
  REQUIRE_MESSAGE(made.exit_code == 0, made.output);
  // Ready when the cluster is, and every replica has its master's data (a replica that has not
  // synced yet would not take over from a master killed by a test).
  auto synced = [&] {
    for (const auto& n : nodes_) {
      const std::string info = Cli(n->port(), {"INFO", "replication"});
      if (info.find("role:slave") != std::string::npos &&
          info.find("master_link_status:up") == std::string::npos) {
        return false;
      }
    }
    return true;
  };
  REQUIRE_MESSAGE(
      WaitFor([&] { return AllOk() && synced(); }, std::chrono::seconds(30)),
      "the cluster did not reach cluster_state:ok with its replicas synced; see " << dir_);
}

std::vector<Endpoint> RedisCluster3x2::seeds() const {
  std::vector<Endpoint> out;
  for (int i = 0; i < 6; ++i) out.push_back({"127.0.0.1", base_port_ + i});
  return out;
}

std::string RedisCluster3x2::Cli(int port, const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/bin/redis-cli", "-p", std::to_string(port)};
  argv.insert(argv.end(), cli_args_.begin(), cli_args_.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv).output;
}

int RedisCluster3x2::MasterPortOf(const std::string& key, int ask_port) const {
  const int slot = std::stoi(Trimmed(Cli(ask_port, {"CLUSTER", "KEYSLOT", key})));
  // CLUSTER NODES: "<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slots>...",
  // slots as "first-last" or "n" (and "[n->-id]" while migrating).
  std::istringstream in(Cli(ask_port, {"CLUSTER", "NODES"}));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> w;
    for (std::string x; f >> x;) w.push_back(x);
    if (w.size() < 9 || w[2].find("master") == std::string::npos ||
        w[2].find("fail") != std::string::npos) {
      continue;
    }
    const size_t colon = w[1].find(':'), at = w[1].find('@');
    for (size_t i = 8; i < w.size(); ++i) {
      if (w[i].starts_with("[")) continue;
      const size_t dash = w[i].find('-');
      const int first = std::stoi(w[i].substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(w[i].substr(dash + 1));
      if (slot >= first && slot <= last) return std::stoi(w[1].substr(colon + 1, at - colon - 1));
    }
  }
  return 0;
}

void RedisCluster3x2::Kill(int port) {
  for (auto& n : nodes_) {
    if (n->port() == port && n->pid() > 0) {
      ::kill(n->pid(), SIGKILL);
      n->Stop();  // reaps it
    }
  }
}

bool RedisCluster3x2::AllOk() const {
  for (const auto& n : nodes_) {
    if (n->pid() <= 0) continue;
    if (Cli(n->port(), {"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) {
      return false;
    }
  }
  return true;
}

TestPki::TestPki(std::string dir) : dir_(std::move(dir)) { RunCommand({"/bin/mkdir", "-p", dir_}); }

std::string TestPki::Ca(const std::string& name) {
  RunResult r = RunCommand({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", Key(name), "-out",
                            Pem(name), "-days", "30", "-subj", "/CN=" + name});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return Pem(name);
}

std::string TestPki::Cert(const std::string& name, const std::string& ca, const std::string& san,
                          int days, bool expired) {
  const std::string csr = dir_ + "/" + name + ".csr";
  RunResult r = RunCommand({"/usr/bin/openssl", "req", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", Key(name), "-out",
                            csr, "-subj", "/CN=" + name, "-addext", "subjectAltName=" + san});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  if (expired) {
    // `openssl ca` is what can set dates in the past: a throw-away CA database per certificate.
    const std::string db = dir_ + "/" + name + ".db";
    RunCommand({"/bin/mkdir", "-p", db});
    std::ofstream(db + "/index.txt").close();
    std::ofstream(db + "/serial") << "01\n";
    std::ofstream(db + "/ca.cnf")
        << "[ca]\ndefault_ca = d\n[d]\ndir = " << db << "\ndatabase = " << db
        << "/index.txt\nnew_certs_dir = " << db << "\nserial = " << db
        << "/serial\ndefault_md = sha256\npolicy = p\ncopy_extensions = copy\n[p]\n"
        << "commonName = supplied\n";
    r = RunCommand({"/usr/bin/openssl", "ca", "-batch", "-config", db + "/ca.cnf", "-cert", Pem(ca),
                    "-keyfile", Key(ca), "-in", csr, "-out", Pem(name), "-startdate",
                    "20200101000000Z", "-enddate", "20200102000000Z"});
  } else {
    r = RunCommand({"/usr/bin/openssl", "x509", "-req", "-in", csr, "-CA", Pem(ca), "-CAkey",
                    Key(ca), "-CAcreateserial", "-out", Pem(name), "-days", std::to_string(days),
                    "-copy_extensions", "copy"});
  }
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return Pem(name);
}

namespace {

// Where each thread of a process is: its stacks from gdb where it is installed (scripts/deps does
// not install it), else each thread's name, the kernel function it waits in and its system call.
std::string ThreadStacks(pid_t pid) {
  if (access("/usr/bin/gdb", X_OK) == 0) {
    return RunCommand({"/usr/bin/gdb", "-batch", "-nx", "-p", std::to_string(pid), "-ex",
                       "thread apply all bt"})
        .output;
  }
  std::string out;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    const std::string dir = task.path().string();
    out += task.path().filename().string() + " " + std::string(Trim(ReadFile(dir + "/comm"))) +
           ": wchan " + ReadFile(dir + "/wchan") + ", syscall " +
           std::string(Trim(ReadFile(dir + "/syscall"))) + "\n";
  }
  return out;
}

// The watchdog: ctest kills an integration program at its timeout (LAGWATCH_TEST_TIMEOUT_S, which
// tests/CMakeLists.txt sets) and prints only what it wrote, and doctest writes its results at the
// end; 20 s before that, this prints where every thread of the program and of its children (the
// agents) waits. Not started when the program runs without the variable (by hand).
void WatchForTimeout(int64_t timeout_s) {
  const int64_t after_s = std::max<int64_t>(timeout_s - 20, 1);
  std::this_thread::sleep_for(std::chrono::seconds(after_s));
  std::string out = ThreadStacks(getpid());
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::istringstream children(ReadFile(task.path().string() + "/children"));
    for (pid_t child; children >> child;) {
      out += "\nchild " + std::to_string(child) + " (" +
             std::string(Trim(ReadFile("/proc/" + std::to_string(child) + "/comm"))) + "):\n" +
             ThreadStacks(child);
    }
  }
  std::fprintf(stderr,
               "harness: still running %lld s after it started, 20 s before ctest's timeout; "
               "where this program and its children wait:\n%s\n",
               static_cast<long long>(after_s), out.c_str());
  std::fflush(stderr);
}

[[maybe_unused]] const bool watchdog_started = [] {
  const char* env = std::getenv("LAGWATCH_TEST_TIMEOUT_S");
  const auto timeout_s = ParseInt<int64_t>(env != nullptr ? env : "");
  if (!timeout_s || *timeout_s <= 0) return false;
  std::thread(WatchForTimeout, *timeout_s).detach();
  return true;
}();

}  // namespace

int Agent::Stop() {
  if (pid_ < 0) return -1;
  kill(pid_, SIGTERM);
  // Bounded, so that an agent that does not stop fails the test with where its threads are,
  // instead of the test program waiting until ctest kills it with nothing printed (a sanitizer
  // suite's run once ended that way, and nothing said where).
  const auto within = std::chrono::milliseconds(TimeBoundMs(15000));
  std::optional<int> code = WaitExitFor(pid_, within);
  if (!code) {
    const std::string stacks = ThreadStacks(pid_);
    kill(pid_, SIGKILL);
    WaitExit(pid_);
    failure_outside_assertions = true;
    std::fprintf(stderr,
                 "harness: the agent (pid %d, log %s) did not exit within %lld ms of SIGTERM; its "
                 "threads:\n%s\nits log:\n%s\n",
                 static_cast<int>(pid_), log_path_.c_str(), static_cast<long long>(within.count()),
                 stacks.c_str(), Log().c_str());
    if (doctest::is_running_in_test)
      FAIL_CHECK("the agent did not exit within "
                 << within.count() << " ms of SIGTERM (its threads are printed above)");
    code = -1;
  }
  pid_ = -1;
  CheckForSanitizerReport(log_path_, Log());
  return *code;
}

Agent::~Agent() { Stop(); }

std::string Agent::Log() const { return ReadFile(log_path_); }

void RegisterRedisAdminLogin(int port, RedisLogin login) {
  std::lock_guard lock(logins_mu);
  Logins()[port] = std::move(login);
}

RedisLogin RedisAdminLogin(int port) {
  std::lock_guard lock(logins_mu);
  auto it = Logins().find(port);
  return it == Logins().end() ? RedisLogin{} : it->second;
}

RunResult RedisCli(int port, const RedisLogin& login, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env",
                                   "REDISCLI_AUTH=" + login.password,
                                   "/usr/bin/redis-cli",
                                   "--no-auth-warning",
                                   "-h",
                                   "127.0.0.1",
                                   "-p",
                                   std::to_string(port)};
  if (!login.user.empty()) argv.insert(argv.end(), {"--user", login.user});
  if (login.tls.enabled) {
    argv.insert(argv.end(), {"--tls", "--cacert", login.tls.ca_file, "--cert", login.tls.cert_file,
                             "--key", login.tls.key_file});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

Redis::Redis(int port) : Redis(port, RedisAdminLogin(port)) {}

Redis::Redis(int port, const RedisLogin& login) : conn_(ConnectAs(port, login)) {}

Redis::~Redis() = default;

std::map<std::string, std::string> Redis::HGetAll(const std::string& key) {
  RedisReply r = conn_->Run({"HGETALL", key});
  REQUIRE_MESSAGE(r != nullptr, conn_->error().ToString());
  std::map<std::string, std::string> out;
  if (r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      out[ReplyText(*r->element[i])] = ReplyText(*r->element[i + 1]);
    }
  }
  return out;
}

long long Redis::PTtl(const std::string& key) {
  RedisReply r = conn_->Run({"PTTL", key});
  REQUIRE_MESSAGE(r != nullptr, conn_->error().ToString());
  return r->integer;
}

std::vector<std::string> Redis::SMembers(const std::string& key) {
  RedisReply r = conn_->Run({"SMEMBERS", key});
  REQUIRE_MESSAGE(r != nullptr, conn_->error().ToString());
  std::vector<std::string> out;
  for (size_t i = 0; i < r->elements; ++i) out.push_back(ReplyText(*r->element[i]));
  return out;
}

std::string Redis::Command(const std::vector<std::string>& args) {
  RedisReply r = conn_->Run(args);
  REQUIRE_MESSAGE(r != nullptr, conn_->error().ToString());
  std::string out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out = std::to_string(r->integer);
      break;
    case REDIS_REPLY_NIL:
      out = "(nil)";
      break;
    case REDIS_REPLY_ARRAY:
      for (size_t i = 0; i < r->elements; ++i) {
        if (i) out += "\n";
        out.append(r->element[i]->str ? r->element[i]->str : "", r->element[i]->len);
      }
      break;
    default:
      out.assign(r->str, r->len);
  }
  return out;
}

Subscriber::Subscriber(int port, const std::string& channel)
    : conn_(ConnectAs(port, RedisAdminLogin(port))) {
  RedisReply r = conn_->Run({"SUBSCRIBE", channel});
  REQUIRE_MESSAGE(r != nullptr, conn_->error().ToString());
  thread_ = std::thread([this] {
    while (!done_ && conn_->error().ok()) {
      RedisReply m = conn_->Poll(std::chrono::milliseconds(200));
      if (m && m->type == REDIS_REPLY_ARRAY && m->elements == 3) {
        std::lock_guard lock(mu_);
        messages_.push_back(ReplyText(*m->element[2]));
      }
    }
  });
}

Subscriber::~Subscriber() {
  done_ = true;
  thread_.join();
}

std::vector<nlohmann::json> Subscriber::Events() {
  std::lock_guard lock(mu_);
  std::vector<nlohmann::json> out;
  for (const auto& m : messages_) out.push_back(nlohmann::json::parse(m));
  return out;
}

bool ReplicaIs(Redis& redis, const Sandbox& sandbox, int i, const std::string& state,
               const std::string& healthy) {
  return RecordIs(redis.HGetAll(sandbox.replica_key(i)), state, healthy);
}

namespace {
// A record's field, "" when it has none.
std::string Field(const std::map<std::string, std::string>& record, const char* name) {
  auto it = record.find(name);
  return it == record.end() ? std::string() : it->second;
}
}  // namespace

bool RecordIs(const std::map<std::string, std::string>& record, const std::string& state,
              const std::string& healthy) {
  return Field(record, "state") == state && Field(record, "healthy") == healthy;
}

bool BothReplicasOk(Redis& redis, const Sandbox& sandbox) {
  return ReplicaIs(redis, sandbox, 1, "ok", "1") && ReplicaIs(redis, sandbox, 2, "ok", "1");
}

std::string RecordVerdict(const std::map<std::string, std::string>& record) {
  return "state=" + Field(record, "state") + " healthy=" + Field(record, "healthy") +
         " delay_ms=" + Field(record, "delay_ms");
}

std::string ReplicaStates(Redis& redis, const Sandbox& sandbox) {
  std::string out;
  for (int i : {1, 2}) {
    if (!out.empty()) out += "; ";
    out +=
        "replica" + std::to_string(i) + " " + RecordVerdict(redis.HGetAll(sandbox.replica_key(i)));
  }
  return out;
}

bool BothReplicasSettleOk(Redis& redis, const Sandbox& sandbox, std::chrono::milliseconds within) {
  return WaitFor([&] { return BothReplicasOk(redis, sandbox); }, within);
}

std::pair<int, std::string> HttpGet(int port, const std::string& path) {
  HttpTarget target;
  target.host = "127.0.0.1";
  target.port = std::to_string(port);
  HttpRequestOptions request;
  request.path = path;
  request.timeout = std::chrono::seconds(10);
  HttpReply reply = lagwatch::HttpGet(target, request);
  return {reply.code, std::move(reply.body)};
}

int64_t WallMs() { return UnixMillis(std::chrono::system_clock::now()); }

int64_t TimeBoundMs(int64_t ms) {
  static const int64_t scale = [] {
    const char* env = std::getenv("LAGWATCH_TEST_TIME_SCALE");
    const auto parsed = ParseInt<int64_t>(env != nullptr ? env : "");
    return parsed && *parsed >= 1 ? *parsed : 1;
  }();
  return ms * scale;
}

bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string WriteTempFile(const std::string& dir, const std::string& name,
                          const std::string& text) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace lagwatch::test

namespace lagwatch::test {
namespace {
// A series' name and its labels, from `name{a="x",b="y"}` (the part before any value).
std::pair<std::string, std::map<std::string, std::string>> SplitSeries(std::string_view s) {
  std::map<std::string, std::string> labels;
  const size_t brace = s.find('{');
  const std::string name(s.substr(0, brace == std::string_view::npos ? s.find(' ') : brace));
  if (brace == std::string_view::npos) return {name, labels};
  size_t i = brace + 1;
  while (i < s.size() && s[i] != '}') {
    const size_t eq = s.find("=\"", i);
    if (eq == std::string_view::npos) break;
    std::string value;
    size_t j = eq + 2;
    for (; j < s.size() && s[j] != '"'; ++j) {
      if (s[j] == '\\' && j + 1 < s.size()) ++j;
      value += s[j];
    }
    labels[std::string(s.substr(i, eq - i))] = value;
    i = j + 1;
    if (i < s.size() && s[i] == ',') ++i;
  }
  return {name, labels};
}
}  // namespace

std::optional<double> MetricValue(const std::string& exposition, const std::string& series) {
  const auto [name, wanted] = SplitSeries(series);
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind(name, 0) != 0) continue;
    const auto [line_name, labels] = SplitSeries(line);
    if (line_name != name) continue;  // a longer metric name
    bool all = true;
    for (const auto& [k, v] : wanted) {
      auto it = labels.find(k);
      if (it == labels.end() || it->second != v) all = false;
    }
    if (!all) continue;
    size_t sp = line.rfind(' ');
    return std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return std::nullopt;
}
}  // namespace lagwatch::test

namespace lagwatch::test {
pid_t ReadPidFile(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

void SandboxUp(const Sandbox& sandbox) {
  RunResult up = RunCommand({std::string(LAGWATCH_SOURCE_DIR) + "/scripts/sandbox", "up", "--dir",
                             sandbox.dir(), "--base-port", std::to_string(sandbox.primary_port())});
  INFO(up.output);
  REQUIRE(up.exit_code == 0);
}
}  // namespace lagwatch::test
