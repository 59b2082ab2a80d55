#!/usr/bin/env bash
# alerts/tests/inhibitions.sh — check alerts/alertmanager.yml's inhibit_rules against a real Alertmanager.
#
# amtool cannot evaluate inhibitions offline, so this starts prometheus-alertmanager on 127.0.0.1 (an
# ephemeral port, a temporary directory, no clustering), posts firing alerts with amtool and checks
# which of them the API reports as inhibited. Each scenario gets a fresh Alertmanager so earlier
# alerts cannot inhibit later ones. Stops only the process it started, by PID.
#
# usage: inhibitions.sh CONFIG [ALERTMANAGER_BINARY] [AMTOOL_BINARY]
set -euo pipefail

CONFIG=${1:?usage: inhibitions.sh CONFIG [ALERTMANAGER_BINARY] [AMTOOL_BINARY]}
ALERTMANAGER=${2:-prometheus-alertmanager}
AMTOOL=${3:-amtool}

WORK=$(mktemp -d /tmp/lw-am-test.XXXXXX)
AM_PID=
FAILURES=0

stop_am() {
  if [[ -n $AM_PID ]]; then
    kill "$AM_PID" 2>/dev/null || true
    wait "$AM_PID" 2>/dev/null || true
    AM_PID=
  fi
}
cleanup() {
  stop_am
  rm -rf "$WORK"
}
trap cleanup EXIT

# Starts a fresh Alertmanager and sets URL once it listens.
start_am() {
  stop_am
  rm -rf "$WORK/data" && mkdir -p "$WORK/data"
  # The previous Alertmanager's log names its (now closed) port: remove it before the new one
  # starts, or the loop below can read it before the redirect truncates it.
  rm -f "$WORK/log"
  "$ALERTMANAGER" --config.file="$CONFIG" --storage.path="$WORK/data" \
    --web.listen-address=127.0.0.1:0 --cluster.listen-address= >"$WORK/log" 2>&1 &
  AM_PID=$!
  local port='' i
  for ((i = 0; i < 100; i++)); do
    [[ -f $WORK/log ]] && port=$(sed -n 's/.*msg="Listening on" address=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$WORK/log")
    [[ -n $port ]] && break
    sleep 0.1
  done
  if [[ -z $port ]]; then
    cat "$WORK/log" >&2
    echo "inhibitions: alertmanager did not start" >&2
    exit 1
  fi
  URL=http://127.0.0.1:$port
}

# fire LABEL=VALUE...: post a firing alert.
fire() {
  "$AMTOOL" --alertmanager.url="$URL" alert add "$@" >/dev/null
}

# expect inhibited|active LABEL=VALUE...: the alert with exactly these labels has that status.
# The inhibitor learns about new source alerts asynchronously: retry for up to 3 s.
expect() {
  local want=$1 flag got i
  shift
  [[ $want == inhibited ]] && flag=--inhibited || flag=--active
  for ((i = 0; i < 30; i++)); do
    got=$("$AMTOOL" --alertmanager.url="$URL" alert query "$flag" -o extended "$@" | tail -n +2 | wc -l)
    ((got == 1)) && break
    sleep 0.1
  done
  if ((got == 1)); then
    echo "ok   $want: $*"
  else
    echo "FAIL $want expected: $*"
    FAILURES=$((FAILURES + 1))
  fi
}

P1=(severity=critical priority=P1)
P2=(severity=warning priority=P2)

echo "# an agent down mutes its own alerts and the aggregated ones, not other agents' alerts"
start_am
fire alertname=LagwatchAgentDown cluster=shop "${P1[@]}" job=lagwatch instance=lwA
fire alertname=LagwatchReplicaLagHigh cluster=shop "${P1[@]}" job=lagwatch instance=lwA replica=a1 tier=tier1
fire alertname=LagwatchDSRLow cluster=shop "${P2[@]}" app=shop
fire alertname=LagwatchReplicaLagHigh cluster=shop "${P1[@]}" job=lagwatch instance=lwB replica=b1 tier=tier1
expect active alertname=LagwatchAgentDown cluster=shop instance=lwA
expect inhibited alertname=LagwatchReplicaLagHigh cluster=shop instance=lwA replica=a1
expect inhibited alertname=LagwatchDSRLow cluster=shop app=shop
expect active alertname=LagwatchReplicaLagHigh cluster=shop instance=lwB replica=b1

echo "# no agent at all mutes everything"
start_am
fire alertname=LagwatchAgentAbsent "${P1[@]}" job=lagwatch
fire alertname=LagwatchReplicaLagHigh cluster=shop "${P1[@]}" job=lagwatch instance=lwB replica=b1 tier=tier1
fire alertname=LagwatchDSRLow cluster=shop "${P2[@]}" app=shop
expect active alertname=LagwatchAgentAbsent
expect inhibited alertname=LagwatchReplicaLagHigh cluster=shop instance=lwB replica=b1
expect inhibited alertname=LagwatchDSRLow cluster=shop app=shop

echo "# primary circuit open, unreachable replica, whole tier out"
start_am
fire alertname=LagwatchPrimaryCircuitOpen cluster=shop "${P1[@]}" job=lagwatch instance=lwA state=down
fire alertname=LagwatchHeartbeatFailing cluster=shop "${P2[@]}" job=lagwatch instance=lwA cause=stale
fire alertname=LagwatchHeartbeatFailing cluster=shop "${P2[@]}" job=lagwatch instance=lwB cause=errors
fire alertname=LagwatchReplicaUnreachable cluster=shop "${P2[@]}" job=lagwatch instance=lwB replica=r1 tier=tier1 state=unreachable
fire alertname=LagwatchReplicationThreadStopped cluster=shop "${P1[@]}" job=lagwatch instance=lwB replica=r1 tier=tier1 thread=sql
fire alertname=LagwatchReplicaLagHigh cluster=shop "${P1[@]}" job=lagwatch instance=lwB replica=r1 tier=tier1
fire alertname=LagwatchReplicationThreadStopped cluster=shop "${P1[@]}" job=lagwatch instance=lwB replica=r2 tier=tier1 thread=io
fire alertname=LagwatchTierAllUnhealthy cluster=shop "${P1[@]}" tier=tier2
fire alertname=LagwatchReplicaLagHigh cluster=shop "${P1[@]}" job=lagwatch instance=lwB replica=r3 tier=tier2
fire alertname=LagwatchSLARLow cluster=shop "${P2[@]}" replica=r3 tier=tier2
fire alertname=LagwatchReplicationThreadStopped cluster=shop "${P1[@]}" job=lagwatch instance=lwB replica=r3 tier=tier2 thread=io
expect active alertname=LagwatchPrimaryCircuitOpen cluster=shop instance=lwA
expect inhibited alertname=LagwatchHeartbeatFailing cluster=shop instance=lwA
expect active alertname=LagwatchHeartbeatFailing cluster=shop instance=lwB
expect active alertname=LagwatchReplicaUnreachable cluster=shop replica=r1
expect inhibited alertname=LagwatchReplicationThreadStopped cluster=shop replica=r1
expect inhibited alertname=LagwatchReplicaLagHigh cluster=shop replica=r1
expect active alertname=LagwatchReplicationThreadStopped cluster=shop replica=r2
expect active alertname=LagwatchTierAllUnhealthy cluster=shop tier=tier2
expect inhibited alertname=LagwatchReplicaLagHigh cluster=shop replica=r3
expect inhibited alertname=LagwatchSLARLow cluster=shop replica=r3
expect active alertname=LagwatchReplicationThreadStopped cluster=shop replica=r3

echo "# an ambiguous topology mutes that agent's unverified and lagging replicas and whole tiers out"
start_am
fire alertname=LagwatchTopologyAmbiguous cluster=shop "${P1[@]}" job=lagwatch instance=lwA state=ambiguous
fire alertname=LagwatchReplicaSourceInDoubt cluster=shop "${P2[@]}" job=lagwatch instance=lwA replica=a1 tier=tier1 state=unverified
fire alertname=LagwatchReplicaLagHigh cluster=shop "${P1[@]}" job=lagwatch instance=lwA replica=a2 tier=tier1
fire alertname=LagwatchTierAllUnhealthy cluster=shop "${P1[@]}" tier=tier1
fire alertname=LagwatchReplicationThreadStopped cluster=shop "${P1[@]}" job=lagwatch instance=lwA replica=a3 tier=tier1 thread=io
fire alertname=LagwatchReplicaSourceInDoubt cluster=shop "${P2[@]}" job=lagwatch instance=lwB replica=b1 tier=tier1 state=unverified
expect active alertname=LagwatchTopologyAmbiguous cluster=shop instance=lwA
expect inhibited alertname=LagwatchReplicaSourceInDoubt cluster=shop instance=lwA replica=a1
expect inhibited alertname=LagwatchReplicaLagHigh cluster=shop instance=lwA replica=a2
expect inhibited alertname=LagwatchTierAllUnhealthy cluster=shop tier=tier1
expect active alertname=LagwatchReplicationThreadStopped cluster=shop instance=lwA replica=a3
expect active alertname=LagwatchReplicaSourceInDoubt cluster=shop instance=lwB replica=b1

echo "# one agent down does not mute another agent's ambiguous topology"
start_am
fire alertname=LagwatchAgentDown cluster=shop "${P1[@]}" job=lagwatch instance=lwA
fire alertname=LagwatchTopologyAmbiguous cluster=shop "${P1[@]}" job=lagwatch instance=lwB state=ambiguous
fire alertname=LagwatchNoWritablePrimary cluster=shop "${P1[@]}" job=lagwatch instance=lwB state=unknown primary=10.0.0.11:3306
expect active alertname=LagwatchTopologyAmbiguous cluster=shop instance=lwB
expect active alertname=LagwatchNoWritablePrimary cluster=shop instance=lwB

echo "# two clusters: one's agent down, whole tier out or ambiguous topology mutes nothing of the other"
start_am
fire alertname=LagwatchAgentDown "${P1[@]}" cluster=shop job=lagwatch instance=lwA
fire alertname=LagwatchDSRLow "${P2[@]}" cluster=shop app=web
fire alertname=LagwatchDSRLow "${P2[@]}" cluster=orders app=web
expect inhibited alertname=LagwatchDSRLow cluster=shop app=web
expect active alertname=LagwatchDSRLow cluster=orders app=web
start_am
fire alertname=LagwatchTierAllUnhealthy "${P1[@]}" cluster=shop tier=tier1
fire alertname=LagwatchReplicaLagHigh "${P1[@]}" cluster=shop job=lagwatch instance=lwB replica=r1 tier=tier1
fire alertname=LagwatchReplicaLagHigh "${P1[@]}" cluster=orders job=lagwatch instance=lwC replica=r1 tier=tier1
expect inhibited alertname=LagwatchReplicaLagHigh cluster=shop instance=lwB replica=r1
expect active alertname=LagwatchReplicaLagHigh cluster=orders instance=lwC replica=r1
start_am
fire alertname=LagwatchTopologyAmbiguous "${P1[@]}" cluster=orders job=lagwatch instance=lwC state=ambiguous
fire alertname=LagwatchTierAllUnhealthy "${P1[@]}" cluster=orders tier=tier1
fire alertname=LagwatchTierAllUnhealthy "${P1[@]}" cluster=shop tier=tier1
expect inhibited alertname=LagwatchTierAllUnhealthy cluster=orders tier=tier1
expect active alertname=LagwatchTierAllUnhealthy cluster=shop tier=tier1

if ((FAILURES > 0)); then
  echo "inhibitions: $FAILURES expectation(s) failed" >&2
  exit 1
fi
echo "inhibitions: all expectations met"
