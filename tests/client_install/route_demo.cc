// Built by tests/client_install_test against the installed client library only (pkg-config
// lagwatch-client): parses a replica's record as the agent writes it and routes a read to it, and
// sets up (without connecting) a contract reader for a Redis Cluster.
#include <cstdio>

#include "client/contract_reader.h"
#include "client/record.h"
#include "client/route.h"
#include "client/sql_classify.h"

int main() {
  using namespace lagwatch::client;
  FieldMap fields = {{"delay_ms", "12"},      {"delay_lower_ms", "3"},
                     {"state", "ok"},         {"healthy", "1"},
                     {"tier", "tier1"},       {"weight", "100"},
                     {"max_delay_ms", "200"}, {"seq", "4711"},
                     {"agent", "1"},          {"measured_at_ms", "1796004314440"}};
  auto record = ParseReplicaRecord("10.0.0.12:3306", fields);
  if (!record.ok()) {
    std::fprintf(stderr, "record refused\n");
    return 1;
  }
  Contract contract;
  contract.members = {"10.0.0.12:3306"};
  contract.replicas = {*record};
  SqlClass k = ClassifySql("SELECT id FROM orders WHERE id = 7");
  Decision d = Route({.read = k.read, .locking = k.locking}, Session{}, contract, SeededRandom(1));
  std::printf("%s %s\n", TargetName(d.target), d.replica.c_str());
  ReaderOptions options;
  options.redis.cluster = {{"10.0.0.5", 7000}};
  options.subscribe = false;
  ContractReader reader(options);  // connects lazily: nothing happens here
  return d.target == Target::kReplica && d.replica == "10.0.0.12:3306" ? 0 : 1;
}
