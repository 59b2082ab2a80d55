#include "bench/host.h"

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "bench/bench_util.h"

namespace lagwatch::bench {

std::optional<double> CpuSeconds(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream in(stat.substr(paren + 2));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string x; in >> x && f.size() < 13;) f.push_back(x);
  if (f.size() < 13) return std::nullopt;
  return (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

Memory MemoryOf(pid_t pid) {
  Memory m;
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);) {
    auto value = [&] { return std::strtod(line.c_str() + line.find(':') + 1, nullptr); };
    if (line.starts_with("VmRSS:")) m.rss_mb = value() / 1024.0;  // kB
    if (line.starts_with("VmHWM:")) m.hwm_mb = value() / 1024.0;
    if (line.starts_with("Threads:")) m.threads = static_cast<int>(value());
  }
  return m;
}

size_t OpenFds(pid_t pid) {
  std::error_code ec;
  auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
  return ec ? 0 : static_cast<size_t>(std::distance(it, std::filesystem::directory_iterator()));
}

HostCpu ReadHostCpu() {
  std::istringstream in(ReadFile("/proc/stat"));
  std::string cpu;
  in >> cpu;
  HostCpu h;
  double v[8] = {};  // user nice system idle iowait irq softirq steal
  for (double& x : v) in >> x;
  for (double x : v) h.total += x;
  h.busy = h.total - v[3] - v[4];
  return h;
}

double HostBusyCores(std::chrono::milliseconds d) {
  const HostCpu a = ReadHostCpu();
  Pause(d);
  const HostCpu b = ReadHostCpu();
  return (b.busy - a.busy) / (b.total - a.total) *
         static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN));
}

double WaitQuiet(std::chrono::seconds wait, double quiet_cores) {
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const double busy = HostBusyCores(std::chrono::milliseconds(2000));
    if (busy < quiet_cores || std::chrono::steady_clock::now() >= until) return busy;
  }
}

rlim_t RaiseFdLimit(rlim_t want) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur >= want) return lim.rlim_cur;
  if (lim.rlim_max < want) lim.rlim_max = want;  // allowed as root
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
    throw std::runtime_error("cannot raise the open-files limit to " + std::to_string(want));
  }
  return lim.rlim_cur;
}

std::vector<Alias> MakeAliases(int n, const int (&replica_ports)[2]) {
  std::vector<Alias> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({"127.0." + std::to_string(1 + i / kAddressesPerSubnet) + "." +
                       std::to_string(1 + i % kAddressesPerSubnet),
                   replica_ports[i % 2], i % 2});
  }
  return out;
}

}  // namespace lagwatch::bench
