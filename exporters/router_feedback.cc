#include "exporters/router_feedback.h"

#include <algorithm>

#include <hiredis/hiredis.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>

#include "base/log.h"
#include "base/redis_pipeline.h"

namespace lagwatch {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kFeedbackIoTimeout(250);
constexpr milliseconds kFeedbackMinBackoff(250);
constexpr const char* kScanCount = "100";

std::string ConnError(const RedisConnection& c, const char* what) {
  return std::string(what) + ": " + (c.error().ok() ? "no reply" : c.error().message());
}

}  // namespace

RouterFeedback::RouterFeedback(const RedisConfig& config, RouterFeedbackMetrics* metrics,
                               const Clock& clock, std::chrono::milliseconds interval)
    : config_(config),
      interval_(interval),
      m_(metrics),
      clock_(clock),
      accumulator_(kMaxApps, kMaxReplicasPerApp) {}

RouterFeedback::~RouterFeedback() { Stop(); }

void RouterFeedback::Start() {
  worker_.Start([this](std::stop_token st) { Run(st); });
}

void RouterFeedback::Stop() {
  worker_.Stop();
  Disconnect();
}

// ---- Counting and logging what is skipped ----------------------------------------------------

void RouterFeedback::CountError(const char* reason, double n) {
  m_->errors.Add({{"reason", reason}}).Increment(n);
}

void RouterFeedback::SkipBadApp(std::string_view key, const std::string& why) {
  CountError("bad_app");
  LogLimited(LogLevel::kWarn, "router-feedback-bad-app",
             "router feedback: skipping key " + QuotedForLog(key) + ": " + why);
}

// A refused command (WRONGTYPE: the key is not a hash) costs only that key.
void RouterFeedback::SkipRefused(const std::string& key, const redisReply& r) {
  std::string text = ReplyText(r);
  bool wrong_type = text.starts_with("WRONGTYPE");
  CountError(wrong_type ? "wrong_type" : "redis");
  LogLimited(LogLevel::kWarn, wrong_type ? "router-feedback-type" : "router-feedback-refused",
             "router feedback: skipping " + QuotedForLog(key) + ": " + QuotedForLog(text, 200));
}

void RouterFeedback::SkipOddReply(const std::string& key, const char* what) {
  CountError("redis");
  LogLimited(LogLevel::kWarn, "router-feedback-reply",
             "router feedback: skipping " + QuotedForLog(key) + ": unexpected " + what + " reply");
}

void RouterFeedback::RefuseApp(const std::string& app) {
  CountError("too_many_apps");
  LogLimited(LogLevel::kWarn, "router-feedback-apps",
             "router feedback: ignoring app " + QuotedForLog(app) + ": already tracking " +
                 std::to_string(kMaxApps) + " apps");
}

void RouterFeedback::NoteParseProblems(std::string_view key, const ParseOutcome& out) {
  if (out.malformed) CountError("malformed", out.malformed);
  if (out.unknown_fields) CountError("unknown_field", out.unknown_fields);
  if (out.problems.empty()) return;
  std::string msg = "router feedback: " + QuotedForLog(key) + ": skipped ";
  for (size_t i = 0; i < out.problems.size(); ++i) msg += (i ? "; " : "") + out.problems[i];
  LogLimited(LogLevel::kWarn, "router-feedback-data", msg);
}

void RouterFeedback::NoteDeltaProblems(std::string_view key, const FeedbackAccumulator::Delta& d) {
  if (d.reset) {
    CountError("reset");
    LogLimited(LogLevel::kInfo, "router-feedback-reset",
               "router feedback: counters of " + QuotedForLog(key) +
                   " went down (router restarted or hash reset); exported totals continue from "
                   "the new values");
  }
  if (d.replicas_refused) {
    CountError("too_many_replicas", d.replicas_refused);
    LogLimited(LogLevel::kWarn, "router-feedback-replicas",
               "router feedback: " + QuotedForLog(key) + ": ignoring replicas beyond " +
                   std::to_string(kMaxReplicasPerApp) + " per app");
  }
}

// ---- One hash ---------------------------------------------------------------------------------

void RouterFeedback::Ingest(std::string_view key, const HashFields& fields) {
  if (!key.starts_with(kRwStatsPrefix)) {
    SkipBadApp(key, "not rw_stats:<app>");
    return;
  }
  ParseOutcome out = ParseRwStats(key.substr(kRwStatsPrefix.size()), fields);
  if (out.bad_app) {
    SkipBadApp(key, out.problems.front());
    return;
  }
  NoteParseProblems(key, out);
  FeedbackAccumulator::Delta d = accumulator_.Observe(out.stats);
  if (!d.accepted) {
    RefuseApp(out.stats.app);
    return;
  }
  NoteDeltaProblems(key, d);
  Export(out.stats.app, d);
}

void RouterFeedback::Export(const std::string& app, const FeedbackAccumulator::Delta& d) {
  m_->reads.Add({{"app", app}, {"target", "replica"}}).Increment(d.reads_replica);
  m_->reads.Add({{"app", app}, {"target", "master"}}).Increment(d.reads_master);
  m_->degrade_attempts.Add({{"app", app}}).Increment(d.degrade_attempts);
  m_->degrade_successes.Add({{"app", app}}).Increment(d.degrade_successes);
  for (const auto& [replica, delta] : d.reads_by_replica) {
    m_->replica_reads.Add({{"app", app}, {"replica", replica}}).Increment(delta);
  }
}

// ---- Redis ------------------------------------------------------------------------------------

bool RouterFeedback::Connect() {
  auto client = RedisClient::Open(config_, kFeedbackIoTimeout);
  if (!client.ok()) {
    CountError("redis");
    LogLimited(LogLevel::kWarn, "router-feedback-connect",
               "router feedback: " + client.status().message());
    Disconnect();
    return false;
  }
  client_ = std::move(client).value();
  connected_ = true;
  return true;
}

void RouterFeedback::Disconnect() {
  client_.reset();
  connected_ = false;
}

std::vector<std::string> RouterFeedback::AdmitKeys(const std::vector<std::string>& keys,
                                                   std::set<std::string>& seen) {
  std::vector<std::string> wanted;
  for (const auto& key : keys) {
    auto app = AppFromKey(key);
    if (!app) {
      SkipBadApp(key, "the app must be 1..64 characters from [A-Za-z0-9_.:-]");
      continue;
    }
    if (seen.count(*app)) continue;
    if (!accumulator_.Admits(*app)) {
      RefuseApp(*app);
      continue;
    }
    seen.insert(*app);
    wanted.push_back(key);
  }
  return wanted;
}

Result<std::vector<std::vector<RedisReply>>> RouterFeedback::ForEachKey(
    const char* command, const std::vector<std::string>& keys) {
  std::vector<RedisUnit> units;
  for (const auto& key : keys) units.push_back({key, {{command, key}}});
  auto replies = client_->Run(units);
  if (!replies.ok()) {
    return Status::Unavailable(std::string(command) + ": " + replies.status().message());
  }
  return replies;
}

Result<std::vector<std::string>> RouterFeedback::KeysWithinFieldCap(
    const std::vector<std::string>& keys) {
  auto replies = ForEachKey("HLEN", keys);
  if (!replies.ok()) return replies.status();
  std::vector<std::string> within;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    const RedisReply& r = (*replies)[i].front();
    if (r->type == REDIS_REPLY_ERROR) {
      SkipRefused(key, *r);
    } else if (r->type != REDIS_REPLY_INTEGER) {
      SkipOddReply(key, "HLEN");
    } else if (r->integer > kMaxFieldsPerApp) {
      CountError("too_many_fields");
      LogLimited(LogLevel::kWarn, "router-feedback-fields",
                 "router feedback: skipping " + QuotedForLog(key) + ": " +
                     std::to_string(r->integer) + " fields, more than " +
                     std::to_string(kMaxFieldsPerApp));
    } else if (r->integer > 0) {  // 0: deleted since SCAN saw it
      within.push_back(key);
    }
  }
  return within;
}

std::optional<HashFields> RouterFeedback::FieldsOf(const redisReply& r) {
  // The hash may have grown since HLEN; the cap still holds.
  if (r.type != REDIS_REPLY_ARRAY || r.elements % 2 != 0 ||
      r.elements > 2 * static_cast<size_t>(kMaxFieldsPerApp)) {
    return std::nullopt;
  }
  HashFields fields;
  fields.reserve(r.elements / 2);
  for (size_t i = 0; i + 1 < r.elements; i += 2) {
    const redisReply* f = r.element[i];
    const redisReply* v = r.element[i + 1];
    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) return std::nullopt;
    fields.emplace_back(ReplyText(*f), ReplyText(*v));
  }
  return fields;
}

Status RouterFeedback::FetchAndIngest(const std::vector<std::string>& keys) {
  auto replies = ForEachKey("HGETALL", keys);
  if (!replies.ok()) return replies.status();
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    const RedisReply& r = (*replies)[i].front();
    if (r->type == REDIS_REPLY_ERROR) {
      SkipRefused(key, *r);
      continue;
    }
    std::optional<HashFields> fields = FieldsOf(*r);
    if (!fields) {
      SkipOddReply(key, "HGETALL");
      continue;
    }
    Ingest(key, *fields);
  }
  return Status::Ok();
}

Status RouterFeedback::FetchPage(const std::vector<std::string>& keys,
                                 std::set<std::string>& seen) {
  auto within = KeysWithinFieldCap(AdmitKeys(keys, seen));
  if (!within.ok()) return within.status();
  return FetchAndIngest(*within);
}

Result<RouterFeedback::ScanPage> RouterFeedback::Scan(const Endpoint& master,
                                                      const std::string& cursor) {
  auto conn = client_->Connection(master);
  if (!conn.ok()) return Status::Unavailable("SCAN: " + conn.status().message());
  RedisReply r = (*conn)->Run(
      {"SCAN", cursor, "MATCH", std::string(kRwStatsPrefix) + "*", "COUNT", kScanCount});
  if (!r) return Status::Unavailable(ConnError(**conn, "SCAN"));
  if (r->type == REDIS_REPLY_ERROR) return Status::ServerError("SCAN: " + ReplyText(*r));
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
    return Status::DataError("SCAN: unexpected reply");
  }
  ScanPage page;
  page.next_cursor = ReplyText(*r->element[0]);
  const redisReply* keys = r->element[1];
  for (size_t i = 0; i < keys->elements; ++i) {
    if (keys->element[i]->type == REDIS_REPLY_STRING) {
      page.keys.push_back(ReplyText(*keys->element[i]));
    }
  }
  return page;
}

// ---- Rounds -----------------------------------------------------------------------------------

Status RouterFeedback::Poll(std::stop_token stop) {
  const MonoTime deadline = clock_.Now() + interval_;
  std::set<std::string> seen;
  int calls = 0;
  // A copy: a failover seen by FetchPage may read the map again.
  const std::vector<Endpoint> masters = client_->masters();
  std::map<std::string, std::string> cursors;  // the masters of this map only
  for (const Endpoint& m : masters) cursors[m.Id()] = scan_cursors_[m.Id()];
  scan_cursors_ = cursors;
  bool truncated = false;
  for (const Endpoint& master : masters) {
    std::string& cursor = scan_cursors_[master.Id()];
    if (cursor.empty()) cursor = "0";
    do {
      if (stop.stop_requested()) return Status::Cancelled("stopping");
      if (calls == kMaxScanCalls || clock_.Now() >= deadline) {
        truncated = true;
        break;
      }
      ++calls;
      auto page = Scan(master, cursor);
      if (!page.ok()) return page.status();
      Status st = FetchPage(page->keys, seen);
      if (!st.ok()) return st;  // the next round repeats this page
      cursor = std::move(page->next_cursor);
    } while (cursor != "0");
    if (truncated) break;
  }
  if (truncated) {
    CountError("scan_truncated");
    LogLimited(LogLevel::kWarn, "router-feedback-scan",
               "router feedback: stopped scanning for rw_stats:* after " + std::to_string(calls) +
                   " SCAN calls; the next round resumes there");
  }
  ++polls_;
  m_->polls.Increment();
  return Status::Ok();
}

bool RouterFeedback::StillOnMaster() {
  if (config_.sentinels.empty()) return true;
  auto conn = client_->Connection(client_->masters().front());
  Status st = conn.ok() ? RedisCheckMaster(**conn) : conn.status();
  if (st.ok()) return true;
  CountError("redis");
  LogLimited(LogLevel::kWarn, "router-feedback-master",
             "router feedback: " + st.message() + "; asking the sentinels for the master again");
  return false;
}

RouterFeedback::RoundEnd RouterFeedback::RunRound(std::stop_token stop) {
  if (client_ && !StillOnMaster()) Disconnect();
  if (!client_ && !Connect()) return RoundEnd::kFailed;
  Status st = Poll(stop);
  if (st.code() == Status::Code::kCancelled) return RoundEnd::kStopping;
  if (st.ok()) return RoundEnd::kDone;
  CountError("redis");
  LogLimited(LogLevel::kWarn, "router-feedback-poll",
             "router feedback: poll of rw_stats:* failed: " + st.ToString());
  if (st.code() != Status::Code::kUnavailable) return RoundEnd::kDone;
  Disconnect();
  return RoundEnd::kFailed;
}

void RouterFeedback::Run(std::stop_token stop) {
  const milliseconds max_backoff = std::max(kFeedbackMinBackoff, interval_);
  milliseconds backoff = kFeedbackMinBackoff;
  while (!stop.stop_requested()) {
    const MonoTime started = clock_.Now();
    const RoundEnd end = RunRound(stop);
    if (end == RoundEnd::kStopping) return;
    MonoTime next = started + interval_;
    if (end == RoundEnd::kFailed) {
      next = clock_.Now() + backoff;
      backoff = std::min(backoff * 2, max_backoff);
    } else {
      backoff = kFeedbackMinBackoff;
    }
    // Returns at once when a stop is requested (base/clock.h), so Stop() is never held up here.
    if (!clock_.SleepUntil(stop, next)) return;
  }
}

}  // namespace lagwatch
