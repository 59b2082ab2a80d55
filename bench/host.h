// What the scale benches (bench_scale, bench_fleet) read of the host they run on: a process's CPU
// and memory from /proc, the host's busy cores, the open-files limit, and the sandbox's two
// replicas behind loopback aliases (the "N replicas" lagwatch is given).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace lagwatch::bench {

// utime + stime of a process (all its threads), in seconds; nullopt if it is gone.
std::optional<double> CpuSeconds(pid_t pid);

struct Memory {
  double rss_mb = 0;
  double hwm_mb = 0;  // peak RSS
  int threads = 0;
};
Memory MemoryOf(pid_t pid);

size_t OpenFds(pid_t pid);

// Busy and total jiffies of the whole host, from /proc/stat's "cpu" line.
struct HostCpu {
  double busy = 0, total = 0;
};
HostCpu ReadHostCpu();

// How busy the whole host is over `d`, in cores: other work here skews every timing.
double HostBusyCores(std::chrono::milliseconds d);

// Waits (up to `wait`) until fewer than `quiet_cores` are busy; returns how busy it was last.
double WaitQuiet(std::chrono::seconds wait, double quiet_cores);

// lagwatch (a child) needs a descriptor per replica: children inherit our limit. Raises the soft
// limit to `want` (root may raise the hard one too); throws std::runtime_error when it cannot.
rlim_t RaiseFdLimit(rlim_t want);

// One of the N replicas lagwatch is given: the sandbox's replica `replica` (0 or 1) at its own
// loopback address. All of 127.0.0.0/8 is loopback on Linux and the kernel gives such connections
// the source address 127.0.0.1, so the sandbox's accounts match and nothing leaves the host.
struct Alias {
  std::string host;
  int port = 0;
  int replica = 0;  // 0: replica1, 1: replica2
  std::string Id() const { return host + ":" + std::to_string(port); }
};
inline constexpr int kAddressesPerSubnet = 250;
// Aliases 0..n-1: alias i is replica i % 2 at 127.0.(1 + i/250).(1 + i%250), on that replica's
// port (`replica_ports`: replica1's and replica2's).
std::vector<Alias> MakeAliases(int n, const int (&replica_ports)[2]);

}  // namespace lagwatch::bench
