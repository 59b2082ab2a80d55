// The contract's Redis as every part of lagwatch reaches it (the publisher, the router feedback
// reader, `lagwatch check`, the routers' client library): one server, the master Redis Sentinel
// names, or a Redis Cluster (docs/redis.md, "Redis Cluster"). Every connection is made by the
// one connect path of base/redis_conn.h (TLS, AUTH with an ACL user, deadlines).
//
// Work is given as units (base/redis_cluster.h, RedisUnit): commands for one key's slot, sent
// back to back. One server or Sentinel's master serves every slot. On a cluster, RedisClient keeps
// the slot map (CLUSTER SLOTS, asked of any node that answers: the known masters, then the
// seeds) and one connection per master; Run sends each unit to the master that serves its key,
// every master's units pipelined, and follows the cluster's redirections:
//   - MOVED <slot> <host:port>: the slot lives elsewhere now (a resharding finished, a failover
//     promoted a replica): the unit goes where the node said, and the map is read again;
//   - ASK <slot> <host:port>: the slot is being migrated and this key is already on the target:
//     the unit goes there once, each command preceded by ASKING, the map unchanged;
//   - a master that cannot be connected to (killed, partitioned): the map is read again from
//     another node (with Sentinel: the sentinels are asked again) and its units are sent where
//     the new map says (after a failover, the promoted replica). Once per Run. If the map still
//     names the dead master (the cluster has not promoted its replica yet), its units that only
//     read (RedisUnit::read_only) go to one of its replicas (READONLY), which serves what it has
//     (a key the master wrote with an expiry reads as missing once that expiry passes, on the
//     replica too); any other unit fails the Run. A cluster marked down answers every command
//     with CLUSTERDOWN unless its nodes run with cluster-allow-reads-when-down yes (and, for the
//     other masters' slots, cluster-require-full-coverage no): docs/redis.md says what to set.
// A unit is redirected at most kMaxRedirects times.
//
// Thread-compatible: one RedisClient belongs to one thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/endpoint.h"
#include "base/redis_cluster.h"
#include "base/redis_conn.h"
#include "base/redis_pipeline.h"
#include "base/status.h"

namespace lagwatch {

// A connection on which SUBSCRIBE sees every event published on the contract's Redis: the server,
// the master Sentinel names, or any node of a Redis Cluster (the seeds in turn: the cluster
// delivers classic Pub/Sub messages on every node). Fails as RedisConnect.
Result<std::unique_ptr<RedisConnection>> RedisConnectForEvents(const RedisConfig& config,
                                                               Millis timeout);

class RedisClient {
 public:
  static constexpr int kMaxRedirects = 5;

  // Connects as `config` says (redis.cluster: the seeds, in turn, until one gives a slot map
  // that covers every slot; else RedisConnect: redis.host or the master Sentinel names), with
  // `timeout` as the deadline of every connect and command from now on. `on_connect` runs on
  // every new connection to a master, before anything else (e.g. SCRIPT LOAD: a master new to
  // this client, promoted or restarted, may not have the scripts); an error reply to it fails
  // that connection. Unavailable or Tls (as RedisConnect) when nothing answered; DataError when
  // a cluster's map leaves a slot unserved; ServerError when `on_connect` was refused.
  static Result<std::unique_ptr<RedisClient>> Open(
      const RedisConfig& config, Millis timeout,
      std::vector<std::vector<std::string>> on_connect = {});

  // The replies of each unit, in order (one per command, ASKING's not included), after
  // redirections: a reply may still be an error (the command's own, or a redirection given up
  // on). Unavailable (or Tls) when a master could not be reached even after the map was read
  // again, or a connection failed while replies were on their way: then nothing can be said of
  // which units ran, and every connection is dropped (the next Run connects again).
  Result<std::vector<std::vector<RedisReply>>> Run(const std::vector<RedisUnit>& units);

  bool cluster() const { return !config_.cluster.empty(); }
  // Every master of the current map (one, unless a cluster): for what must visit each (SCAN).
  const std::vector<Endpoint>& masters() const { return masters_; }
  // A connection to `master`, opened (and set up) if needed; owned by the client, valid until the
  // next Run, Refresh or Connection call. Unavailable or Tls when it cannot be opened.
  Result<RedisConnection*> Connection(const Endpoint& master);
  // Finds the masters again: a cluster's map from any node that answers (the current masters,
  // then the seeds); else RedisConnect again (with Sentinel, the master named now).
  Status Refresh();
  // "host:port" of every master, comma-separated, for messages.
  std::string Describe() const;

 private:
  RedisClient(RedisConfig config, Millis timeout, std::vector<std::vector<std::string>> on_connect)
      : config_(std::move(config)), timeout_(timeout), on_connect_(std::move(on_connect)) {}
  // Runs on_connect_ on a new connection; the first failure.
  Status SetUp(RedisConnection& conn);
  // A cluster's map from one node's CLUSTER SLOTS; DataError unless every slot is served.
  Status LoadMapFrom(RedisConnection& conn, const Endpoint& node);
  const Endpoint* MasterOf(const std::string& key) const;
  void Drop(const Endpoint& master);
  // Drops every connection (a Run stopped with replies unread on some) and returns `why`.
  Status Abandon(Status why);

  const RedisConfig config_;
  const Millis timeout_;
  const std::vector<std::vector<std::string>> on_connect_;
  // A connection to the replica `replica`, opened if needed, in READONLY mode.
  Result<RedisConnection*> ReplicaConnection(const Endpoint& replica);
  // The first replica of `master` a connection can be opened to; nullopt when none.
  std::optional<Endpoint> ReachableReplicaOf(const Endpoint& master);

  std::vector<int16_t> slot_master_;  // a cluster's, by slot: an index into masters_
  std::vector<Endpoint> masters_;
  std::vector<std::vector<Endpoint>> replicas_;  // a cluster's, each master's (as masters_)
  std::map<std::string, std::unique_ptr<RedisConnection>> conns_;          // by "host:port"
  std::map<std::string, std::unique_ptr<RedisConnection>> replica_conns_;  // READONLY, by id
};

}  // namespace lagwatch
