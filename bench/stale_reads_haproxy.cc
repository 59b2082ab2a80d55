#include "bench/stale_reads_haproxy.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace lagwatch::bench {
namespace {

std::string Password() {
  static const char kChars[] = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  std::random_device rd;
  std::string out = "lwr-";
  for (int i = 0; i < 20; ++i) out += kChars[rd() % (sizeof kChars - 1)];
  return out;
}

void Write(const std::string& path, const std::string& text, mode_t mode) {
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
  }
  ::chmod(path.c_str(), mode);
}

// What `lagwatch haproxy-config` prints for `mode` and `backend`.
std::string Generated(const std::string& lagwatch, const std::string& config,
                      const std::string& mode, const std::string& backend, const std::string& log) {
  const std::string out = log + "." + mode;
  auto child = Child::Spawn(
      {lagwatch, "haproxy-config", "--config", config, "--mode", mode, "--backend", backend}, out);
  auto rc = child->Wait(std::chrono::seconds(10));
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  if (!rc || *rc != 0) {
    throw std::runtime_error("lagwatch haproxy-config --mode " + mode + " failed: " + text.str());
  }
  return text.str();
}

std::string Address(int port) { return "127.0.0.1:" + std::to_string(port); }

bool PortOpen(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

Sql::Tcp HaproxyRows::Reader(HaproxyPool p) const {
  return {"127.0.0.1", PoolPort(p), "lw_reader", reader_password};
}

HaproxyRows PrepareHaproxy(const std::string& sandbox_dir, int base_port,
                           const std::string& primary_socket, const std::string& lagwatch_binary) {
  HaproxyRows rows;
  rows.dir = sandbox_dir + "/haproxy";
  rows.config = rows.dir + "/haproxy.cfg";
  rows.socket = rows.dir + "/admin.sock";
  rows.lagwatch = sandbox_dir + "/lagwatch-haproxy.json";
  rows.base_port = base_port;
  rows.reader_password = Password();
  ::mkdir(rows.dir.c_str(), 0700);

  // The reader (SELECT on the bench's tables, over TCP) and mysql-check's user (it only logs in,
  // without a password); made on the primary, they replicate.
  for (const std::string& q :
       {std::string("CREATE OR REPLACE USER 'lw_reader'@'127.0.0.1' IDENTIFIED BY '") +
            rows.reader_password + "'",
        std::string("GRANT SELECT ON lwbench.* TO 'lw_reader'@'127.0.0.1'"),
        std::string("CREATE OR REPLACE USER 'lw_haproxy'@'127.0.0.1'")}) {
    AdminQuery(primary_socket, q);
  }

  // The external check: Seconds_Behind_Master <= 1 as a mysqlchk-style script judges it (a server
  // with no replication status is the primary: up), read as the sandbox's probing user.
  const std::string check = rows.dir + "/sbm_check";
  Write(check,
        "#!/bin/bash\n"
        "# HAProxy external check: $3 the server's address, $4 its port.\n"
        "out=$(/usr/bin/mariadb --defaults-file=" +
            sandbox_dir +
            "/replica.cnf --connect-timeout=1 -h \"$3\" -P \"$4\" "
            "-e 'SHOW SLAVE STATUS\\G' 2>/dev/null) || exit 1\n"
            "[[ -z $out ]] && exit 0\n"
            "sbm=$(/usr/bin/awk '$1 == \"Seconds_Behind_Master:\" { print $2 }' <<<\"$out\")\n"
            "[[ $sbm =~ ^[0-9]+$ ]] && ((sbm <= 1))\n",
        0700);

  // lagwatch's configuration: the sandbox's, and the push instance.
  {
    std::ifstream in(sandbox_dir + "/lagwatch.json");
    nlohmann::json j = nlohmann::json::parse(in, nullptr, true, true);
    j["haproxy"] = {
        {"instances", {{{"name", "bench"}, {"socket", rows.socket}, {"backend", "lw_push"}}}}};
    Write(rows.lagwatch, j.dump(2), 0600);
  }

  const std::string log = rows.dir + "/generated";
  std::string cfg =
      "# bench/stale_reads --haproxy: four pools in front of the sandbox, one per way of judging\n"
      "# its replicas.\n"
      "global\n"
      "    maxconn 4000\n"
      "    stats socket " +
      rows.socket +
      " mode 600 level admin\n"
      "    insecure-fork-wanted\n"
      "    external-check\n"
      "defaults\n"
      "    mode tcp\n"
      "    timeout connect 1s\n"
      "    timeout client 1h\n"
      "    timeout server 1h\n"
      "    timeout check 1s\n";
  auto servers = [&](const std::string& extra) {
    return "    server replica1 " + Address(base_port + 1) + extra + "\n" + "    server replica2 " +
           Address(base_port + 2) + extra + "\n" + "    server primary " + Address(base_port) +
           extra + " backup\n";
  };
  cfg += "listen lw_stock\n    bind " + Address(rows.PoolPort(HaproxyPool::kStock)) +
         "\n    balance leastconn\n    option mysql-check user lw_haproxy\n" + servers(" check");
  cfg += "listen lw_sbm\n    bind " + Address(rows.PoolPort(HaproxyPool::kSbm)) +
         "\n    balance leastconn\n    option external-check\n"
         "    external-check path \"/usr/bin:/bin\"\n    external-check command " +
         check + "\n" + servers(" check inter 2s fall 2 rise 2");
  cfg += "frontend lw_pull_fe\n    bind " + Address(rows.PoolPort(HaproxyPool::kPull)) +
         "\n    default_backend lw_pull\n" +
         Generated(lagwatch_binary, rows.lagwatch, "http", "lw_pull", log);
  cfg += "frontend lw_push_fe\n    bind " + Address(rows.PoolPort(HaproxyPool::kPush)) +
         "\n    default_backend lw_push\n" +
         Generated(lagwatch_binary, rows.lagwatch, "push", "lw_push", log);
  Write(rows.config, cfg, 0600);
  return rows;
}

std::unique_ptr<Child> StartHaproxy(const HaproxyRows& rows, const std::string& log) {
  auto haproxy = Child::Spawn({"/usr/sbin/haproxy", "-db", "-f", rows.config}, log);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (HaproxyPool p :
       {HaproxyPool::kStock, HaproxyPool::kSbm, HaproxyPool::kPull, HaproxyPool::kPush}) {
    while (!PortOpen(rows.PoolPort(p))) {
      if (!haproxy->Running() || std::chrono::steady_clock::now() > until) {
        throw std::runtime_error("haproxy did not listen on " + std::to_string(rows.PoolPort(p)) +
                                 ": see " + log);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return haproxy;
}

}  // namespace lagwatch::bench
