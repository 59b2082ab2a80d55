#include "exporters/web_config.h"

#include <crypt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <vector>

#include <doctest/doctest.h>

#include "base/fake_clock.h"

namespace lagwatch {
namespace {

// A bcrypt hash of `password` at cost 4 (the minimum: fast tests), as htpasswd -B would make.
std::string Hash(const std::string& password, const char* prefix = "$2y$") {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn(prefix, 4, nullptr, 0, salt, sizeof salt) != nullptr);
  crypt_data data{};
  const char* h = crypt_rn(password.c_str(), salt, &data, sizeof data);
  REQUIRE(h != nullptr);
  return h;
}

// "Basic base64(text)".
std::string Basic(const std::string& text) {
  static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "Basic ";
  size_t i = 0;
  for (; i + 2 < text.size(); i += 3) {
    uint32_t v = (uint8_t(text[i]) << 16) | (uint8_t(text[i + 1]) << 8) | uint8_t(text[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kB64[(v >> s) & 63];
  }
  if (i + 1 == text.size()) {
    uint32_t v = uint8_t(text[i]) << 16;
    out += std::string{kB64[v >> 18], kB64[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == text.size()) {
    uint32_t v = (uint8_t(text[i]) << 16) | (uint8_t(text[i + 1]) << 8);
    out += std::string{kB64[v >> 18], kB64[(v >> 12) & 63], kB64[(v >> 6) & 63], '='};
  }
  return out;
}

// A fresh directory under /tmp for file-based cases, removed with what is in it at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/lw-webconfig-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Write(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const std::string kPemCert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const std::string kPemKey = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

using V = BasicAuth::Verdict;

TEST_CASE("an exporter-toolkit web config in YAML parses, relative files resolved next to it") {
  const std::string h = Hash("secret");
  auto w = ParseWebConfig(
      "# comment\n"
      "tls_server_config:\n"
      "  cert_file: server.crt\n"
      "  key_file: /etc/ssl/private/server.key\n"
      "basic_auth_users:\n"
      "  alice: " +
          h +
          "\n"
          "  bob: '" +
          h + "'\n",
      "/etc/lagwatch/web.yml");
  REQUIRE_MESSAGE(w.ok(), w.status().message());
  CHECK(w->tls());
  CHECK(w->auth());
  CHECK(w->cert_file == "/etc/lagwatch/server.crt");
  CHECK(w->key_file == "/etc/ssl/private/server.key");
  CHECK_FALSE(w->tls13_only);
  CHECK(w->basic_auth_users.size() == 2);
  CHECK(w->basic_auth_users.at("alice") == h);
}

TEST_CASE("the same web config in JSON parses too") {
  const std::string h = Hash("secret", "$2b$");
  auto w = ParseWebConfig(R"({
    "tls_server_config": { "cert_file": "c.pem", "key_file": "k.pem", "min_version": "TLS13" },
    "basic_auth_users": { "prometheus": ")" +
                              h + R"(" }
  })",
                          "web.json");
  REQUIRE_MESSAGE(w.ok(), w.status().message());
  CHECK(w->cert_file == "./c.pem");
  CHECK(w->tls13_only);
  CHECK(w->basic_auth_users.at("prometheus") == h);
}

TEST_CASE("an empty web config means plain HTTP without authentication") {
  auto w = ParseWebConfig("", "/w.yml");
  REQUIRE(w.ok());
  CHECK_FALSE(w->tls());
  CHECK_FALSE(w->auth());
}

TEST_CASE("each kind of bad web config is rejected naming the file and the key") {
  const std::string h = Hash("x");
  struct Case {
    std::string text;
    std::string expect;  // the message starts with "/w.yml: " + this
  };
  const std::vector<Case> cases = {
      {"basic_auth_users:\n  alice: secret\n", "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $1$abc$def\n", "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: " + h.substr(0, 50) + "\n",
       "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n", "basic_auth_users: must name at least one user"},
      {"basic_auth_users: {}\n", "basic_auth_users: must name at least one user"},
      {"basic_auth_users:\n  'a:b': " + h + "\n", "basic_auth_users.a:b: a user name"},
      {"basic_auth_users:\n  alice: " + h + "\n  alice: " + h + "\n",
       "basic_auth_users.alice: duplicate key"},
      {"basic_auth_users:\n  alice: [1, 2]\n", "basic_auth_users.alice: not a bcrypt hash"},
      // The prefix, the cost (04..31) and the 53-character tail are each checked.
      {"basic_auth_users:\n  alice: $2x$" + h.substr(4) + "\n",
       "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $2y$03$" + h.substr(7) + "\n",
       "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $2y$32$" + h.substr(7) + "\n",
       "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $2y$1x$" + h.substr(7) + "\n",
       "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: " + h.substr(0, 59) + "!\n",
       "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: " + h + "A\n", "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_user:\n  alice: " + h + "\n", "basic_auth_user: unknown key"},
      {"tls_server_config:\n  cert_file: a.crt\n", "tls_server_config.key_file: required"},
      {"tls_server_config:\n  cert_file: a.crt\n  key_file: ''\n",
       "tls_server_config.key_file: must be a non-empty string"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: ca\n",
       "tls_server_config.client_ca_file: not supported by lagwatch"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS11\n",
       "tls_server_config.min_version: must be TLS12 or TLS13"},
      {"tls_server_config: yes\n", "tls_server_config: must be a mapping"},
      {"http_server_config:\n  http2: false\n", "http_server_config: not supported by lagwatch"},
      {"- a\n- b\n", "(top level): must be a mapping"},
      {"basic_auth_users: {alice: \"" + h + "\"\n", "(syntax): line"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    auto w = ParseWebConfig(c.text, "/w.yml");
    REQUIRE_FALSE(w.ok());
    INFO("message: " << w.status().message());
    CHECK(w.status().code() == Status::Code::kInvalidArgument);
    CHECK(w.status().message().rfind("/w.yml: " + c.expect, 0) == 0);
  }
}

TEST_CASE("aliases cannot blow a small web config up into a huge tree") {
  // Five levels of ten aliases each: 100,000 nodes from a few hundred bytes.
  std::string text =
      "l0: &l0 {k0: x, k1: x, k2: x, k3: x, k4: x, k5: x, k6: x, k7: x, k8: x, k9: x}\n";
  for (int level = 1; level <= 5; ++level) {
    const std::string prev = "*l" + std::to_string(level - 1);
    text += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " {";
    for (int k = 0; k < 10; ++k) text += (k ? ", k" : "k") + std::to_string(k) + ": " + prev;
    text += "}\n";
  }
  auto w = ParseWebConfig(text, "/w.yml");
  REQUIRE_FALSE(w.ok());
  CHECK(w.status().message().find("too many nodes") != std::string::npos);
}

TEST_CASE("LoadWebConfig checks the files: missing config, unreadable or non-PEM cert and key") {
  const TempDir temp;
  const std::string& dir = temp.path();
  auto missing = LoadWebConfig(dir + "/nope.yml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().rfind(dir + "/nope.yml: cannot open web config file", 0) == 0);

  Write(dir, "good.crt", kPemCert);
  Write(dir, "good.key", kPemKey);
  Write(dir, "bad.crt", "not a certificate\n");
  Write(dir, "enc.key",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMII\n-----END ENCRYPTED PRIVATE KEY-----\n");
  auto load = [&](const std::string& cert, const std::string& key) {
    return LoadWebConfig(
        Write(dir, "web.yml",
              "tls_server_config:\n  cert_file: " + cert + "\n  key_file: " + key + "\n"));
  };
  auto ok = load("good.crt", "good.key");
  REQUIRE_MESSAGE(ok.ok(), ok.status().message());
  CHECK(ok->cert_file == dir + "/good.crt");

  auto no_cert = load("absent.crt", "good.key");
  REQUIRE_FALSE(no_cert.ok());
  CHECK(no_cert.status().message().rfind(
            dir + "/absent.crt: cannot open tls_server_config.cert_file", 0) == 0);
  auto bad_cert = load("bad.crt", "good.key");
  REQUIRE_FALSE(bad_cert.ok());
  CHECK(bad_cert.status().message() ==
        dir + "/bad.crt: tls_server_config.cert_file: no PEM certificate in it");
  auto key_is_cert = load("good.crt", "good.crt");
  REQUIRE_FALSE(key_is_cert.ok());
  CHECK(key_is_cert.status().message() ==
        dir + "/good.crt: tls_server_config.key_file: no PEM private key in it");
  // Any key type's label passes ("EC", "RSA", none); other PEM blocks and broken lines do not.
  Write(dir, "ec.key", "junk\n-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n");
  Write(dir, "pub.key", "-----BEGIN PUBLIC KEY-----\nMFk\n-----END PUBLIC KEY-----\n");
  Write(dir, "cut.key", "-----BEGIN PRIVATE KEY\nMII\n");
  Write(dir, "lower.key", "-----BEGIN ec PRIVATE KEY-----\nMII\n-----END ec PRIVATE KEY-----\n");
  CHECK(load("good.crt", "ec.key").ok());
  for (const std::string bad : {"pub.key", "cut.key", "lower.key"}) {
    CAPTURE(bad);
    auto r = load("good.crt", bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          dir + "/" + bad + ": tls_server_config.key_file: no PEM private key in it");
  }
  auto encrypted = load("good.crt", "enc.key");
  REQUIRE_FALSE(encrypted.ok());
  CHECK(encrypted.status().message().find("encrypted") != std::string::npos);

  if (geteuid() != 0) {  // root reads anything
    chmod((dir + "/good.key").c_str(), 0);
    auto unreadable = load("good.crt", "good.key");
    REQUIRE_FALSE(unreadable.ok());
    CHECK(unreadable.status().message().find("cannot open tls_server_config.key_file") !=
          std::string::npos);
  }
}

TEST_CASE("basic auth: the right password passes, everything else is refused with its reason") {
  FakeClock clock;
  BasicAuth auth({{"alice", Hash("s3cret:with colon")}, {"bob", Hash("hunter2")}}, clock);
  std::string user;
  CHECK(auth.Check(Basic("alice:s3cret:with colon").c_str(), &user) == V::kOk);
  CHECK(user == "alice");
  CHECK(auth.Check(Basic("bob:hunter2").c_str()) == V::kOk);
  CHECK(auth.Check(("basic  " + Basic("bob:hunter2").substr(6) + " ").c_str()) == V::kOk);

  CHECK(auth.Check(nullptr) == V::kMissing);
  CHECK(auth.Check(Basic("bob:hunter3").c_str()) == V::kBadCredentials);
  CHECK(auth.Check(Basic("alice:hunter2").c_str()) == V::kBadCredentials);
  CHECK(auth.Check(Basic("carol:hunter2").c_str()) == V::kBadCredentials);
  CHECK(auth.Check(Basic(":hunter2").c_str()) == V::kBadCredentials);
  CHECK(auth.Check(Basic("bob:").c_str()) == V::kBadCredentials);
  CHECK(auth.Check(Basic(std::string("bob:hunter2\0x", 13)).c_str()) == V::kBadCredentials);

  CHECK(auth.Check("") == V::kMalformed);
  CHECK(auth.Check("Basic") == V::kMalformed);
  CHECK(auth.Check("Basic ") == V::kMalformed);
  CHECK(auth.Check("Basic !!!!") == V::kMalformed);
  CHECK(auth.Check("Basic A") == V::kMalformed);
  CHECK(auth.Check(Basic("no colon").c_str()) == V::kMalformed);
  CHECK(auth.Check(("Bearer " + Basic("bob:hunter2").substr(6)).c_str()) == V::kMalformed);
  CHECK(auth.Check(("Basicx" + Basic("bob:hunter2").substr(6)).c_str()) == V::kMalformed);
  CHECK(auth.Check(("Basic " + std::string(5000, 'A')).c_str()) == V::kMalformed);
  CHECK(auth.Check("\xff\xfe\x00") == V::kMalformed);
}

TEST_CASE("basic auth: bcrypt's 72-byte limit does not let a longer password through") {
  FakeClock clock;
  const std::string p72(72, 'p');
  BasicAuth auth({{"alice", Hash(p72)}}, clock);
  CHECK(auth.Check(Basic("alice:" + p72).c_str()) == V::kOk);
  CHECK(auth.Check(Basic("alice:" + p72 + "extra").c_str()) == V::kBadCredentials);
}

TEST_CASE("basic auth: $2a$, $2b$ and $2y$ hashes all verify") {
  FakeClock clock;
  BasicAuth auth({{"a", Hash("pa", "$2a$")}, {"b", Hash("pb", "$2b$")}, {"y", Hash("py", "$2y$")}},
                 clock);
  CHECK(auth.Check(Basic("a:pa").c_str()) == V::kOk);
  CHECK(auth.Check(Basic("b:pb").c_str()) == V::kOk);
  CHECK(auth.Check(Basic("y:py").c_str()) == V::kOk);
  CHECK(auth.Check(Basic("y:pa").c_str()) == V::kBadCredentials);
}

TEST_CASE("basic auth: a cached success lets only the same password through, until it expires") {
  // A cost-12 hash takes ~300 ms; with the cache the second check must be far quicker.
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2b$", 12, nullptr, 0, salt, sizeof salt) != nullptr);
  crypt_data data{};
  const std::string hash = crypt_rn("slow", salt, &data, sizeof data);
  FakeClock clock;
  BasicAuth auth({{"alice", hash}}, clock, std::chrono::seconds(60));
  auto timed = [&](const std::string& header) {
    auto t0 = std::chrono::steady_clock::now();
    V v = auth.Check(header.c_str());
    return std::make_pair(v, std::chrono::steady_clock::now() - t0);
  };
  auto [first, first_took] = timed(Basic("alice:slow"));
  CHECK(first == V::kOk);
  auto [second, second_took] = timed(Basic("alice:slow"));
  CHECK(second == V::kOk);
  CHECK(second_took * 10 < first_took);
  CHECK(auth.Check(Basic("alice:slo").c_str()) == V::kBadCredentials);
  CHECK(auth.Check(Basic("alice:slow ").c_str()) == V::kBadCredentials);

  clock.Advance(std::chrono::milliseconds(61'000));
  auto [expired, expired_took] = timed(Basic("alice:slow"));
  CHECK(expired == V::kOk);
  CHECK(expired_took * 10 > first_took);  // bcrypt again
}

TEST_CASE("basic auth reasons are stable tokens") {
  CHECK(std::string(BasicAuth::Reason(V::kOk)) == "ok");
  CHECK(std::string(BasicAuth::Reason(V::kMissing)) == "missing");
  CHECK(std::string(BasicAuth::Reason(V::kMalformed)) == "malformed");
  CHECK(std::string(BasicAuth::Reason(V::kBadCredentials)) == "bad_credentials");
}

}  // namespace
}  // namespace lagwatch
