#include "client/record.h"

#include "base/binlog_coords.h"
#include "base/contract.h"
#include "base/gtid.h"
#include "base/gtid_set.h"
#include "base/strings.h"

namespace lagwatch::client {
namespace {

// Text from Redis in an error message: escaped, and cut so a hostile value cannot grow a log line.
std::string Quoted(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out = "\"" + EscapeControl(s.substr(0, kMax)) + "\"";
  if (s.size() > kMax) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

Status Bad(std::string_view field, std::string_view why, std::string_view value) {
  return Status::DataError(std::string(field) + ": " + std::string(why) + ", got " + Quoted(value));
}

const std::string* Find(const FieldMap& fields, const char* name) {
  auto it = fields.find(name);
  return it == fields.end() ? nullptr : &it->second;
}

// A required integer field in [min, max].
Status ReadInt(const FieldMap& fields, const char* name, int64_t min, int64_t max, int64_t* out) {
  const std::string* v = Find(fields, name);
  if (!v) return Status::DataError(std::string(name) + ": missing");
  auto n = ParseInt<int64_t>(*v);
  if (!n || *n < min || *n > max) {
    return Bad(name, "not an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]",
               *v);
  }
  *out = *n;
  return Status::Ok();
}

}  // namespace

std::optional<ReplicaState> ParseReplicaState(std::string_view text) {
  static_assert(contract::kReplicaStateCount == static_cast<size_t>(ReplicaState::kUnverified) + 1);
  for (size_t i = 0; i < contract::kReplicaStateCount; ++i) {
    if (text == contract::kReplicaStates[i]) return static_cast<ReplicaState>(i);
  }
  return std::nullopt;
}

bool IsReplicaId(std::string_view id) {
  const size_t colon = id.rfind(':');
  if (colon == std::string_view::npos || !IsToken(id.substr(0, colon), "._:-", 1, 253)) {
    return false;
  }
  std::string_view port = id.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port[0] == '0') return false;
  auto n = ParseInt<uint32_t>(port);
  return n && *n >= 1 && *n <= 65535;
}

Result<Position> ParsePosition(PositionsKind kind, std::string_view text) {
  if (text.empty()) return Status::DataError("position: empty");
  switch (kind) {
    case PositionsKind::kMariaDbGtid: {
      auto p = GtidPos::Parse(text);
      if (!p.ok()) return p.status();
      if (p->empty()) return Status::DataError("position: empty");
      return Position(std::move(p).value());
    }
    case PositionsKind::kMysqlGtid: {
      auto s = GtidSet::Parse(text);
      if (!s.ok()) return s.status();
      if (s->empty()) return Status::DataError("position: empty");
      return Position(std::move(s).value());
    }
    case PositionsKind::kBinlog: {
      const size_t colon = text.rfind(':');
      if (colon == std::string_view::npos) {
        return Bad("position", "binary log coordinates are file:offset", text);
      }
      // Quotes, backslashes and control bytes have no business in a file name a router may
      // quote into SQL or a log line.
      for (char ch : text) {
        if (ch == '\'' || ch == '"' || ch == '`' || ch == '\\' ||
            static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
          return Bad("position", "a quote, backslash or control byte in a file name", text);
        }
      }
      auto c = ParseBinlogCoords(text.substr(0, colon), text.substr(colon + 1));
      if (!c.ok()) return c.status();
      return Position(std::move(c).value());
    }
    case PositionsKind::kNone:
      break;
  }
  return Status::DataError("position: kind none has no position");
}

Result<ReplicaRecord> ParseReplicaRecord(std::string_view id, const FieldMap& fields) {
  if (!IsReplicaId(id)) return Bad("replica", "not host:port", id);
  namespace f = contract::field;
  ReplicaRecord r;
  r.id = std::string(id);
  constexpr int64_t kMax = INT64_MAX;
  int64_t healthy = 0, weight = 0, max_delay = 0;
  for (Status s : {ReadInt(fields, f::kDelayMs, 0, kMax, &r.delay_ms),
                   ReadInt(fields, f::kDelayLowerMs, 0, kMax, &r.delay_lower_ms),
                   ReadInt(fields, f::kHealthy, 0, 1, &healthy),
                   ReadInt(fields, f::kWeight, 0, kMaxWeight, &weight),
                   ReadInt(fields, f::kMaxDelayMs, -1, kMax, &max_delay),
                   ReadInt(fields, f::kSeq, 0, kMax, &r.seq),
                   ReadInt(fields, f::kMeasuredAtMs, 0, kMax, &r.measured_at_ms)}) {
    if (!s.ok()) return s;
  }
  // ParseInt takes "01" (std::from_chars refuses "+1"); the contract writes "1" or "0" exactly.
  if (fields.at(f::kHealthy).size() != 1)
    return Bad(f::kHealthy, "not 1 or 0", fields.at(f::kHealthy));
  r.healthy = healthy == 1;
  r.weight = static_cast<int>(weight);
  if (max_delay >= 0) r.max_delay_ms = max_delay;

  const std::string* state = Find(fields, f::kState);
  if (!state) return Status::DataError("state: missing");
  auto st = ParseReplicaState(*state);
  if (!st) return Bad(f::kState, "unknown state", *state);
  r.state = *st;

  const std::string* tier = Find(fields, f::kTier);
  if (!tier || !IsToken(*tier, "_.:-", 1, 64)) {
    return Bad(f::kTier, "not 1..64 of [A-Za-z0-9_.:-]", tier ? *tier : "");
  }
  r.tier = *tier;
  if (const std::string* agent = Find(fields, f::kAgent)) r.agent = *agent;

  if (r.healthy && r.state != ReplicaState::kOk && r.state != ReplicaState::kPrimaryUnknown) {
    return Bad(f::kHealthy, "1 with a state that is never healthy", *state);
  }
  if (r.healthy && !r.usable()) {
    return Bad(f::kHealthy, "1 over the tier's limit", fields.at(f::kDelayMs));
  }

  PositionsKind kind = PositionsKind::kNone;
  if (const std::string* k = Find(fields, f::kPositionKind)) {
    auto parsed = ParsePositionsKind(*k);
    if (!parsed) return Bad(f::kPositionKind, "unknown kind", *k);
    kind = *parsed;
  }
  const std::string* position = Find(fields, f::kPosition);
  if (position && !position->empty()) {
    if (kind == PositionsKind::kNone) return Bad(f::kPosition, "set with kind none", *position);
    auto p = ParsePosition(kind, *position);
    if (!p.ok()) return Status::DataError("position: " + p.status().message());
    r.position = std::move(p).value();
  }
  return r;
}

const char* PrimaryCircuitName(PrimaryCircuit circuit) {
  switch (circuit) {
    case PrimaryCircuit::kUp:
      return "up";
    case PrimaryCircuit::kDegraded:
      return "degraded";
    case PrimaryCircuit::kDown:
      return "down";
    case PrimaryCircuit::kAmbiguous:
      return "ambiguous";
    case PrimaryCircuit::kUnknown:
      break;
  }
  return "unknown";
}

namespace {

std::optional<PrimaryCircuit> ParseCircuit(std::string_view s) {
  for (PrimaryCircuit c : {PrimaryCircuit::kUp, PrimaryCircuit::kDegraded, PrimaryCircuit::kDown,
                           PrimaryCircuit::kAmbiguous}) {
    if (s == PrimaryCircuitName(c)) return c;
  }
  return std::nullopt;
}

// How bad a circuit is, for taking the worse of two.
int Severity(PrimaryCircuit c) {
  switch (c) {
    case PrimaryCircuit::kUp:
      return 0;
    case PrimaryCircuit::kDegraded:
      return 1;
    case PrimaryCircuit::kDown:
      return 2;
    case PrimaryCircuit::kAmbiguous:
      return 3;
    case PrimaryCircuit::kUnknown:
      break;
  }
  return -1;
}

bool IsTopology(std::string_view s) { return contract::IsTopologyState(s); }

}  // namespace

Result<PrimaryInfo> ParsePrimary(const FieldMap& pointer, const FieldMap* primary_key) {
  namespace pf = contract::primary_field;
  PrimaryInfo info;
  const std::string* id = Find(pointer, pf::kPrimary);
  if (!id || !IsReplicaId(*id)) return Bad(pf::kPrimary, "not host:port", id ? *id : "");
  const std::string* state = Find(pointer, pf::kState);
  auto circuit = state ? ParseCircuit(*state) : std::nullopt;
  if (!circuit) return Bad(pf::kState, "not up, degraded, down or ambiguous", state ? *state : "");
  const std::string* topology = Find(pointer, pf::kTopology);
  if (!topology || !IsTopology(*topology)) {
    return Bad(pf::kTopology, "not ok, unknown or ambiguous", topology ? *topology : "");
  }
  info.id = *id;
  info.circuit = *circuit;
  info.topology = *topology;
  if (primary_key) {
    const FieldMap& k = *primary_key;
    const std::string* key_state = Find(k, pf::kState);
    auto key_circuit = key_state ? ParseCircuit(*key_state) : std::nullopt;
    int64_t read_only = 0, last_write = 0, failures = 0;
    if (key_circuit && ReadInt(k, pf::kReadOnly, 0, 1, &read_only).ok() &&
        ReadInt(k, pf::kLastWriteMs, 0, INT64_MAX, &last_write).ok() &&
        ReadInt(k, pf::kConsecutiveFailures, 0, INT64_MAX, &failures).ok()) {
      if (Severity(*key_circuit) > Severity(info.circuit)) info.circuit = *key_circuit;
      info.key_valid = true;
      info.read_only = read_only == 1;
      info.last_write_ms = last_write;
      info.consecutive_failures = failures;
    }
  }
  return info;
}

}  // namespace lagwatch::client
