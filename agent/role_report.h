// What a server says about itself at each probe (writable or not, whom it replicates from), as
// the topology monitor hears it (agent/topology_monitor.h), and the timing rule that keeps a
// switchover orderly. Pure: no I/O, no clock; owned by the server's prober.
// Thread-compatible.
#pragma once

#include <optional>

#include "agent/assessment.h"
#include "agent/topology.h"
#include "base/clock.h"
#include "base/endpoint.h"

namespace lagwatch {

// How long a server that stopped answering in time is still held writable (ServerRole::
// held_writable) after its last answer said writable: a probe that times out on a busy host
// does not end a split brain, and a primary that is really gone gives way to the promoted one
// this long after it was last heard from.
inline constexpr Millis kHeldWritableFor(2000);

class RoleReporter {
 public:
  explicit RoleReporter(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}

  struct Report {
    ServerRole role;
    // Tell the monitor: the role changed, or the monitor asked for a confirmation.
    bool send = false;
    // A change to writable held back: poll the replication status at the next probe, and probe
    // again at once (the held change is reported when that status is in).
    bool poll_status_soon = false;
  };

  // The role this probe's assessment `a` shows, started at `probe_started`; `confirm` when the
  // monitor asked for the next report even if unchanged (an ambiguity to confirm). Remembers
  // what it reports.
  //
  // In a switchover read_only and replication change together, but the status is polled once a
  // second, and before the probe's query reads read_only: a change to writable waits for the
  // status of a later probe (polled at once) to say the rest. A server going read-only is no
  // candidate for the primary, and holding it back would show two writable servers (ambiguous)
  // in an orderly switchover, so only that direction waits.
  //
  // A server writable and replicating from nobody at its last answer is held writable while it
  // does not answer, for kHeldWritableFor after that answer, if its silence began with a probe
  // that timed out (a refused or lost connection is a server that is down: not held).
  Report Next(const Assessment& a, MonoTime probe_started, bool confirm);

 private:
  const Endpoint endpoint_;
  std::optional<ServerRole> last_;     // what was last reported
  std::optional<MonoTime> flip_seen_;  // when a change to writable not yet reported was first seen
  // When the last answer that said writable and replicating from nobody was asked for, while
  // answers say so (nullopt once one says otherwise).
  std::optional<MonoTime> writable_at_;
};

}  // namespace lagwatch
