#include "bench/collectors.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

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

void OracleWriter::Tick() {
  const int64_t sent = NowUs();
  const bool ok =
      sql_.Exec("INSERT INTO lwtest.oracle (t_us) VALUES (" + std::to_string(sent) + ")");
  const int64_t acked = NowUs();
  if (!ok) {
    // Its outcome is unknown; if it did commit, its id shows up as a gap below and the truth
    // that would depend on it is reported as unknown.
    ++errors_;
    last_error_ = sql_.error();
    return;
  }
  const auto id = static_cast<int64_t>(sql_.last_insert_id());
  if (!have_first_) {
    log_.first_id = id;
    have_first_ = true;
  }
  const int64_t index = id - log_.first_id;
  if (index < static_cast<int64_t>(log_.rows.size())) {  // cannot happen with one writer
    ++errors_;
    last_error_ = "AUTO_INCREMENT went backwards";
    return;
  }
  log_.rows.resize(static_cast<size_t>(index));  // gaps: rows of unknown outcome
  log_.rows.push_back({sent, acked});
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

RedisPoller::RedisPoller(int port, std::vector<std::string> keys)
    : redis_(port), keys_(std::move(keys)), records_(keys_.size()), counts_(keys_.size()) {}

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
    rec.delay_lower_ms = num("delay_lower_ms");
    rec.healthy = str("healthy") == "1";
    rec.state = str("state");
    rec.seq = static_cast<int64_t>(num("seq"));
    if (!out.empty()) {
      const auto& p = out.back();
      if (!p.missing && p.measured_at_ms == rec.measured_at_ms && p.delay_ms == rec.delay_ms &&
          p.delay_lower_ms == rec.delay_lower_ms && p.healthy == rec.healthy &&
          p.state == rec.state && p.seq == rec.seq) {
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

}  // namespace lagwatch::bench
