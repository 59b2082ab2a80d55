// A SqlConnection for tests, with switches instead of a server: a script decides each
// statement's answer and how long it takes on a FakeClock, and every statement is recorded with
// the fake time it was sent. A statement that would outlast its deadline takes exactly until the
// deadline and fails with DeadlineExceeded, as MysqlConn does.
// Thread-safe: the worker under test queries while the test thread reads the record.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/fake_clock.h"
#include "base/mysql_conn.h"

namespace lagwatch {

class FakeSqlConnection final : public SqlConnection {
 public:
  // What one statement does.
  struct Answer {
    Result<QueryResult> result = QueryResult{};
    Millis latency{0};
    unsigned server_errno = 0;  // last_errno() after it (with a ServerError result)
  };
  // Called with the statement and how many statements came before it.
  using Script = std::function<Answer(const std::string& sql, size_t index)>;

  struct Sent {
    std::string sql;
    MonoTime at;
  };

  FakeSqlConnection(FakeClock* clock, Script script) : clock_(clock), script_(std::move(script)) {}

  Result<QueryResult> Query(std::string_view sql, MonoTime deadline) override {
    const MonoTime start = clock_->Now();
    Answer answer;
    {
      std::lock_guard lock(mu_);
      answer = script_(std::string(sql), sent_.size());
      sent_.push_back({std::string(sql), start});
      last_errno_ = answer.server_errno;
    }
    cv_.notify_all();
    if (start + answer.latency >= deadline) {
      clock_->Advance(deadline - start);
      return Status::DeadlineExceeded("no answer in time");
    }
    clock_->Advance(answer.latency);
    return answer.result;
  }
  unsigned last_errno() const override {
    std::lock_guard lock(mu_);
    return last_errno_;
  }

  // Waits (in real time, up to 10 s) until `pred` holds for the statements sent so far.
  bool WaitFor(const std::function<bool(const std::vector<Sent>&)>& pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return pred(sent_); });
  }
  std::vector<Sent> sent() const {
    std::lock_guard lock(mu_);
    return sent_;
  }

 private:
  FakeClock* const clock_;
  const Script script_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Sent> sent_;   // GUARDED_BY(mu_)
  unsigned last_errno_ = 0;  // GUARDED_BY(mu_)
};

// A connector that hands a worker `fake` (shared, so the test keeps reading its record).
inline SqlConnector FakeConnector(std::shared_ptr<FakeSqlConnection> fake) {
  struct Forward final : SqlConnection {
    explicit Forward(std::shared_ptr<FakeSqlConnection> f) : f(std::move(f)) {}
    Result<QueryResult> Query(std::string_view sql, MonoTime deadline) override {
      return f->Query(sql, deadline);
    }
    unsigned last_errno() const override { return f->last_errno(); }
    std::shared_ptr<FakeSqlConnection> f;
  };
  return [fake = std::move(fake)](const MysqlTarget&,
                                  std::stop_token) -> std::unique_ptr<SqlConnection> {
    return std::make_unique<Forward>(fake);
  };
}

// A one-row result: `values` under `columns`.
inline QueryResult Row(std::vector<std::string> columns, std::vector<std::string> values) {
  QueryResult r;
  r.columns = std::move(columns);
  r.rows.emplace_back(values.begin(), values.end());
  return r;
}

}  // namespace lagwatch
