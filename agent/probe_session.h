// The I/O of one replica's probes: its connection, and one probe at a time as an explicit state
// machine on the replica's event loop (base/async_mysql.h), every statement with the probe's
// deadline:
//
//   Begin ──┬─ waiting to reconnect, or the last statement still lingers ──▶ done (no statement)
//           ├─ a new connection: kFlavor (SELECT VERSION(), @@version_comment) ──┐
//           └──────────────────────────────────────────────────────────────────┴─▶
//   kStatus (the replication status, when due; retried once as SHOW REPLICA STATUS on a server
//   that does not know SHOW SLAVE STATUS) ──┬─ MariaDB, its default connection absent or not
//                                           │  from the primary: kAllStatus (every connection,
//                                           │  SHOW ALL SLAVES STATUS) ──┐
//                                           └───────────────────────────┴─▶
//   kApplier (MySQL 8.0+'s applier signals, one statement: only when the prober says the status
//   interval has come, on a server that has them, until it refuses them on this connection:
//   base/applier_status.h, ApplierGate) ──▶
//   kHeartbeat (our row and the applied position; a server without the position variable is
//   asked once more without it) ──▶ done
//
// "done" hands the replies to the prober (ProbeReplies), which judges them. A statement past its
// deadline lingers (its answer is waited for a while longer): when it ends, `late` is called and
// the prober probes again at once. The session also decides which positions kind the probe reads
// (the sampler's, unless this server refused it) and what the server is (its flavor and the
// status statement it understands), told through `facts` whenever that changes.
//
// Loop-affine: construct anywhere; Begin, Cancel and the destructor on the loop's thread.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "agent/config.h"
#include "agent/judge.h"
#include "base/applier_status.h"
#include "base/async_mysql.h"
#include "base/clock.h"
#include "base/event_loop.h"
#include "base/server_flavor.h"
#include "base/slave_status.h"
#include "heartbeat/heartbeat_sql.h"
#include "heartbeat/history.h"

namespace lagwatch {

// What the session knows of its server, for the view, the log and lagwatch_server_info.
struct ServerFacts {
  std::optional<ServerFlavor> flavor;  // nullopt until asked on a connection
  std::string status_statement = "SHOW SLAVE STATUS";
  PositionsKind positions = PositionsKind::kNone;  // the kind this replica's probes read
  // Why this connection does not ask for the applier signals (ApplierGate::why_not); "" while
  // it asks or before its server is known.
  std::string applier_why_not;
};

class ProbeSession {
 public:
  using DoneFn = std::function<void(ProbeReplies replies)>;
  using LateFn = std::function<void()>;
  using FactsFn = std::function<void(const ServerFacts& facts)>;
  // The server certificate's expiry (unix seconds), told once per new TLS connection.
  using CertificateFn = std::function<void(int64_t not_after_unix)>;

  // `config`, `history` and `loop` must outlive the session. `target`: where and how to connect.
  // `certificate` may be empty.
  ProbeSession(EventLoop* loop, MysqlTarget target, const Config& config, const TierConfig& tier,
               const PositionHistory* history, DoneFn done, LateFn late, FactsFn facts,
               CertificateFn certificate = nullptr);

  // What Begin found before sending anything: the judge forgets the applied position of another
  // connection (maybe another server) or of another positions kind.
  struct Start {
    bool forget_applied = false;
  };
  // Starts a probe at `started` (the status poll first when `poll_status`). `done` is called
  // once it ends — at once, without a statement, while waiting to reconnect or while the last
  // statement still lingers. `judged_source`: the primary whose channel is judged (nullopt
  // while this server is the primary); on MariaDB, a status poll whose default connection is
  // absent or not from it (base/slave_status.h, MatchSource) reads every connection as well,
  // and that reply is the one handed on. `applier_due`: the status interval has come (not
  // merely a status poll on every probe) and the server is probed as a replica, so the applier
  // signals are asked after the status poll if the server has them (ProbeReplies::applier_reply).
  // REQUIRES: no probe in flight; `applier_due` only with `poll_status`.
  Start Begin(MonoTime started, bool poll_status,
              std::optional<ChannelSource> judged_source = std::nullopt, bool applier_due = false);
  // Abandons the probe in flight, if any, without calling back.
  void Cancel() { conn_.Cancel(); }

  // The positions kind for the next probe (the sampler's, unless refused here); on a change the
  // facts are told and, when heartbeat bounds are wider than the tier's limit, a warning logged.
  // True when the kind changed.
  bool UpdatePositions();
  // The sampler has decided the kind (or positions is "none"): until then a bound may be a
  // heartbeat band the positions will soon tighten.
  bool positions_decided() const { return positions_decided_; }
  PositionsKind positions() const { return facts_.positions; }
  const ServerFacts& facts() const { return facts_; }

  bool connected() const { return conn_.connected(); }
  // The answer to the statement in flight has arrived and waits for the loop.
  bool AnswerWaiting() const { return conn_.AnswerWaiting(); }
  unsigned last_errno() const { return conn_.last_errno(); }

 private:
  enum class Step { kIdle, kFlavor, kStatus, kAllStatus, kApplier, kHeartbeat };

  void Ask(const std::string& sql);
  void OnReply(Result<QueryResult> r);
  void OnFlavor(Result<QueryResult> r);
  void OnStatus(Result<QueryResult> r);
  void OnAllStatus(Result<QueryResult> r);
  void OnApplier(Result<QueryResult> r);
  void OnHeartbeat(Result<QueryResult> r);
  void SendStatusOrHeartbeat();
  void SendApplierOrHeartbeat();
  void SendHeartbeat();
  // The gate's answer into facts_; true when it changed.
  bool UpdateApplierFacts();
  // The probe ended (its replies are complete): back to kIdle, then `done`.
  void Finish();
  void TellFacts() { facts_fn_(facts_); }
  Millis ReconnectBackoff(int failures) const;

  // Constant after construction.
  EventLoop* const loop_;
  const Config& config_;
  const TierConfig tier_;
  const std::string id_;
  const HeartbeatSql sql_;
  const PositionHistory* const history_;
  const DoneFn done_;
  const LateFn late_;
  const FactsFn facts_fn_;
  const CertificateFn certificate_fn_;

  // Used only on the loop's thread.
  AsyncMysqlConn conn_;
  Step step_ = Step::kIdle;
  bool poll_status_ = false;
  bool applier_due_ = false;                    // the probe in flight's
  std::optional<ChannelSource> judged_source_;  // the probe in flight's
  bool reading_all_ = false;  // the last status poll read every connection (for the log)
  ProbeReplies replies_;      // the probe in flight's
  ServerFacts facts_;
  bool facts_told_ = false;
  bool positions_decided_ = false;
  bool flavor_checked_ = false;  // the flavor was asked on the current connection
  ApplierGate applier_;          // whether the current connection asks for the applier signals
  // The GTID kind this server turned out not to have (no such variable), on this connection.
  std::optional<PositionsKind> refused_;
  bool warned_band_ = false;  // the heartbeat-only cost was logged
  int connect_failures_ = 0;  // consecutive probes that ended without a connection
  MonoTime reconnect_at_{};   // no new connection attempt before this
};

}  // namespace lagwatch
