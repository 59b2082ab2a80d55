#include "exporters/web_config.h"

#include <crypt.h>
#include <string.h>
#include <sys/random.h>
#include <yaml.h>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/strings.h"

namespace lagwatch {
namespace {

// The YAML subset a web config needs: mappings, sequences and scalars (kept as text), copied
// from libyaml's document so that errors name the key's path. Why not yaml-cpp (Debian's 0.7):
// tried, it keeps a duplicate key silently and answers the first, so the duplicate check, the
// path-keyed errors and the alias budget below would all stay; libyaml is already here.
struct Node {
  enum class Kind { kScalar, kMapping, kSequence } kind = Kind::kScalar;
  std::string scalar;
  // A mapping: keys[i] -> values[i], in file order. (Not a vector of pairs: a pair needs Node
  // complete here, which clang's libstdc++ checks; a vector of Node does not.)
  std::vector<std::string> keys;
  std::vector<Node> values;
  int line = 0;  // 1-based, for messages
};

struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void Fail(const std::string& key, const std::string& what) {
  throw ParseError(key + ": " + what);
}

// "$2a$", "$2b$" or "$2y$", a cost 04..31, "$", then 53 characters of bcrypt's base64.
bool IsBcryptHash(std::string_view h) {
  if (h.size() != 60 || h.substr(0, 2) != "$2" || (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') ||
      h[3] != '$' || h[6] != '$') {
    return false;
  }
  auto cost = ParseInt<int>(h.substr(4, 2));
  return cost && *cost >= 4 && *cost <= 31 && IsToken(h.substr(7), "./", 53, 53);
}

// Whether `pem` has a "-----BEGIN ... PRIVATE KEY-----" line (any key type, e.g. "EC", or none).
bool HasPemPrivateKey(std::string_view pem) {
  constexpr std::string_view kBegin = "-----BEGIN ", kEnd = "PRIVATE KEY-----";
  for (size_t at = pem.find(kBegin); at != std::string_view::npos; at = pem.find(kBegin, at + 1)) {
    std::string_view label = pem.substr(at + kBegin.size());
    size_t end = label.find("-----");
    if (end == std::string_view::npos) return false;
    label = label.substr(0, end + 5);
    if (label.size() < kEnd.size() || label.substr(label.size() - kEnd.size()) != kEnd) continue;
    label.remove_suffix(kEnd.size());
    if (label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ ") == std::string_view::npos) {
      return true;
    }
  }
  return false;
}

// Aliases can make a small file expand to a huge tree; a web config has a handful of nodes.
constexpr int kMaxNodes = 10'000;
constexpr size_t kMaxFileBytes = 1 << 20;

Node Convert(yaml_document_t* doc, yaml_node_t* n, const std::string& key, int* budget, int depth) {
  if (--*budget < 0 || depth > 16) Fail(key, "too deeply nested or too many nodes");
  Node out;
  out.line = static_cast<int>(n->start_mark.line) + 1;
  switch (n->type) {
    case YAML_SCALAR_NODE:
      out.scalar.assign(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length);
      break;
    case YAML_MAPPING_NODE: {
      out.kind = Node::Kind::kMapping;
      std::set<std::string> seen;
      for (auto* p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; ++p) {
        yaml_node_t* k = yaml_document_get_node(doc, p->key);
        yaml_node_t* v = yaml_document_get_node(doc, p->value);
        if (!k || !v) Fail(key, "broken mapping");
        if (k->type != YAML_SCALAR_NODE) Fail(key, "keys must be plain strings");
        std::string name(reinterpret_cast<const char*>(k->data.scalar.value),
                         k->data.scalar.length);
        std::string path = key.empty() ? name : key + "." + name;
        if (!seen.insert(name).second) Fail(path, "duplicate key");
        out.values.push_back(Convert(doc, v, path, budget, depth + 1));
        out.keys.push_back(name);
      }
      break;
    }
    case YAML_SEQUENCE_NODE:
      out.kind = Node::Kind::kSequence;
      break;
    default:
      Fail(key, "unsupported YAML node");
  }
  return out;
}

// Parses YAML (and so JSON) text into a Node; an empty document is an empty mapping.
Node ParseYaml(const std::string& text) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) throw ParseError("(yaml): out of memory");
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  yaml_document_t doc;
  if (!yaml_parser_load(&parser, &doc)) {
    std::string msg = "(syntax): line " + std::to_string(parser.problem_mark.line + 1) + ": " +
                      (parser.problem ? parser.problem : "invalid YAML");
    if (parser.context) msg += std::string(" ") + parser.context;
    yaml_parser_delete(&parser);
    throw ParseError(msg);
  }
  Node root;
  root.kind = Node::Kind::kMapping;
  try {
    if (yaml_node_t* r = yaml_document_get_root_node(&doc)) {
      int budget = kMaxNodes;
      root = Convert(&doc, r, "", &budget, 0);
      if (root.kind != Node::Kind::kMapping) Fail("(top level)", "must be a mapping");
    }
  } catch (...) {
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    throw;
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return root;
}

// A mapping being read: remembers which keys were consumed so leftovers are reported.
class Map {
 public:
  Map(const Node& n, std::string path) : n_(n), path_(std::move(path)) {
    if (n_.kind != Node::Kind::kMapping) Fail(path_, "must be a mapping");
  }
  std::string Key(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  const Node* Get(const std::string& k) {
    seen_.insert(k);
    for (size_t i = 0; i < n_.keys.size(); ++i) {
      if (n_.keys[i] == k) return &n_.values[i];
    }
    return nullptr;
  }
  std::string Str(const std::string& k) {
    const Node* v = Get(k);
    if (!v) Fail(Key(k), "required key is missing");
    if (v->kind != Node::Kind::kScalar || v->scalar.empty()) {
      Fail(Key(k), "must be a non-empty string");
    }
    return v->scalar;
  }
  // `unsupported`: exporter-toolkit keys lagwatch does not implement, named as such.
  void RejectUnknownKeys(const std::set<std::string>& unsupported = {}) const {
    for (const std::string& name : n_.keys) {
      if (seen_.count(name)) continue;
      if (unsupported.count(name)) {
        Fail(Key(name), "not supported by lagwatch (exporter-toolkit option)");
      }
      Fail(Key(name), "unknown key");
    }
  }
  std::vector<std::pair<std::string, const Node*>> items() const {
    std::vector<std::pair<std::string, const Node*>> out;
    for (size_t i = 0; i < n_.keys.size(); ++i) out.emplace_back(n_.keys[i], &n_.values[i]);
    return out;
  }

 private:
  const Node& n_;
  std::string path_;
  std::set<std::string> seen_;
};

std::string Resolve(const std::string& file, const std::string& config_path) {
  if (file.front() == '/') return file;
  auto slash = config_path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : config_path.substr(0, slash);
  return (dir.empty() ? "/" : dir + "/") + file;
}

WebConfig Parse(const Node& root, const std::string& path) {
  WebConfig w;
  Map top(root, "");
  if (const Node* t = top.Get("tls_server_config")) {
    Map tls(*t, "tls_server_config");
    w.cert_file = Resolve(tls.Str("cert_file"), path);
    w.key_file = Resolve(tls.Str("key_file"), path);
    if (tls.Get("min_version")) {
      const std::string v = tls.Str("min_version");
      if (v == "TLS13") {
        w.tls13_only = true;
      } else if (v != "TLS12") {
        Fail("tls_server_config.min_version", "must be TLS12 or TLS13 (older versions are off)");
      }
    }
    tls.RejectUnknownKeys({"client_auth_type", "client_ca_file", "client_allowed_sans",
                           "cipher_suites", "curve_preferences", "max_version",
                           "prefer_server_cipher_suites", "cert", "key"});
  }
  if (const Node* u = top.Get("basic_auth_users")) {
    if (u->kind == Node::Kind::kScalar && u->scalar.empty()) {
      Fail("basic_auth_users", "must name at least one user (omit the key for no authentication)");
    }
    Map users(*u, "basic_auth_users");
    if (users.items().empty()) {
      Fail("basic_auth_users", "must name at least one user (omit the key for no authentication)");
    }
    for (const auto& [name, v] : users.items()) {
      const std::string key = users.Key(name);
      if (name.empty() || name.find(':') != std::string::npos) {
        Fail(key, "a user name must be non-empty and without ':'");
      }
      if (v->kind != Node::Kind::kScalar || !IsBcryptHash(v->scalar)) {
        Fail(key, "not a bcrypt hash ($2a$, $2b$ or $2y$ with cost 04..31)");
      }
      w.basic_auth_users[name] = v->scalar;
    }
  }
  top.RejectUnknownKeys({"http_server_config", "rate_limit"});
  return w;
}

std::string ReadSmallFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError(path + ": cannot open " + what + ": " + strerror(errno));
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw ParseError(path + ": cannot read " + what);
  std::string s = buf.str();
  if (s.size() > kMaxFileBytes) throw ParseError(path + ": " + what + " is larger than 1 MiB");
  return s;
}

void CheckPem(const WebConfig& w) {
  const std::string cert = ReadSmallFile(w.cert_file, "tls_server_config.cert_file");
  if (cert.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    throw ParseError(w.cert_file + ": tls_server_config.cert_file: no PEM certificate in it");
  }
  std::string key = ReadSmallFile(w.key_file, "tls_server_config.key_file");
  const bool has_key = HasPemPrivateKey(key);
  const bool encrypted = key.find("ENCRYPTED") != std::string::npos;
  explicit_bzero(key.data(), key.size());
  if (!has_key) {
    throw ParseError(w.key_file + ": tls_server_config.key_file: no PEM private key in it");
  }
  if (encrypted) {
    throw ParseError(w.key_file +
                     ": tls_server_config.key_file: the private key is encrypted; lagwatch needs "
                     "it unencrypted (protect it with file permissions)");
  }
}

// Base64 (RFC 4648, standard alphabet, padding optional). False on any other character.
bool DecodeBase64(std::string_view in, std::string* out) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1 || in.find_first_not_of(kAlphabet) != std::string_view::npos) {
    return false;
  }
  // EVP_DecodeBlock wants whole quads and decodes each '=' as a zero byte (it would also take
  // '=' or white space anywhere, hence the check above): pad, decode, and drop the pad's bytes.
  const size_t pad = (4 - in.size() % 4) % 4;
  // Reserved first: a reallocation would leave an unwiped copy of the credentials behind.
  std::string quads;
  quads.reserve(in.size() + pad);
  quads.append(in).append(pad, '=');
  const size_t start = out->size();
  const size_t decoded = quads.size() / 4 * 3;
  out->resize(start + decoded);
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out->data() + start),
                                reinterpret_cast<const unsigned char*>(quads.data()),
                                static_cast<int>(quads.size()));
  OPENSSL_cleanse(quads.data(), quads.size());
  OPENSSL_cleanse(out->data() + start + decoded - pad, pad);
  out->resize(start + decoded - pad);
  return n == static_cast<int>(decoded);
}

// Whether a equals b, in a time that depends only on their lengths (both public: hash formats).
bool ConstantTimeEqual(const char* a, const std::string& b) {
  return strlen(a) == b.size() && CRYPTO_memcmp(a, b.data(), b.size()) == 0;
}

// Wipes a string's bytes when it goes out of scope.
struct Wipe {
  std::string& s;
  ~Wipe() { explicit_bzero(s.data(), s.size()); }
};

constexpr size_t kBcryptMaxPasswordBytes = 72;
constexpr size_t kMaxAuthorizationBytes = 4096;

}  // namespace

Result<WebConfig> ParseWebConfig(const std::string& text, const std::string& path) {
  try {
    return Parse(ParseYaml(text), path);
  } catch (const ParseError& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
}

Result<WebConfig> LoadWebConfig(const std::string& path) {
  std::string text;
  try {
    text = ReadSmallFile(path, "web config file");
  } catch (const ParseError& e) {
    return Status::InvalidArgument(e.what());
  }
  auto w = ParseWebConfig(text, path);
  if (!w.ok() || !w->tls()) return w;
  try {
    CheckPem(*w);
  } catch (const ParseError& e) {
    return Status::InvalidArgument(e.what());
  }
  return w;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users, const Clock& clock, Millis cache_ttl)
    : users_(std::move(users)), clock_(clock), cache_ttl_(cache_ttl) {
  static const char kAlphabet[] =
      "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  unsigned char random[16] = {};
  // getrandom on a 16-byte buffer only fails without the syscall; the salt then is fixed, which
  // weakens nothing that leaves this process.
  (void)getrandom(random, sizeof random, 0);
  digest_setting_ = "$5$rounds=1000$";
  for (unsigned char r : random) digest_setting_ += kAlphabet[r % 64];
  digest_setting_ += "$";
}

BasicAuth::~BasicAuth() = default;

bool BasicAuth::Bcrypt(const std::string& password, const std::string& hash) const {
  auto data = std::make_unique<crypt_data>();  // 32 KB: too big for a worker's stack habits
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof *data);
  const bool ok = out && ConstantTimeEqual(out, hash);
  explicit_bzero(data.get(), sizeof *data);
  return ok;
}

std::string BasicAuth::Digest(const std::string& password) const {
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), digest_setting_.c_str(), data.get(), sizeof *data);
  std::string digest = out ? out : "";
  explicit_bzero(data.get(), sizeof *data);
  return digest;
}

BasicAuth::Verdict BasicAuth::Check(const char* authorization, std::string* user_out) const {
  if (!authorization) return Verdict::kMissing;
  std::string_view h(authorization);
  if (h.size() > kMaxAuthorizationBytes) return Verdict::kMalformed;
  constexpr std::string_view kScheme = "basic";
  if (h.size() <= kScheme.size() || strncasecmp(h.data(), kScheme.data(), kScheme.size()) != 0 ||
      (h[kScheme.size()] != ' ' && h[kScheme.size()] != '\t')) {
    return Verdict::kMalformed;
  }
  h.remove_prefix(kScheme.size());
  while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.remove_prefix(1);
  while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.remove_suffix(1);

  std::string decoded;
  Wipe wipe_decoded{decoded};
  if (h.empty() || !DecodeBase64(h, &decoded)) return Verdict::kMalformed;
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return Verdict::kMalformed;
  const std::string user = decoded.substr(0, colon);
  std::string password = decoded.substr(colon + 1);
  Wipe wipe_password{password};
  if (password.empty() || password.size() > kBcryptMaxPasswordBytes ||
      password.find('\0') != std::string::npos) {
    return Verdict::kBadCredentials;
  }

  auto it = users_.find(user);
  if (it == users_.end()) {
    // Same work as a known user, so response time does not reveal which names exist.
    if (!users_.empty()) Bcrypt(password, users_.begin()->second);
    return Verdict::kBadCredentials;
  }
  const std::string digest = Digest(password);
  const MonoTime now = clock_.Now();
  {
    std::lock_guard lock(mu_);
    auto c = cache_.find(user);
    if (c != cache_.end() && now < c->second.expires && !digest.empty() &&
        ConstantTimeEqual(digest.c_str(), c->second.digest)) {
      if (user_out) *user_out = user;
      return Verdict::kOk;
    }
  }
  if (!Bcrypt(password, it->second)) return Verdict::kBadCredentials;
  if (!digest.empty()) {
    std::lock_guard lock(mu_);
    cache_[user] = {digest, now + cache_ttl_};
  }
  if (user_out) *user_out = user;
  return Verdict::kOk;
}

const char* BasicAuth::Reason(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kMissing:
      return "missing";
    case Verdict::kMalformed:
      return "malformed";
    case Verdict::kBadCredentials:
      return "bad_credentials";
  }
  return "unknown";
}

}  // namespace lagwatch
