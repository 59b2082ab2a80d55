#include "exporters/router_feedback.h"

#include <sys/time.h>

#include <algorithm>

#include <hiredis/hiredis.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>

#include "base/log.h"
#include "base/redis_conn.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr milliseconds kIoTimeout(250);
constexpr milliseconds kMinBackoff(250);
constexpr size_t kMaxAppLength = 64;
constexpr size_t kMaxHostLength = 253;
constexpr std::string_view kReplicaField = "reads_replica:";
constexpr const char* kScanCount = "100";

// `s` fit for a log line: quoted, non-printable bytes as \xNN, at most `max` bytes of it.
std::string Printable(std::string_view s, size_t max = 64) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      AppendHexEscape(out, c);
    }
  }
  out += '"';
  if (s.size() > max) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

void Note(ParseOutcome& out, std::string problem) {
  if (out.problems.size() < ParseOutcome::kMaxProblems) out.problems.push_back(std::move(problem));
}

// The value of a counter field, or the reason it is not one.
std::optional<double> ParseCount(std::string_view v, std::string* why) {
  auto n = ParseInt<int64_t>(v);
  if (!n) {
    *why = v.empty() ? "empty value" : "not a base-10 integer: " + Printable(v);
    return std::nullopt;
  }
  if (*n < 0) {
    *why = "negative value " + std::to_string(*n);
    return std::nullopt;
  }
  return static_cast<double>(*n);
}

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// Appends one command to the connection's output buffer; false if hiredis could not (memory).
bool Append(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()) ==
         REDIS_OK;
}

// The next reply, or null when the connection failed (its errstr says why).
Reply NextReply(redisContext* c) {
  void* raw = nullptr;
  if (redisGetReply(c, &raw) != REDIS_OK) return nullptr;
  return Reply(static_cast<redisReply*>(raw));
}

std::string ReplyText(const redisReply& r) { return std::string(r.str, r.len); }

std::string ConnError(redisContext* c, const char* what) {
  return std::string(what) + ": " + (c->err ? c->errstr : "no reply");
}

}  // namespace

// ---- Parsing ----------------------------------------------------------------------------------

bool IsValidAppName(std::string_view app) { return IsToken(app, "_.:-", 1, kMaxAppLength); }

std::optional<std::string> AppFromKey(std::string_view key) {
  if (!key.starts_with(kRwStatsPrefix)) return std::nullopt;
  std::string_view app = key.substr(kRwStatsPrefix.size());
  if (!IsValidAppName(app)) return std::nullopt;
  return std::string(app);
}

std::optional<std::string> ParseHostPort(std::string_view s) {
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = s.substr(0, colon);
  std::string_view port = s.substr(colon + 1);
  if (!IsToken(host, "._:-", 1, kMaxHostLength) || port.empty() || port[0] == '0') {
    return std::nullopt;
  }
  auto p = ParseInt<int>(port);
  if (!p || *p < 1 || *p > 65535) return std::nullopt;
  return std::string(s);
}

ParseOutcome ParseRwStats(std::string_view app, const HashFields& fields) {
  ParseOutcome out;
  out.stats.app = std::string(app);
  if (!IsValidAppName(app)) {
    out.bad_app = true;
    Note(out, "app name " + Printable(app) + " is not 1..64 characters from [A-Za-z0-9_.:-]");
    return out;
  }
  AppStats& s = out.stats;
  std::set<std::string_view> seen;
  for (const auto& [field, value] : fields) {
    if (!seen.insert(field).second) {
      ++out.malformed;
      Note(out, "field " + Printable(field) + " repeated");
      continue;
    }
    double* slot = nullptr;
    std::string replica;
    if (field == "reads_replica") {
      slot = &s.reads_replica;
    } else if (field == "reads_master") {
      slot = &s.reads_master;
    } else if (field == "degrade_attempts") {
      slot = &s.degrade_attempts;
    } else if (field == "degrade_successes") {
      slot = &s.degrade_successes;
    } else if (field.starts_with(kReplicaField)) {
      auto hp = ParseHostPort(std::string_view(field).substr(kReplicaField.size()));
      if (!hp) {
        ++out.malformed;
        Note(out, "field " + Printable(field) + ": suffix is not host:port with port 1..65535");
        continue;
      }
      replica = std::move(*hp);
    } else {
      ++out.unknown_fields;
      Note(out, "unknown field " + Printable(field));
      continue;
    }
    std::string why;
    auto n = ParseCount(value, &why);
    if (!n) {
      ++out.malformed;
      s.unreadable.insert(field);
      Note(out, "field " + Printable(field) + ": " + why);
      continue;
    }
    if (slot) {
      *slot = *n;
    } else {
      s.reads_by_replica[replica] = *n;
    }
  }
  return out;
}

// ---- Accumulation -----------------------------------------------------------------------------

FeedbackAccumulator::FeedbackAccumulator(size_t max_apps, size_t max_replicas_per_app)
    : max_apps_(max_apps), max_replicas_per_app_(max_replicas_per_app) {}

bool FeedbackAccumulator::Admits(const std::string& app) const {
  std::lock_guard lock(mu_);
  return apps_.count(app) > 0 || apps_.size() < max_apps_;
}

FeedbackAccumulator::Delta FeedbackAccumulator::Observe(const AppStats& stats) {
  std::lock_guard lock(mu_);
  Delta d;
  auto it = apps_.find(stats.app);
  if (it == apps_.end()) {
    if (apps_.size() >= max_apps_) return d;
    it = apps_.emplace(stats.app, App{}).first;
  }
  d.accepted = true;
  App& app = it->second;

  // Folds one counter's latest raw value in; returns what it added to the exported total.
  auto fold = [&](const std::string& field, double raw) {
    Counter& c = app.counters[field];
    if (stats.unreadable.count(field)) return 0.0;
    double delta = raw - c.last_raw;
    if (raw < c.last_raw) {
      delta = raw;
      d.reset = true;
    }
    c.last_raw = raw;
    c.total += delta;
    return delta;
  };

  d.reads_replica = fold("reads_replica", stats.reads_replica);
  d.reads_master = fold("reads_master", stats.reads_master);
  d.degrade_attempts = fold("degrade_attempts", stats.degrade_attempts);
  d.degrade_successes = fold("degrade_successes", stats.degrade_successes);

  for (const auto& [replica, raw] : stats.reads_by_replica) {
    std::string field = std::string(kReplicaField) + replica;
    if (!app.counters.count(field)) {
      if (app.replicas >= max_replicas_per_app_) {
        ++d.replicas_refused;
        continue;
      }
      ++app.replicas;
    }
    d.reads_by_replica[replica] = fold(field, raw);
  }
  // Tracked replicas the hash no longer has read as 0 (a reset), unless they were unreadable.
  for (auto& [field, c] : app.counters) {
    if (!field.starts_with(kReplicaField)) continue;
    if (stats.reads_by_replica.count(field.substr(kReplicaField.size()))) continue;
    fold(field, 0);
  }
  return d;
}

std::map<std::string, FeedbackAccumulator::Totals> FeedbackAccumulator::AppTotals() const {
  std::lock_guard lock(mu_);
  std::map<std::string, Totals> out;
  for (const auto& [name, app] : apps_) {
    const auto& counters = app.counters;  // clang 14 cannot capture a structured binding
    auto total = [&](const char* field) {
      auto it = counters.find(field);
      return it == counters.end() ? 0.0 : it->second.total;
    };
    Totals& t = out[name];
    t.reads_replica = total("reads_replica");
    t.reads_all = t.reads_replica + total("reads_master");
    t.degrade_attempts = total("degrade_attempts");
    t.degrade_successes = total("degrade_successes");
  }
  return out;
}

// ---- Polling and export -----------------------------------------------------------------------

// Every metric RouterFeedback exports (DESIGN.md §5), declared here with its help text.
struct RouterFeedback::Families {
  explicit Families(prometheus::Registry& r)
      : reads(prometheus::BuildCounter()
                  .Name("lagwatch_router_reads_total")
                  .Help("Reads routers sent to a replica or to the master, by app (RWSR = "
                        "target=\"replica\" / all), from rw_stats:<app>.")
                  .Register(r)),
        replica_reads(prometheus::BuildCounter()
                          .Name("lagwatch_router_replica_reads_total")
                          .Help("Reads routers sent to each replica, by app.")
                          .Register(r)),
        degrade_attempts(prometheus::BuildCounter()
                             .Name("lagwatch_router_degrade_attempts_total")
                             .Help("Times routers tried to fall back from a stale replica, by "
                                   "app (DSR denominator).")
                             .Register(r)),
        degrade_successes(prometheus::BuildCounter()
                              .Name("lagwatch_router_degrade_successes_total")
                              .Help("Fallbacks from a stale replica that succeeded, by app (DSR "
                                    "numerator).")
                              .Register(r)),
        errors(prometheus::BuildCounter()
                   .Name("lagwatch_router_feedback_errors_total")
                   .Help("Problems met while reading rw_stats:* hashes, by reason; data problems "
                         "are counted on every poll that still sees them.")
                   .Register(r)),
        polls(prometheus::BuildCounter()
                  .Name("lagwatch_router_feedback_polls_total")
                  .Help("Polls of the rw_stats:* hashes that completed.")
                  .Register(r)
                  .Add({})) {
    for (const char* reason : kErrorReasons) errors.Add({{"reason", reason}});
  }

  prometheus::Family<prometheus::Counter>& reads;              // labels app, target
  prometheus::Family<prometheus::Counter>& replica_reads;      // labels app, replica
  prometheus::Family<prometheus::Counter>& degrade_attempts;   // label app
  prometheus::Family<prometheus::Counter>& degrade_successes;  // label app
  prometheus::Family<prometheus::Counter>& errors;             // label reason
  prometheus::Counter& polls;
};

RouterFeedback::RouterFeedback(const RedisConfig& config,
                               std::shared_ptr<prometheus::Registry> registry,
                               std::chrono::milliseconds interval)
    : config_(config),
      interval_(interval),
      registry_(std::move(registry)),
      m_(std::make_unique<Families>(*registry_)),
      accumulator_(kMaxApps, kMaxReplicasPerApp) {}

RouterFeedback::~RouterFeedback() { Stop(); }

void RouterFeedback::Start() {
  thread_ = std::jthread([this](std::stop_token st) { Run(st); });
}

void RouterFeedback::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    cv_.notify_all();
    thread_.join();
  }
  Disconnect();
}

void RouterFeedback::CountError(const char* reason, double n) {
  m_->errors.Add({{"reason", reason}}).Increment(n);
}

void RouterFeedback::Ingest(std::string_view key, const HashFields& fields) {
  if (!key.starts_with(kRwStatsPrefix)) {
    CountError("bad_app");
    LogLimited(LogLevel::kWarn, "router-feedback-bad-app",
               "router feedback: skipping key " + Printable(key) + ": not rw_stats:<app>");
    return;
  }
  ParseOutcome out = ParseRwStats(key.substr(kRwStatsPrefix.size()), fields);
  if (out.bad_app) {
    CountError("bad_app");
    LogLimited(LogLevel::kWarn, "router-feedback-bad-app",
               "router feedback: skipping key " + Printable(key) + ": " + out.problems.front());
    return;
  }
  if (out.malformed) CountError("malformed", out.malformed);
  if (out.unknown_fields) CountError("unknown_field", out.unknown_fields);
  if (!out.problems.empty()) {
    std::string msg = "router feedback: " + Printable(key) + ": skipped ";
    for (size_t i = 0; i < out.problems.size(); ++i) msg += (i ? "; " : "") + out.problems[i];
    LogLimited(LogLevel::kWarn, "router-feedback-data", msg);
  }

  const AppStats& s = out.stats;
  FeedbackAccumulator::Delta d = accumulator_.Observe(s);
  if (!d.accepted) {
    CountError("too_many_apps");
    LogLimited(LogLevel::kWarn, "router-feedback-apps",
               "router feedback: ignoring app " + Printable(s.app) + ": already tracking " +
                   std::to_string(kMaxApps) + " apps");
    return;
  }
  if (d.reset) {
    CountError("reset");
    LogLimited(LogLevel::kInfo, "router-feedback-reset",
               "router feedback: counters of " + Printable(key) +
                   " went down (router restarted or hash reset); exported totals continue from "
                   "the new values");
  }
  if (d.replicas_refused) {
    CountError("too_many_replicas", d.replicas_refused);
    LogLimited(LogLevel::kWarn, "router-feedback-replicas",
               "router feedback: " + Printable(key) + ": ignoring replicas beyond " +
                   std::to_string(kMaxReplicasPerApp) + " per app");
  }
  m_->reads.Add({{"app", s.app}, {"target", "replica"}}).Increment(d.reads_replica);
  m_->reads.Add({{"app", s.app}, {"target", "master"}}).Increment(d.reads_master);
  m_->degrade_attempts.Add({{"app", s.app}}).Increment(d.degrade_attempts);
  m_->degrade_successes.Add({{"app", s.app}}).Increment(d.degrade_successes);
  for (const auto& [replica, delta] : d.reads_by_replica) {
    m_->replica_reads.Add({{"app", s.app}, {"replica", replica}}).Increment(delta);
  }
}

bool RouterFeedback::Connect() {
  auto ctx = RedisConnect(config_, kIoTimeout);
  if (!ctx.ok()) {
    CountError("redis");
    LogLimited(LogLevel::kWarn, "router-feedback-connect",
               "router feedback: " + ctx.status().message());
    Disconnect();
    return false;
  }
  ctx_ = ctx.value();
  connected_ = true;
  return true;
}

void RouterFeedback::Disconnect() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
  connected_ = false;
}

Status RouterFeedback::FetchPage(const std::vector<std::string>& keys,
                                 std::set<std::string>& seen) {
  std::vector<std::string> wanted;
  for (const auto& key : keys) {
    auto app = AppFromKey(key);
    if (!app) {
      CountError("bad_app");
      LogLimited(LogLevel::kWarn, "router-feedback-bad-app",
                 "router feedback: skipping key " + Printable(key) +
                     ": the app must be 1..64 characters from [A-Za-z0-9_.:-]");
      continue;
    }
    if (seen.count(*app)) continue;
    if (!accumulator_.Admits(*app)) {
      CountError("too_many_apps");
      LogLimited(LogLevel::kWarn, "router-feedback-apps",
                 "router feedback: ignoring app " + Printable(*app) + ": already tracking " +
                     std::to_string(kMaxApps) + " apps");
      continue;
    }
    seen.insert(*app);
    wanted.push_back(key);
  }

  // A refused command (WRONGTYPE: the key is not a hash) costs only that key.
  auto refused = [&](const std::string& key, const redisReply& r) {
    std::string text = ReplyText(r);
    bool wrong_type = text.starts_with("WRONGTYPE");
    CountError(wrong_type ? "wrong_type" : "redis");
    LogLimited(LogLevel::kWarn, wrong_type ? "router-feedback-type" : "router-feedback-refused",
               "router feedback: skipping " + Printable(key) + ": " + Printable(text, 200));
  };
  auto odd = [&](const std::string& key, const char* what) {
    CountError("redis");
    LogLimited(LogLevel::kWarn, "router-feedback-reply",
               "router feedback: skipping " + Printable(key) + ": unexpected " + what + " reply");
  };

  for (const auto& key : wanted) {
    if (!Append(ctx_, {"HLEN", key})) return Status::Unavailable("HLEN: cannot queue command");
  }
  std::vector<std::string> fetch;
  for (const auto& key : wanted) {
    Reply r = NextReply(ctx_);
    if (!r) return Status::Unavailable(ConnError(ctx_, "HLEN"));
    if (r->type == REDIS_REPLY_ERROR) {
      refused(key, *r);
    } else if (r->type != REDIS_REPLY_INTEGER) {
      odd(key, "HLEN");
    } else if (r->integer > kMaxFieldsPerApp) {
      CountError("too_many_fields");
      LogLimited(LogLevel::kWarn, "router-feedback-fields",
                 "router feedback: skipping " + Printable(key) + ": " + std::to_string(r->integer) +
                     " fields, more than " + std::to_string(kMaxFieldsPerApp));
    } else if (r->integer > 0) {  // 0: deleted since SCAN saw it
      fetch.push_back(key);
    }
  }

  for (const auto& key : fetch) {
    if (!Append(ctx_, {"HGETALL", key})) return Status::Unavailable("HGETALL: cannot queue");
  }
  for (const auto& key : fetch) {
    Reply r = NextReply(ctx_);
    if (!r) return Status::Unavailable(ConnError(ctx_, "HGETALL"));
    if (r->type == REDIS_REPLY_ERROR) {
      refused(key, *r);
      continue;
    }
    // The hash may have grown since HLEN; the cap still holds.
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0 ||
        r->elements > 2 * static_cast<size_t>(kMaxFieldsPerApp)) {
      odd(key, "HGETALL");
      continue;
    }
    HashFields fields;
    fields.reserve(r->elements / 2);
    bool strings = true;
    for (size_t i = 0; i + 1 < r->elements && strings; i += 2) {
      const redisReply* f = r->element[i];
      const redisReply* v = r->element[i + 1];
      strings = f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING;
      if (strings) fields.emplace_back(ReplyText(*f), ReplyText(*v));
    }
    if (!strings) {
      odd(key, "HGETALL");
      continue;
    }
    Ingest(key, fields);
  }
  return Status::Ok();
}

Status RouterFeedback::Poll(std::stop_token stop) {
  const auto deadline = steady_clock::now() + interval_;
  std::set<std::string> seen;
  std::string& cursor = scan_cursor_;
  int calls = 0;
  do {
    if (stop.stop_requested()) return Status::Cancelled("stopping");
    if (calls == kMaxScanCalls || steady_clock::now() >= deadline) {
      CountError("scan_truncated");
      LogLimited(LogLevel::kWarn, "router-feedback-scan",
                 "router feedback: stopped scanning for rw_stats:* after " + std::to_string(calls) +
                     " SCAN calls; the next round resumes there");
      break;
    }
    ++calls;
    if (!Append(ctx_, {"SCAN", cursor, "MATCH", std::string(kRwStatsPrefix) + "*", "COUNT",
                       kScanCount})) {
      return Status::Unavailable("SCAN: cannot queue command");
    }
    Reply r = NextReply(ctx_);
    if (!r) return Status::Unavailable(ConnError(ctx_, "SCAN"));
    if (r->type == REDIS_REPLY_ERROR) return Status::ServerError("SCAN: " + ReplyText(*r));
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
      return Status::DataError("SCAN: unexpected reply");
    }
    std::string next = ReplyText(*r->element[0]);
    std::vector<std::string> keys;
    const redisReply* page = r->element[1];
    for (size_t i = 0; i < page->elements; ++i) {
      if (page->element[i]->type == REDIS_REPLY_STRING)
        keys.push_back(ReplyText(*page->element[i]));
    }
    Status st = FetchPage(keys, seen);
    if (!st.ok()) return st;  // the next round repeats this page
    cursor = std::move(next);
  } while (cursor != "0");
  ++polls_;
  m_->polls.Increment();
  return Status::Ok();
}

void RouterFeedback::Run(std::stop_token stop) {
  const milliseconds max_backoff = std::max(kMinBackoff, interval_);
  milliseconds backoff = kMinBackoff;
  std::mutex wait_mu;
  while (!stop.stop_requested()) {
    const auto started = steady_clock::now();
    bool failed = false;
    if (!ctx_ && !Connect()) {
      failed = true;
    } else {
      Status st = Poll(stop);
      if (st.code() == Status::Code::kCancelled) break;
      if (!st.ok()) {
        CountError("redis");
        LogLimited(LogLevel::kWarn, "router-feedback-poll",
                   "router feedback: poll of rw_stats:* failed: " + st.ToString());
        if (st.code() == Status::Code::kUnavailable) {
          Disconnect();
          failed = true;
        }
      }
    }
    milliseconds wait = interval_;
    if (failed) {
      wait = backoff;
      backoff = std::min(backoff * 2, max_backoff);
    } else {
      backoff = kMinBackoff;
      wait = std::chrono::duration_cast<milliseconds>(started + interval_ - steady_clock::now());
    }
    std::unique_lock lock(wait_mu);
    cv_.wait_for(lock, stop, wait, [] { return false; });
  }
}

}  // namespace lagwatch
