#include "agent/discovery.h"

#include <algorithm>

#include "base/log.h"
#include "base/mysql_errors.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

// A host as a replica reports it: a DNS name or an IPv4/IPv6 address, nothing else (it goes into
// keys, labels and logs, and is connected to).
bool PlainHost(const std::string& h) {
  if (h.empty() || h.size() > 255) return false;
  return std::all_of(h.begin(), h.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_' || c == ':';
  });
}

// Row `row`'s cell in column `name`; nullptr when there is no such column or the row is short.
const std::optional<std::string>* CellAt(const QueryResult& r, size_t row, std::string_view name) {
  const int c = r.Column(name);
  if (c < 0 || static_cast<size_t>(c) >= r.rows[row].size()) return nullptr;
  return &r.rows[row][c];
}

}  // namespace

std::vector<ListedReplica> ParseReplicaHosts(const QueryResult& result, size_t max, int* skipped) {
  std::vector<ListedReplica> out;
  *skipped = 0;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const auto* host = CellAt(result, i, "Host");
    const auto* port = CellAt(result, i, "Port");
    // MySQL's manual shows Server_id; some versions print Server_Id.
    const auto* id = CellAt(result, i, "Server_id");
    if (!id) id = CellAt(result, i, "Server_Id");
    int64_t p = 0;  // 0: none (MySQL's "report_port not set")
    if (port && port->has_value()) p = ParseInt<int64_t>(**port).value_or(0);
    if (!host || !host->has_value() || !PlainHost(**host) || p < 1 || p > 65535) {
      ++*skipped;
      continue;
    }
    if (out.size() >= max) {
      ++*skipped;
      continue;
    }
    ListedReplica r;
    r.endpoint = {**host, static_cast<int>(p)};
    if (id && id->has_value()) r.server_id = ParseInt<int64_t>(**id).value_or(0);
    out.push_back(std::move(r));
  }
  return out;
}

bool DiscoveredSet::Update(const std::vector<ListedReplica>& listed, MonoTime now,
                           const std::set<std::string>& configured,
                           const std::set<int64_t>& configured_ids) {
  added_.clear();
  dropped_.clear();
  for (const auto& r : listed) {
    const std::string id = r.endpoint.Id();
    if (configured.count(id) || (r.server_id != 0 && configured_ids.count(r.server_id))) continue;
    auto it = seen_.find(id);
    if (it != seen_.end()) {
      it->second.second = now;
    } else if (seen_.size() < max_) {
      seen_.emplace(id, std::make_pair(r.endpoint, now));
      added_.push_back(r.endpoint);
    }
  }
  for (auto it = seen_.begin(); it != seen_.end();) {
    // Gone from the listing for the grace period, or configured since: configured entries win.
    if (now - it->second.second > grace_ || configured.count(it->first)) {
      dropped_.push_back(it->second.first);
      it = seen_.erase(it);
    } else {
      ++it;
    }
  }
  return !added_.empty() || !dropped_.empty();
}

std::vector<Endpoint> DiscoveredSet::replicas() const {
  std::vector<Endpoint> out;
  for (const auto& [id, e] : seen_) out.push_back(e.first);
  return out;
}

ReplicaDiscovery::ReplicaDiscovery(MysqlTarget primary, Millis interval, size_t max,
                                   ListedFn listed, FailedFn failed, const Clock& clock,
                                   SqlConnector connect)
    : interval_(interval),
      max_(max),
      listed_(std::move(listed)),
      failed_(std::move(failed)),
      clock_(clock),
      connect_(connect ? std::move(connect) : MysqlConnector(clock)),
      target_(std::move(primary)) {}

void ReplicaDiscovery::Start() {
  worker_.Start([this](std::stop_token stop) { Run(stop); });
}

void ReplicaDiscovery::SetPrimary(MysqlTarget primary) {
  std::lock_guard lock(mu_);
  target_ = std::move(primary);
  ++generation_;
  wake_.request_stop();
}

void ReplicaDiscovery::Run(std::stop_token stop) {
  std::unique_ptr<SqlConnection> conn;
  uint64_t generation = ~uint64_t{0};
  // MySQL 8.4 has only SHOW REPLICAS, MariaDB only SHOW SLAVE HOSTS (and SHOW REPLICA HOSTS).
  std::string statement = "SHOW SLAVE HOSTS";
  MonoTime next = clock_.Now();
  while (!stop.stop_requested()) {
    std::stop_source wake;
    {
      std::lock_guard lock(mu_);
      wake_ = wake;
      if (generation != generation_) {
        generation = generation_;
        conn = connect_(target_, stop);
      }
    }
    auto r = conn->Query(statement, clock_.Now() + interval_);
    if (!r.ok() && conn->last_errno() == kErParseError && statement == "SHOW SLAVE HOSTS") {
      statement = "SHOW REPLICAS";
      r = conn->Query(statement, clock_.Now() + interval_);
    }
    if (r.ok()) {
      int skipped = 0;
      listed_(ParseReplicaHosts(*r, max_, &skipped), skipped);
    } else if (r.status().code() != Status::Code::kCancelled) {
      const unsigned err = conn->last_errno();
      failed_(err == kErSpecificAccessDenied ? "privilege" : "query");
      LogLimited(LogLevel::kWarn, "discovery",
                 "replica discovery: " + statement + " failed: " + r.status().ToString() +
                     (err == kErSpecificAccessDenied
                          ? " (the primary's account needs REPLICATION MASTER ADMIN on "
                            "MariaDB, REPLICATION SLAVE on MySQL)"
                          : ""),
                 60);
    }
    next += interval_;
    const MonoTime now = clock_.Now();
    if (next < now) next = now;
    std::stop_callback forward(stop, [&wake] { wake.request_stop(); });
    clock_.SleepUntil(wake.get_token(), next);
  }
}

}  // namespace lagwatch
