// TlsWatch: the certificates of every server the agent reaches over TLS, watched so that one
// expiring is an alert days ahead, not an outage (docs/metrics.md, "TLS"; the alert
// LagwatchTlsCertificateExpiresSoon).
//
// The probers tell it each MySQL server's certificate as their connections' handshakes see it
// (Learned). At start, after every SetTargets (a reload) and then every `interval`, it connects to
// Redis when redis.tls is enabled (the handshake's own peer certificate) and to each MySQL server
// whose TLS is enabled, as the probers do (MysqlConn::InspectTls), unless a prober's connection
// showed that server's certificate within the last `interval`: a prober's connection lasts as
// long as its server does, so a certificate replaced on the server is seen by the next round,
// and at start the probers' own connections spare the servers a second handshake each. It sets
//   lagwatch_tls_certificate_expiry_timestamp_seconds{target, server}
//   lagwatch_tls_certificate_soonest_expiry_timestamp_seconds
// A server it cannot reach keeps its last known expiry (the probers count and log the failure);
// a server no longer watched loses its series. It logs (rate-limited) a warning for a certificate
// within 14 days of expiry.
//
// One thread of its own, one connection at a time with a 3 s deadline: a round at start (or after
// a reload) spaces them 100 ms apart, later rounds spread them over the interval (1,000 servers:
// about one a second), so the watch never competes with the probes for the CPU. Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mysql_conn.h"
#include "base/redis_conn.h"
#include "exporters/metrics.h"

namespace lagwatch {

class TlsWatch {
 public:
  // `metrics` and `clock` must outlive the watch. Redis is watched when redis.tls.enabled.
  TlsWatch(RedisConfig redis, Metrics* metrics, const Clock& clock,
           Millis interval = Millis(15 * 60 * 1000));
  ~TlsWatch() { Stop(); }
  TlsWatch(const TlsWatch&) = delete;
  TlsWatch& operator=(const TlsWatch&) = delete;

  // The MySQL servers to watch (those with tls.enabled are; the others are skipped); the next
  // round starts at once.
  void SetTargets(std::vector<MysqlTarget> mysql);
  // A connection made elsewhere (a prober's) to the MySQL server `server` (host:port) saw its
  // certificate expire at `not_after_unix`; ignored for a server not watched. Any thread.
  void Learned(const std::string& server, int64_t not_after_unix);
  void Start();
  // Stops and joins the thread (within one connect's deadline).
  void Stop();

  // One round, on the caller's thread (the thread's body; public for tests): `gap` between two
  // MySQL servers' connections; 0: the interval spread over the servers.
  void RunRound(const std::stop_token& stop, Millis gap);

 private:
  void Run(const std::stop_token& stop);
  // Waits `gap` (a reload cuts it short); false when stopping.
  bool Pause(const std::stop_token& stop, Millis gap);
  // Records one server's certificate expiry (nullopt: none learned this round).
  // `learned`: from a prober's connection (Learned), not the watch's own.
  void Note(const char* target, const std::string& server, std::optional<int64_t> not_after,
            bool learned = false);
  // Whether a prober's connection showed `server`'s certificate within the last interval.
  bool LearnedRecently(const std::string& server);
  void UpdateSoonest();  // REQUIRES: mu_ held

  // Constant after construction.
  const RedisConfig redis_;
  Metrics* const metrics_;
  const Clock& clock_;
  const Millis interval_;

  std::mutex mu_;
  std::condition_variable_any wake_;
  std::vector<MysqlTarget> targets_;  // GUARDED_BY(mu_)
  std::set<std::string> watched_;     // GUARDED_BY(mu_): targets_ with TLS enabled, by host:port
  bool again_ = false;                // GUARDED_BY(mu_): SetTargets asked for a round now
  // By "target server": the last expiry known, and its series.
  struct Known {
    int64_t not_after_unix;
    prometheus::Gauge* gauge;
    std::optional<MonoTime> learned_at;  // the last Learned, if any
  };
  std::map<std::pair<std::string, std::string>, Known> known_;  // GUARDED_BY(mu_)
  std::jthread thread_;
};

}  // namespace lagwatch
