// HTTP security against a real sandbox and the real binary: basic auth (401 without or with wrong
// credentials, 200 with the right ones, probes open), TLS with a self-signed certificate made by
// the openssl CLI (plain HTTP and TLS 1.1 refused), bad web configs refused at start naming the
// key, malformed, oversized and stalled requests that leave the agent serving, and `lagwatch
// status` against a protected agent.
#include <arpa/inet.h>
#include <crypt.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "base/test_socket.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kDir = "/tmp/lw-hs";
constexpr int kBasePort = 27806;  // sandbox 27806..27809, agent HTTP on 27810
const std::string kUser = "prometheus";
const std::string kPassword = "correct horse battery staple";

struct Env {
  Sandbox sandbox{kDir, kBasePort};
};

Env& E() {
  static Env env;
  return env;
}

int Port() { return E().sandbox.http_port(); }

// A bcrypt hash as `htpasswd -nBC 10` makes (cost 10: the realistic price of the first check).
std::string Hash(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2y$", 10, nullptr, 0, salt, sizeof salt) != nullptr);
  crypt_data data{};
  const char* h = crypt_rn(password.c_str(), salt, &data, sizeof data);
  REQUIRE(h != nullptr);
  return h;
}

std::string Base64(const std::string& s) {
  static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < s.size(); i += 3) {
    uint32_t v = uint8_t(s[i]) << 16;
    if (i + 1 < s.size()) v |= uint8_t(s[i + 1]) << 8;
    if (i + 2 < s.size()) v |= uint8_t(s[i + 2]);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < s.size() ? kB64[(v >> 6) & 63] : '=';
    out += i + 2 < s.size() ? kB64[v & 63] : '=';
  }
  return out;
}

std::string BasicHeader(const std::string& user, const std::string& password) {
  return "Authorization: Basic " + Base64(user + ":" + password) + "\r\n";
}

// A connection to the agent's HTTP port on loopback, or -1.
int Connect(int port) { return test::ConnectLoopback(port); }

// Sends `request` over plain TCP (as much as the server takes) and reads until the server closes
// or `timeout` passes. Returns what came back ("" if nothing).
std::string Exchange(int port, const std::string& request, std::chrono::milliseconds timeout) {
  int fd = Connect(port);
  if (fd < 0) return "";
  const auto until = Clock::now() + timeout;
  size_t sent = 0;
  std::string resp;
  fcntl(fd, F_SETFL, O_NONBLOCK);
  while (Clock::now() < until) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < request.size() ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 50) <= 0) continue;
    if ((p.revents & POLLOUT) && sent < request.size()) {
      ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN) sent = request.size();  // the server closed; read what it said
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      resp.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return resp;
}

int CodeOf(const std::string& resp) {
  return resp.rfind("HTTP/1.", 0) == 0 && resp.size() > 12 ? std::atoi(resp.c_str() + 9) : 0;
}

// GET over plain HTTP with optional extra header lines; returns {code, whole response}.
std::pair<int, std::string> Get(const std::string& path, const std::string& headers = "") {
  std::string resp =
      Exchange(Port(), "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" + headers + "\r\n", 10s);
  return {CodeOf(resp), resp};
}

std::pair<int, std::string> AuthedGet(const std::string& path,
                                      std::chrono::milliseconds timeout = 10s) {
  std::string resp = Exchange(
      Port(),
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" + BasicHeader(kUser, kPassword) + "\r\n",
      timeout);
  return {CodeOf(resp), resp};
}

// curl with `args`; returns {HTTP code (0 when no HTTP answer), body}.
std::pair<int, std::string> Curl(std::vector<std::string> args) {
  std::vector<std::string> argv = {"/usr/bin/curl", "-s", "-m", "10", "-w", "\n%{http_code}"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunCommand(argv);
  auto nl = r.output.rfind('\n');
  if (nl == std::string::npos) return {0, r.output};
  return {std::atoi(r.output.c_str() + nl + 1), r.output.substr(0, nl)};
}

std::string Https(const std::string& path) {
  return "https://127.0.0.1:" + std::to_string(Port()) + path;
}

// The sandbox's lagwatch.json with `http` settings merged in, written to kDir/NAME.
std::string WriteConfig(const std::string& name, const json& http) {
  std::ifstream in(E().sandbox.config_path());
  json c = json::parse(in, nullptr, true, true);
  for (auto& [k, v] : http.items()) c["http"][k] = v;
  return WriteTempFile(kDir, name, c.dump(2));
}

std::string WriteWebConfig(const std::string& name, const std::string& yaml) {
  E();  // the sandbox (re)creates kDir
  return WriteTempFile(kDir, name, yaml);
}

std::string UsersYaml() { return "basic_auth_users:\n  " + kUser + ": " + Hash(kPassword) + "\n"; }

bool Alive(const Agent& agent) { return kill(agent.pid(), 0) == 0; }

std::optional<double> AuthFailures(const std::string& reason) {
  return MetricValue(AuthedGet("/metrics").second,
                     "lagwatch_http_auth_failures_total{reason=\"" + reason + "\"}");
}

TEST_CASE("basic auth: /metrics and /api answer 401 without or with wrong credentials, 200 with") {
  const std::string web = WriteWebConfig("web-auth.yml", UsersYaml());
  const std::string config =
      WriteConfig("auth.json",
                  {{"web_config_file", web}, {"request_timeout_ms", 1000}, {"max_connections", 4}});
  Agent agent(config, kDir + "/agent-auth.log");
  REQUIRE(WaitFor([] { return Get("/healthz").first == 200; }, 10s));

  for (const std::string path : {"/metrics", "/api/v1/replicas", "/api/v1/primary", "/nope"}) {
    CAPTURE(path);
    auto none = Get(path);
    CHECK(none.first == 401);
    CHECK(none.second.find("WWW-Authenticate: Basic realm=\"lagwatch\"") != std::string::npos);
    CHECK(Get(path, BasicHeader(kUser, "wrong")).first == 401);
    CHECK(Get(path, BasicHeader("nobody", kPassword)).first == 401);
    CHECK(Get(path, BasicHeader(kUser, "")).first == 401);
    CHECK(Get(path, "Authorization: Basic !!!\r\n").first == 401);
    CHECK(Get(path, "Authorization: Bearer abc\r\n").first == 401);
    CHECK(AuthedGet(path).first == (path == "/nope" ? 404 : 200));
  }
  auto replicas = AuthedGet("/api/v1/replicas");
  CHECK(replicas.second.find("\"replicas\"") != std::string::npos);
  CHECK(AuthedGet("/metrics").second.find("lagwatch_build_info") != std::string::npos);
  // curl's -u builds the header the way Prometheus does.
  const std::string url = "http://127.0.0.1:" + std::to_string(Port()) + "/metrics";
  CHECK(Curl({"-o", "/dev/null", url}).first == 401);
  CHECK(Curl({"-o", "/dev/null", "-u", kUser + ":" + kPassword, url}).first == 200);

  // Probes stay open; other methods are refused after authentication.
  CHECK(Get("/healthz").first == 200);
  CHECK(WaitFor([] { return Get("/readyz").first == 200; }, 20s));
  CHECK(Exchange(Port(), "POST /metrics HTTP/1.0\r\n" + BasicHeader(kUser, kPassword) + "\r\n", 5s)
            .rfind("HTTP/1.1 405", 0) == 0);

  CHECK(AuthFailures("missing") >= 4);
  CHECK(AuthFailures("malformed") >= 8);
  CHECK(AuthFailures("bad_credentials") >= 12);
  CHECK(Alive(agent));
  const std::string log = agent.Log();
  CHECK(log.find("refused GET") != std::string::npos);
  CHECK(log.find(kPassword) == std::string::npos);
  CHECK(log.find(Base64(kUser + ":" + kPassword)) == std::string::npos);
}

TEST_CASE("malformed, oversized and stalled requests are refused and the agent keeps serving") {
  const std::string web = WriteWebConfig("web-auth.yml", UsersYaml());
  const std::string config = WriteConfig("abuse.json", {{"web_config_file", web},
                                                        {"request_timeout_ms", 1000},
                                                        {"max_connections", 4},
                                                        {"max_request_bytes", 8192}});
  Agent agent(config, kDir + "/agent-abuse.log");
  REQUIRE(WaitFor([] { return Get("/healthz").first == 200; }, 10s));

  std::string random(4096, '\0');
  for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<char>((i * 7919 + 13) % 256);
  struct Case {
    const char* what;
    std::string request;
  };
  const std::vector<Case> cases = {
      {"garbage bytes", random},
      {"NUL bytes", std::string(100, '\0') + "\r\n\r\n"},
      {"bad request line", "GET\r\n\r\n"},
      {"unknown HTTP version", "GET /metrics HTTP/9.9\r\n\r\n"},
      {"header without colon", "GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n"},
      {"header larger than max_request_bytes",
       "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(100'000, 'a') + "\r\n\r\n"},
      {"a thousand headers", "GET /healthz HTTP/1.1\r\n" +
                                 [] {
                                   std::string h;
                                   for (int i = 0; i < 1000; ++i)
                                     h += "X-" + std::to_string(i) + ": v\r\n";
                                   return h;
                                 }() +
                                 "\r\n"},
      {"huge Authorization header",
       "GET /metrics HTTP/1.1\r\nAuthorization: Basic " + std::string(7000, 'A') + "\r\n\r\n"},
      {"huge body announced and partly sent",
       "POST /metrics HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\n" + std::string(1 << 20, 'b')},
      {"negative Content-Length", "GET /healthz HTTP/1.1\r\nContent-Length: -5\r\n\r\n"},
      {"bad chunked body",
       "POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzzzz\r\nxx\r\n"},
      {"request cut short", "GET /metrics HTTP/1.1\r\nHost: x"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::string resp = Exchange(Port(), c.request, 5s);
    const int code = CodeOf(resp);
    // An HTTP error, or a connection closed without an answer; never a success for the
    // protected path, never a dead agent.
    CHECK((code == 0 || code >= 400 || c.request.rfind("GET /healthz", 0) == 0));
    REQUIRE(Alive(agent));
    CHECK(AuthedGet("/metrics").first == 200);
  }

  // More connections held open without a byte than there are workers and queue places: each
  // worker gives its connection up after request_timeout_ms, so a real request still gets in.
  // 24 connections: 4 workers and 16 queue places taken, 4 more in the kernel's backlog; they
  // are worked off 4 per second, so the real request, last in line, gets in after about 6 s.
  std::vector<int> held;
  for (int i = 0; i < 24; ++i) {
    int fd = Connect(Port());
    if (fd >= 0) held.push_back(fd);
  }
  CHECK(held.size() == 24);
  const auto t0 = Clock::now();
  CHECK(AuthedGet("/metrics", 30s).first == 200);
  CHECK(Clock::now() - t0 < 20s);
  for (int fd : held) close(fd);
  CHECK(WaitFor([] { return AuthedGet("/metrics").first == 200; }, 5s));
  CHECK(Get("/healthz").first == 200);
  CHECK(Alive(agent));
  CHECK(agent.Stop() == 0);  // a clean exit, not a crash
}

// A self-signed certificate and its key in kDir (NAME.crt, NAME.key), by default for 127.0.0.1.
std::string MakeCert(const std::string& name = "tls", const std::string& cn = "127.0.0.1",
                     const std::string& san = "IP:127.0.0.1") {
  E();
  const std::string cert = kDir + "/" + name + ".crt";
  auto made = RunCommand({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                          "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                          kDir + "/" + name + ".key", "-out", cert, "-days", "2", "-subj",
                          "/CN=" + cn, "-addext", "subjectAltName=" + san});
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  return cert;
}

TEST_CASE("TLS: https with basic auth works, plain HTTP is refused, min_version holds") {
  const std::string cert = MakeCert();
  // Relative names: resolved next to the web config file.
  const std::string web = WriteWebConfig(
      "web-tls.yml",
      "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n" + UsersYaml());
  const std::string config =
      WriteConfig("tls.json", {{"web_config_file", web}, {"request_timeout_ms", 1000}});
  Agent agent(config, kDir + "/agent-tls.log");
  REQUIRE(WaitFor([&] { return Curl({"--cacert", cert, Https("/healthz")}).first == 200; }, 10s));

  const std::string creds = kUser + ":" + kPassword;
  for (const std::string path : {"/metrics", "/api/v1/replicas"}) {
    CAPTURE(path);
    CHECK(Curl({"--cacert", cert, "-o", "/dev/null", Https(path)}).first == 401);
    CHECK(Curl({"--cacert", cert, "-o", "/dev/null", "-u", kUser + ":nope", Https(path)}).first ==
          401);
    CHECK(Curl({"--cacert", cert, "-o", "/dev/null", "-u", creds, Https(path)}).first == 200);
  }
  CHECK(
      Curl({"--cacert", cert, "-u", creds, Https("/metrics")}).second.find("lagwatch_build_info") !=
      std::string::npos);
  // The certificate is checked: without trusting it curl refuses.
  CHECK(Curl({"-o", "/dev/null", Https("/healthz")}).first == 0);
  CHECK(Curl({"--cacert", cert, "--tls-max", "1.2", "-o", "/dev/null", "-u", creds,
              Https("/metrics")})
            .first == 200);

  // Plain HTTP on the TLS port gets no HTTP answer; garbage neither; the agent carries on.
  CHECK(CodeOf(Exchange(Port(), "GET /metrics HTTP/1.0\r\n\r\n", 5s)) == 0);
  CHECK(
      Curl({"-o", "/dev/null", "http://127.0.0.1:" + std::to_string(Port()) + "/healthz"}).first ==
      0);
  CHECK(CodeOf(Exchange(Port(), std::string(5000, '\x16'), 5s)) == 0);
  CHECK(Curl({"--cacert", cert, "-o", "/dev/null", "-u", creds, Https("/metrics")}).first == 200);
  // Connections that never start the handshake are dropped after request_timeout_ms too.
  std::vector<int> held;
  for (int i = 0; i < 8; ++i) held.push_back(Connect(Port()));
  const auto t0 = Clock::now();
  CHECK(Curl({"--cacert", cert, "-o", "/dev/null", "-u", creds, Https("/metrics")}).first == 200);
  CHECK(Clock::now() - t0 < 8s);
  for (int fd : held) close(fd);
  CHECK(Alive(agent));
  CHECK(agent.Log().find("metrics on https://") != std::string::npos);
  CHECK(agent.Stop() == 0);

  const std::string web13 = WriteWebConfig(
      "web-tls13.yml",
      "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n  min_version: TLS13\n");
  Agent agent13(WriteConfig("tls13.json", {{"web_config_file", web13}}), kDir + "/agent-tls13.log");
  REQUIRE(WaitFor([&] { return Curl({"--cacert", cert, Https("/healthz")}).first == 200; }, 10s));
  CHECK(Curl({"--cacert", cert, "--tls-max", "1.2", "-o", "/dev/null", Https("/metrics")}).first ==
        0);
  CHECK(Curl({"--cacert", cert, "--tlsv1.3", "-o", "/dev/null", Https("/metrics")}).first == 200);
  CHECK(agent13.Stop() == 0);
}

TEST_CASE("a bad web config stops the agent at start naming http.web_config_file") {
  const std::string bad_hash = WriteWebConfig("web-bad.yml", "basic_auth_users:\n  a: plain\n");
  for (const std::string flag : {"--check-config", "--config"}) {
    auto r = RunCommand(
        {LagwatchBinary(), flag, WriteConfig("bad.json", {{"web_config_file", bad_hash}})});
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("http.web_config_file: " + bad_hash +
                        ": basic_auth_users.a: not a bcrypt hash") != std::string::npos);
  }
  auto missing = RunCommand({LagwatchBinary(), "--check-config",
                             WriteConfig("missing.json", {{"web_config_file", kDir + "/no.yml"}})});
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("http.web_config_file: " + kDir + "/no.yml: cannot open") !=
        std::string::npos);

  // A key that does not belong to the certificate passes the file checks; the server refuses it.
  MakeCert();
  const std::string other_key = kDir + "/other.key";
  REQUIRE(RunCommand({"/usr/bin/openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                      "ec_paramgen_curve:prime256v1", "-out", other_key})
              .exit_code == 0);
  const std::string mismatch = WriteWebConfig(
      "web-mismatch.yml", "tls_server_config:\n  cert_file: tls.crt\n  key_file: other.key\n");
  const std::string config = WriteConfig("mismatch.json", {{"web_config_file", mismatch}});
  CHECK(RunCommand({LagwatchBinary(), "--check-config", config}).exit_code == 0);
  auto run = RunCommand({LagwatchBinary(), "--config", config});
  CHECK(run.exit_code == 1);
  CHECK(run.output.find("http.web_config_file: TLS cannot start") != std::string::npos);
  CHECK(run.output.find("key values mismatch") != std::string::npos);
}

// A file holding `text`, mode 0600 unless `mode` says otherwise.
std::string SecretFile(const std::string& name, const std::string& text, mode_t mode = 0600) {
  const std::string path = WriteTempFile(kDir, name, text);
  REQUIRE(chmod(path.c_str(), mode) == 0);
  return path;
}

RunResult Status(std::vector<std::string> args) {
  args.insert(args.begin(), {LagwatchBinary(), "status"});
  return RunCommand(args);
}

TEST_CASE("lagwatch status speaks https and basic auth, the password read from a 0600 file") {
  const std::string cert = MakeCert();
  const std::string users = UsersYaml();
  const std::string web = WriteWebConfig(
      "web-status.yml", "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n" + users);
  const std::string config = WriteConfig("status.json", {{"web_config_file", web}});
  Agent agent(config, kDir + "/agent-status.log");
  REQUIRE(WaitFor([&] { return Curl({"--cacert", cert, Https("/healthz")}).first == 200; }, 10s));
  const std::string pw = SecretFile("status.pw", kPassword + "\n");
  const std::string url = Https("");

  // Trusting the certificate by --cacert: the table, exit 0 once both replicas are healthy.
  RunResult ok;
  CHECK(WaitFor(
      [&] {
        ok = Status({"--url", url, "--cacert", cert, "--user", kUser, "--password-file", pw});
        return ok.exit_code == 0;
      },
      10s));
  INFO(ok.output);
  CHECK(std::regex_search(ok.output, std::regex(E().sandbox.replica_id(1) + " +tier1 +ok +yes")));
  CHECK(std::regex_search(ok.output, std::regex(E().sandbox.replica_id(2) + " +tier1 +ok +yes")));
  // --config: https and the certificate to expect come from the agent's web config.
  CHECK(Status({"--config", config, "--user", kUser, "--password-file", pw}).exit_code == 0);

  // Refusals say why and exit 3.
  auto no_creds = Status({"--url", url, "--cacert", cert});
  CHECK(no_creds.exit_code == 3);
  CHECK(no_creds.output.find("HTTP 401: the agent wants basic auth") != std::string::npos);
  auto wrong = Status({"--url", url, "--cacert", cert, "--user", kUser, "--password-file",
                       SecretFile("wrong.pw", "nope\n")});
  CHECK(wrong.exit_code == 3);
  CHECK(wrong.output.find("HTTP 401: the agent refused the credentials") != std::string::npos);
  // The certificate is verified: not in the system's trust store, and not for "localhost".
  auto untrusted = Status({"--url", url, "--user", kUser, "--password-file", pw});
  CHECK(untrusted.exit_code == 3);
  CHECK(untrusted.output.find("certificate not trusted: self-signed certificate") !=
        std::string::npos);
  auto other_name = Status({"--url", "https://localhost:" + std::to_string(Port()), "--cacert",
                            cert, "--user", kUser, "--password-file", pw});
  CHECK(other_name.exit_code == 3);
  CHECK(other_name.output.find("certificate not trusted") != std::string::npos);
  // Plain HTTP to the TLS port gets no HTTP answer.
  auto plain = Status({"--url", "http://127.0.0.1:" + std::to_string(Port()), "--user", kUser,
                       "--password-file", pw});
  CHECK(plain.exit_code == 3);
  CHECK(plain.output.find("no answer") != std::string::npos);
  // --config pins the certificate its web config names: a different one is refused.
  MakeCert("other", "lagwatch.example", "DNS:lagwatch.example");
  const std::string other_web =
      WriteWebConfig("web-other.yml",
                     "tls_server_config:\n  cert_file: other.crt\n  key_file: other.key\n" + users);
  auto pinned = Status({"--config", WriteConfig("other.json", {{"web_config_file", other_web}}),
                        "--user", kUser, "--password-file", pw});
  CHECK(pinned.exit_code == 3);
  CHECK(pinned.output.find("is not the one in " + kDir + "/other.crt") != std::string::npos);

  // Bad command lines and exposed password files exit 2 and touch nothing.
  auto exposed = Status({"--url", url, "--cacert", cert, "--user", kUser, "--password-file",
                         SecretFile("exposed.pw", kPassword + "\n", 0644)});
  CHECK(exposed.exit_code == 2);
  CHECK(exposed.output.find("--password-file: " + kDir + "/exposed.pw holds credentials") !=
        std::string::npos);
  CHECK(exposed.output.find("(mode 0644)") != std::string::npos);
  CHECK(exposed.output.find(kPassword) == std::string::npos);
  CHECK(Status({"--url", url, "--user", kUser}).exit_code == 2);
  CHECK(Status({"--url", url, "--password-file", pw}).exit_code == 2);
  CHECK(Status({"--url", url, "--url", url}).exit_code == 2);
  CHECK(Status({"--config", config, "--url", url}).exit_code == 2);
  CHECK(Status({"--url", "http://127.0.0.1:1", "--cacert", cert}).exit_code == 2);
  CHECK(Status({"--url", url, "--password", kPassword}).exit_code == 2);
  CHECK(Alive(agent));
  CHECK(agent.Stop() == 0);
}

}  // namespace
}  // namespace lagwatch::test
