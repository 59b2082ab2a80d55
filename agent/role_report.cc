#include "agent/role_report.h"

namespace lagwatch {

RoleReporter::Report RoleReporter::Next(const Assessment& a, MonoTime probe_started, bool confirm) {
  Report r;
  ServerRole& role = r.role;
  role.endpoint = endpoint_;
  role.answered = a.health.reachable;
  role.server_id = a.server_id;
  role.read_only = a.read_only;
  if (a.status.known) {
    role.replicates = a.status.configured;
    role.source_host = a.status.source_host;
    role.source_port = a.status.source_port;
    role.source_server_id = a.status.source_server_id;
    role.source_connected = a.status.io_running;
  }
  if (last_ && last_->answered && role.answered && role.read_only == false &&
      last_->read_only == true) {
    if (!flip_seen_) flip_seen_ = probe_started;
    if (!a.status_polled || probe_started == *flip_seen_) {
      role.read_only = last_->read_only;
      r.poll_status_soon = true;
    }
  } else {
    flip_seen_.reset();
  }
  if (role.answered) {
    const bool writable = role.read_only == false && role.replicates == false;
    writable_at_ = writable ? std::optional<MonoTime>(probe_started) : std::nullopt;
  } else if (writable_at_ && probe_started - *writable_at_ < kHeldWritableFor) {
    role.held_writable =
        a.probe_status.code() == Status::Code::kDeadlineExceeded || (last_ && last_->held_writable);
  }
  // Unchanged roles are not reported again, but when asked to confirm an ambiguity.
  r.send = !(last_ == role) || confirm;
  if (r.send) last_ = role;
  return r;
}

}  // namespace lagwatch
