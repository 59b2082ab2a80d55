#include "bench/collectors.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/clock.h"

namespace lagwatch::bench {

void StartTicking(Worker& worker, std::chrono::microseconds period,
                  std::function<void(const std::stop_token&)> tick) {
  worker.Start([period, tick = std::move(tick)](std::stop_token stop) {
    const Clock& clock = SystemClock::Get();
    MonoTime next = clock.Now();
    while (!stop.stop_requested() && !Interrupted()) {
      tick(stop);
      next += period;
      next = std::max(next, clock.Now());
      if (!clock.SleepUntil(stop, next)) break;
    }
  });
}

// ---------------------------------------------------------------------------------------------

void OracleWriter::Start(std::chrono::microseconds period) {
  StartTicking(worker_, period, [this](const std::stop_token&) { Tick(); });
}

void OracleWriter::MoveTo(std::string socket) {
  std::lock_guard lock(mu_);
  target_ = std::move(socket);
  sql_.reset();
  arrived_ = false;
}

bool OracleWriter::Arrive() {
  auto r = sql_->Query("SELECT COALESCE(MAX(id), 0) FROM lwtest.oracle");
  if (!r) return false;
  const int64_t there = std::strtoll(r->First().value_or("0").c_str(), nullptr, 10);
  if (log_.rows.empty() && next_id_ == 0) {  // the first primary
    log_.first_id = next_id_ = there + 1;
    return true;
  }
  Move m{NowUs(), target_, there, 0, 0};
  for (int64_t id = std::max(there + 1, log_.first_id); id < next_id_; ++id) {
    OracleRow& row = log_.rows[static_cast<size_t>(id - log_.first_id)];
    if (!row.skipped && row.acked_us >= 0) ++m.lost;
    row.skipped = true;
  }
  next_id_ = std::max(next_id_, there + 1) + kIdJump;
  log_.rows.resize(static_cast<size_t>(next_id_ - log_.first_id), OracleRow{-1, -1, true});
  m.next_id = next_id_;
  moves_.push_back(std::move(m));
  return true;
}

void OracleWriter::Tick() {
  std::lock_guard lock(mu_);
  if (target_.empty()) return;
  if (!sql_) sql_ = std::make_unique<Sql>(target_);
  if (!arrived_) {
    if (!Arrive()) {
      ++errors_;
      last_error_ = sql_->error();
      return;
    }
    arrived_ = true;
  }
  const int64_t sent = NowUs();
  const bool ok = sql_->Exec("INSERT INTO lwtest.oracle (id, t_us) VALUES (" +
                             std::to_string(next_id_) + ", " + std::to_string(sent) + ")");
  const int64_t acked = NowUs();
  if (!ok) {
    ++errors_;
    last_error_ = sql_->error();
    // Refused (read-only) or never connected: not committed, the id is used again. Anything
    // else (a connection lost mid-statement) may have committed: the id is logged with an
    // unknown outcome and not used again.
    const unsigned e = sql_->error_number();
    if (e == 1290 || e == 2002 || e == 2003) return;
    log_.rows.push_back({sent, -1});
    ++next_id_;
    return;
  }
  log_.rows.push_back({sent, acked});
  ++next_id_;
}

// ---------------------------------------------------------------------------------------------

MoveWatcher::MoveWatcher(std::string socket, int64_t server_id, int agent_id, RedisConfig redis,
                         std::string pointer_key, std::string primary_id)
    : sql_(std::move(socket), 2),
      redis_(std::move(redis)),
      server_id_(server_id),
      query_(
          "SELECT server_id, UNIX_TIMESTAMP(updated_at) AS t FROM heartbeat.mysql_heartbeat "
          "WHERE id = " +
          std::to_string(agent_id)),
      pointer_key_(std::move(pointer_key)),
      primary_id_(std::move(primary_id)) {}

void MoveWatcher::Start() {
  StartTicking(worker_, std::chrono::microseconds(2000),
               [this](const std::stop_token&) { Tick(); });
}

void MoveWatcher::Tick() {
  if (!hb_seen_us_) {
    auto r = sql_.Query(query_);
    const int64_t now = NowUs();
    if (r && r->First() && std::strtoll(r->First()->c_str(), nullptr, 10) == server_id_) {
      hb_seen_us_ = now;
      hb_written_us_ = std::llround(std::strtod(r->Get("t").value_or("0").c_str(), nullptr) * 1e6);
    }
  }
  if (!pointer_seen_us_) {
    auto h = redis_.HGetAll({pointer_key_});
    const int64_t now = NowUs();
    if (h && !h->empty()) {
      auto it = h->front().find("primary");
      if (it != h->front().end() && it->second == primary_id_) pointer_seen_us_ = now;
    }
  }
}

// ---------------------------------------------------------------------------------------------

void OracleReader::Start(std::chrono::microseconds period) {
  StartTicking(worker_, period, [this](const std::stop_token&) { Tick(); });
}

void OracleReader::Tick() {
  ReaderSample s;
  s.sent_us = NowUs();
  auto r = sql_.Query("SELECT MAX(id) FROM lwtest.oracle");
  s.recv_us = NowUs();
  if (!r) {
    ++errors_;
    return;
  }
  auto v = r->First();
  s.max_id = v ? std::strtoll(v->c_str(), nullptr, 10) : 0;
  samples_.push_back(s);
  ++count_;
}

// ---------------------------------------------------------------------------------------------

RedisPoller::RedisPoller(RedisConfig redis, std::vector<std::string> keys)
    : redis_(std::move(redis)),
      keys_(std::move(keys)),
      records_(keys_.size()),
      counts_(keys_.size()) {}

void RedisPoller::Start(std::chrono::microseconds period) {
  StartTicking(worker_, period, [this](const std::stop_token&) { Tick(); });
}

void RedisPoller::Tick() {
  auto replies = redis_.HGetAll(keys_);
  const int64_t now = NowUs();
  ++polls_;
  if (!replies) {
    ++errors_;
    return;
  }
  for (size_t i = 0; i < keys_.size(); ++i) {
    const auto& h = (*replies)[i];
    auto& out = records_[i];
    LagwatchRecord rec;
    rec.seen_us = rec.last_seen_us = now;
    if (h.empty()) {
      rec.missing = true;
      // Only a disappearance is news; a key that never appeared yet is not recorded.
      if (!out.empty() && !out.back().missing) {
        out.push_back(rec);
        ++counts_[i];
      } else if (!out.empty()) {
        out.back().last_seen_us = now;
      }
      continue;
    }
    auto num = [&](const char* field) {
      auto it = h.find(field);
      return it == h.end() ? 0.0 : std::strtod(it->second.c_str(), nullptr);
    };
    auto str = [&](const char* field) {
      auto it = h.find(field);
      return it == h.end() ? std::string() : it->second;
    };
    rec.measured_at_ms = static_cast<int64_t>(num("measured_at_ms"));
    rec.delay_ms = num("delay_ms");
    if (h.count("delay_us") && h.count("measured_at_us")) {
      rec.measured_us = static_cast<int64_t>(num("measured_at_us"));
      rec.value_ms = num("delay_us") / 1000.0;
    } else {
      rec.measured_us = rec.measured_at_ms * 1000;
      rec.value_ms = rec.delay_ms;
    }
    rec.delay_lower_ms = num("delay_lower_ms");
    rec.healthy = str("healthy") == "1";
    rec.state = str("state");
    rec.seq = static_cast<int64_t>(num("seq"));
    rec.max_delay_ms = h.count("max_delay_ms") ? num("max_delay_ms") : -1;
    if (!out.empty()) {
      const auto& p = out.back();
      if (!p.missing && p.measured_at_ms == rec.measured_at_ms && p.delay_ms == rec.delay_ms &&
          p.delay_lower_ms == rec.delay_lower_ms && p.healthy == rec.healthy &&
          p.state == rec.state && p.seq == rec.seq && p.max_delay_ms == rec.max_delay_ms) {
        out.back().last_seen_us = now;  // the same record as last time
        continue;
      }
    }
    out.push_back(std::move(rec));
    ++counts_[i];
  }
}

// ---------------------------------------------------------------------------------------------

PtHeartbeatReader::PtHeartbeatReader(std::vector<int> pty_fds, const std::string& log_path)
    : fds_(std::move(pty_fds)),
      partial_(fds_.size()),
      readings_(fds_.size()),
      counts_(fds_.size()),
      closed_(fds_.size(), false),
      log_(log_path, std::ios::app) {}

void PtHeartbeatReader::Start() {
  StartTicking(worker_, std::chrono::microseconds(0),
               [this](const std::stop_token& stop) { Tick(stop); });
}

void PtHeartbeatReader::Tick(const std::stop_token& stop) {
  std::vector<pollfd> pfds;
  std::vector<size_t> which;
  for (size_t i = 0; i < fds_.size(); ++i) {
    if (closed_[i]) continue;
    pfds.push_back({fds_[i], POLLIN, 0});
    which.push_back(i);
  }
  if (pfds.empty()) {
    const Clock& clock = SystemClock::Get();
    clock.SleepUntil(stop, clock.Now() + std::chrono::milliseconds(20));
    return;
  }
  if (poll(pfds.data(), pfds.size(), 20) <= 0) return;
  for (size_t k = 0; k < pfds.size(); ++k) {
    if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const size_t i = which[k];
    char buf[4096];
    ssize_t n = read(fds_[i], buf, sizeof buf);
    const int64_t now = NowUs();
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) closed_[i] = true;  // EIO: child gone
      continue;
    }
    std::string& p = partial_[i];
    p.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = p.find('\n')) != std::string::npos) {
      std::string line = p.substr(0, nl);
      p.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      Line(i, line, now);
    }
  }
}

void PtHeartbeatReader::Line(size_t i, const std::string& line, int64_t now) {
  log_ << now << " replica" << (i + 1) << " " << line << "\n";
  // "0.50s [  0.01s,  0.00s,  0.00s ]": the first number is the current delay in seconds.
  const char* begin = line.c_str();
  char* end = nullptr;
  double secs = std::strtod(begin, &end);
  if (end == begin || *end != 's') {
    ++unparsed_;
    return;
  }
  readings_[i].push_back({now, now, secs * 1000.0});
  ++counts_[i];
}

// ---------------------------------------------------------------------------------------------

void ValuePoller::Start(std::chrono::microseconds period) {
  StartTicking(worker_, period, [this](const std::stop_token&) { Tick(); });
}

void ValuePoller::Tick() {
  ToolReading r;
  r.sent_us = NowUs();
  auto res = sql_.Query(query_);
  r.recv_us = NowUs();
  if (!res) {
    ++errors_;
    last_error_ = sql_.error();
    return;
  }
  if (res->rows.empty()) {  // e.g. SHOW SLAVE STATUS on a server that is not a replica
    ++errors_;
    last_error_ = "no row";
    return;
  }
  if (auto v = res->Get(column_)) r.value_ms = std::strtod(v->c_str(), nullptr) * scale_;
  readings_.push_back(r);
}

// ---------------------------------------------------------------------------------------------

void StreamStatePoller::Start(std::chrono::microseconds period) {
  StartTicking(worker_, period, [this](const std::stop_token&) { Tick(); });
}

void StreamStatePoller::Tick() {
  const HttpResult r = HttpGet(port_, "/api/v1/primary", std::chrono::milliseconds(1000));
  const auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (r.status != 200 || !j.is_object() || !j.contains("binlog_stream")) {
    ++errors_;
    return;
  }
  const auto& s = j["binlog_stream"];
  if (!s.is_object() || !s.value("usable", nlohmann::json()).is_boolean() ||
      !s.value("delivery_bound_ms", nlohmann::json()).is_number()) {
    ++errors_;
    return;
  }
  const auto why = s.value("why_not", nlohmann::json());
  readings_.push_back({r.sent_us, s["usable"].get<bool>(), s["delivery_bound_ms"].get<double>(),
                       why.is_string() ? why.get<std::string>() : std::string()});
}

}  // namespace lagwatch::bench
