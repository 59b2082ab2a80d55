// The HAProxy rows of bench_stale_reads (bench/stale_reads --haproxy): one HAProxy 2.6 on loopback
// in front of the sandbox's servers, four TCP pools on four ports, each deciding which replica
// serves reads by its own health check:
//   - stock:  `option mysql-check` (it only logs in), HAProxy's default `inter 2s`;
//   - sbm:    an external check that reads SHOW SLAVE STATUS and passes while
//             Seconds_Behind_Master <= 1 (the clustercheck / mysqlchk style), `inter 2s fall 2`;
//   - pull:   lagwatch's HTTP check (`lagwatch haproxy-config --mode http`), `inter 100ms`;
//   - push:   lagwatch's runtime API pushes (`lagwatch haproxy-config --mode push`).
// Each pool keeps the primary as a backup. The pull and push backends are the generated ones, so
// the bench runs what an operator would. A reader is a plain MySQL client: it connects to a pool's
// port as an ordinary user, reads, and disconnects (a request's connection, as PHP and many pools
// make it), retrying once on a connection cut by HAProxy.
#pragma once

#include <memory>
#include <string>

#include "bench/bench_util.h"

namespace lagwatch::bench {

enum class HaproxyPool { kStock, kSbm, kPull, kPush };

// The sandbox's side of it: users, HAProxy's configuration, lagwatch's configuration.
struct HaproxyRows {
  std::string dir;              // DIR/haproxy
  std::string config;           // DIR/haproxy/haproxy.cfg
  std::string socket;           // the runtime API's socket (push)
  std::string lagwatch;         // DIR/lagwatch-haproxy.json: the sandbox's, and the push instance
  int base_port = 0;            // the sandbox's; the pools listen on base_port + 11 .. + 14
  std::string reader_password;  // made for this run
  int PoolPort(HaproxyPool p) const { return base_port + 11 + static_cast<int>(p); }
  // How a reader logs in through a pool.
  Sql::Tcp Reader(HaproxyPool p) const;
};

// Prepares everything before lagwatch starts: the reader and mysql-check users on the primary
// (they replicate), the external check's script and option file, lagwatch's configuration with
// the push instance, and HAProxy's configuration with the generated pull and push backends
// (`lagwatch haproxy-config`, run from `lagwatch_binary`). Throws std::runtime_error.
HaproxyRows PrepareHaproxy(const std::string& sandbox_dir, int base_port,
                           const std::string& primary_socket, const std::string& lagwatch_binary);

// Starts HAProxy (foreground, its output in `log`) and waits for every pool's port. Throws.
std::unique_ptr<Child> StartHaproxy(const HaproxyRows& rows, const std::string& log);

}  // namespace lagwatch::bench
