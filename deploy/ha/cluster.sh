#!/usr/bin/env bash
# A PostgreSQL high-availability cluster on one machine, for tests and demos
# of payd's failover (docs/operations.md, "PostgreSQL in high availability"):
# etcd electing the leader, three PostgreSQL 15 nodes under Patroni with
# synchronous replication (synchronous_mode and synchronous_mode_strict: a
# commit the primary acknowledges is on a standby too), and HAProxy routing
# to whichever node leads, by Patroni's health check. Every part is Debian's
# package, installed here if missing.
#
#   deploy/ha/cluster.sh start DIR [--async]   start it under DIR (a fresh directory)
#   deploy/ha/cluster.sh stop DIR              stop everything started under DIR
#   deploy/ha/cluster.sh status DIR            the nodes, their roles and lag (patronictl list)
#   deploy/ha/cluster.sh leader DIR            the leading node's name
#   deploy/ha/cluster.sh kill-postgres DIR     kill -9 the leader's postmaster (Patroni restarts it)
#   deploy/ha/cluster.sh kill-node DIR         kill -9 the leader's Patroni and postmaster together (a failover)
#   deploy/ha/cluster.sh switchover DIR        a planned switchover to a synchronous standby
#   deploy/ha/cluster.sh revive DIR            start again the Patroni of a killed node (it rejoins as a standby)
#
# Ports: HAProxy 127.0.0.1:5440 (the primary), nodes 5441-5443, Patroni's
# REST API 8441-8443, etcd 23790. Connection strings:
#   through HAProxy:  postgres://postgres@127.0.0.1:5440/payd?sslmode=disable
#   to the nodes:     postgres://postgres@127.0.0.1:5441,127.0.0.1:5442,127.0.0.1:5443/payd?sslmode=disable&target_session_attrs=read-write
#
# Timing (why: docs/operations.md): ttl 6, loop_wait 1, retry_timeout 2.
# A dead leader's key expires within ttl; its synchronous standby takes over
# on its next loop, so writes come back within about 8 s of the kill.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
NODES=(node1 node2 node3)
pg_port() { echo $((5440 + ${1#node})); }
api_port() { echo $((8440 + ${1#node})); }

install() {
  local missing=()
  command -v patroni >/dev/null || missing+=(patroni)
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v haproxy >/dev/null || missing+=(haproxy)
  [ -x "$PGBIN/postgres" ] || missing+=(postgresql-15)
  if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# as runs a command as the postgres user (PostgreSQL refuses root).
as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
user() { if [ "$(id -u)" = 0 ]; then echo postgres; else id -un; fi; }

# patroni_pid is the Patroni process of node $1 (not runuser's).
patroni_pid() { pgrep -u "$(user)" -f "patroni $dir/$1.yml" | sed -n 1p; }

leader() {
  local n
  for n in "${NODES[@]}"; do
    if curl -sf -o /dev/null "http://127.0.0.1:$(api_port "$n")/primary"; then echo "$n"; return 0; fi
  done
  return 1
}

wait_ready() {
  # A leader and both standbys streaming from it, one of them synchronous
  # with synchronous replication.
  local sync=$1 _ want="streaming"
  [ "$sync" = on ] && want="sync"
  for _ in $(seq 1 240); do
    if leader >/dev/null && [ "$(PGCONNECT_TIMEOUT=2 psql -h 127.0.0.1 -p 5440 -U postgres -d postgres -Atqc \
      "SELECT count(*) FILTER (WHERE state = 'streaming') || ' ' || bool_or(sync_state = 'sync') FROM pg_stat_replication" 2>/dev/null)" \
      = "2 $([ "$want" = sync ] && echo true || echo false)" ]; then
      return 0
    fi
    sleep 0.5
  done
  echo "the cluster did not become ready" >&2
  status
  return 1
}

status() { as patronictl -c "$dir/node1.yml" list 2>/dev/null || true; }

start() {
  local sync=on
  [ "${1:-}" = --async ] && sync=off
  install
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  chown postgres "$dir" 2>/dev/null || true
  chmod 0755 "$dir"

  # etcd: one member (production runs three, on separate machines).
  etcd --name payd-etcd --data-dir "$dir/etcd" --listen-client-urls http://127.0.0.1:23790 \
    --advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800 \
    --initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster payd-etcd=http://127.0.0.1:23800 \
    > "$dir/etcd.log" 2>&1 &
  echo $! > "$dir/etcd.pid"
  for _ in $(seq 1 50); do curl -sf http://127.0.0.1:23790/health >/dev/null && break; sleep 0.2; done

  local strict=true
  [ "$sync" = off ] && strict=false
  for n in "${NODES[@]}"; do
    cat > "$dir/$n.yml" <<EOF
scope: payd
namespace: /payd/
name: $n
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$(api_port "$n")
  connect_address: 127.0.0.1:$(api_port "$n")
etcd3:
  hosts: 127.0.0.1:23790
bootstrap:
  dcs:
    ttl: 6
    loop_wait: 1
    retry_timeout: 2
    maximum_lag_on_failover: 1048576
    synchronous_mode: $([ "$sync" = on ] && echo true || echo false)
    synchronous_mode_strict: $strict
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 200
        wal_keep_size: 256MB
        wal_retrieve_retry_interval: 500ms
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication replicator 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$(pg_port "$n")
  connect_address: 127.0.0.1:$(pg_port "$n")
  data_dir: $dir/$n
  bin_dir: $PGBIN
  pgpass: $dir/$n.pgpass
  basebackup:
    - checkpoint: fast
  authentication:
    superuser: {username: postgres, password: postgres}
    replication: {username: replicator, password: replicator}
    rewind: {username: postgres, password: postgres}
  parameters:
    unix_socket_directories: $dir
tags:
  nofailover: false
  noloadbalance: false
EOF
  done
  chown postgres "$dir"/*.yml 2>/dev/null || true
  for n in "${NODES[@]}"; do
    as patroni "$dir/$n.yml" > "$dir/$n.log" 2>&1 &
    [ "$n" = node1 ] && sleep 3 # node1 bootstraps; the others clone it
  done

  # HAProxy: the primary is the node whose Patroni answers 200 on /primary.
  cat > "$dir/haproxy.cfg" <<EOF
global
  maxconn 1000
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen primary
  bind 127.0.0.1:5440
  option httpchk
  http-check send meth GET uri /primary
  http-check expect status 200
  default-server inter 500ms fastinter 250ms fall 2 rise 1 on-marked-down shutdown-sessions
$(for n in "${NODES[@]}"; do echo "  server $n 127.0.0.1:$(pg_port "$n") maxconn 300 check port $(api_port "$n")"; done)
EOF
  haproxy -f "$dir/haproxy.cfg" -D -p "$dir/haproxy.pid"
  wait_ready "$sync"
  psql -h 127.0.0.1 -p 5440 -U postgres -d postgres -Atqc "CREATE DATABASE payd" >/dev/null
  echo "cluster ready: $(leader) leads; postgres://postgres@127.0.0.1:5440/payd?sslmode=disable"
}

stop() {
  [ -d "$dir" ] || return 0
  [ -f "$dir/haproxy.pid" ] && kill "$(cat "$dir/haproxy.pid")" 2>/dev/null || true
  local n p
  for n in "${NODES[@]}"; do
    p=$(patroni_pid "$n") && [ -n "$p" ] && kill "$p" 2>/dev/null || true
  done
  sleep 2
  for n in "${NODES[@]}"; do
    p=$(patroni_pid "$n") && [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true
    [ -f "$dir/$n/postmaster.pid" ] && kill -9 "$(sed -n 1p "$dir/$n/postmaster.pid")" 2>/dev/null || true
  done
  [ -f "$dir/etcd.pid" ] && kill "$(cat "$dir/etcd.pid")" 2>/dev/null || true
  return 0
}

postmaster() { sed -n 1p "$dir/$1/postmaster.pid"; }

case "$cmd" in
  start) start "${3:-}" ;;
  stop) stop ;;
  status) status ;;
  leader) leader ;;
  kill-postgres) n=$(leader); kill -9 "$(postmaster "$n")"; echo "$n" ;;
  kill-node) n=$(leader); kill -9 "$(patroni_pid "$n")" "$(postmaster "$n")"; echo "$n" ;;
  revive)
    for n in "${NODES[@]}"; do
      if [ -z "$(patroni_pid "$n")" ]; then
        as patroni "$dir/$n.yml" >> "$dir/$n.log" 2>&1 &
        echo "$n"
      fi
    done ;;
  switchover)
    n=$(leader)
    to=$(PGCONNECT_TIMEOUT=2 psql -h 127.0.0.1 -p 5440 -U postgres -d postgres -Atqc \
      "SELECT application_name FROM pg_stat_replication WHERE state = 'streaming' ORDER BY sync_state = 'sync' DESC LIMIT 1")
    as patronictl -c "$dir/node1.yml" switchover payd --leader "$n" --candidate "$to" --force >/dev/null
    echo "$n -> $to" ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
