#!/usr/bin/env bash
# What synchronous replication costs: production payd's RTP creation and
# the bank's credits on the high-availability cluster (deploy/ha/cluster.sh:
# Patroni, a synchronous standby, HAProxy) beside the same on the one
# PostgreSQL of the machine, alternated in the same run (the machine drifts
# by tens of percent from hour to hour). BENCHMARKS.md shows the figures.
#   bench/ha.sh        DURATION=10s C=32 ROUNDS=2
set -euo pipefail
cd "$(dirname "$0")/.."
D=${DURATION:-10s}
C=${C:-32}
ROUNDS=${ROUNDS:-2}
single=${PAYD_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
work=$(mktemp -d)
chmod 0755 "$work"
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export PAYD_SECRET_KEY=${PAYD_SECRET_KEY:-$(head -c 32 /dev/urandom | base64)}
trap 'kill $(jobs -p) 2>/dev/null || true; deploy/ha/cluster.sh stop "$work/ha" >/dev/null; rm -rf "$work"' EXIT
go build -o "$work/payd" ./cmd/payd
go build -o "$work/payd-load" ./cmd/payd-load
deploy/ha/cluster.sh start "$work/ha"
cluster="postgres://postgres@127.0.0.1:5440/payd?sslmode=disable"
schema="ha_bench_$$"
psql "$single" -qc "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
trap 'kill $(jobs -p) 2>/dev/null || true; deploy/ha/cluster.sh stop "$work/ha" >/dev/null; psql "$single" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" 2>/dev/null; rm -rf "$work"' EXIT
one="$single&search_path=$schema"

run() { # $1: label, $2: database URL
  local db=$2 sink=127.0.0.1:18191
  PAYD_DATABASE_URL="$db" PAYD_MODE=production PAYD_PUBLIC_URL=https://payd.example PAYD_RAILS=iso20022 \
    PAYD_RAILS_URL="http://$sink/iso20022" PAYD_RAILS_KEY=bench-shared-secret-0123 PAYD_RAILS_BIC=PAYDMD22 \
    PAYD_CALLBACK_ALLOW=127.0.0.0/8 PAYD_ALLOW_HTTP_URLS=true \
    PAYD_TOKEN_RATE_CLIENT=100000000 PAYD_TOKEN_RATE_ADDR=100000000 PAYD_TOKEN_TTL=1h \
    "$work/payd" serve --addr 127.0.0.1:18181 > /dev/null 2> "$work/serve.log" &
  local pid=$!
  until curl -sf http://127.0.0.1:18181/readyz > /dev/null; do sleep 0.1; done
  echo "--- $1"
  PAYD_RAILS_KEY=bench-shared-secret-0123 "$work/payd-load" run -target http://127.0.0.1:18181 -database-url "$db" -c "$C" \
    -server-pid $pid -creds "$work/creds-$3.json" -rails-sink $sink -d "$D" -scenarios storage-floor,rtp-create,rails-credit |
    grep -E '^(storage-floor|rtp-create|rails-credit) '
  kill $pid; wait $pid 2>/dev/null || true
}

for db in cluster one; do
  url=$cluster; [ $db = one ] && url=$one
  (cd "$work" && ./payd-load seed -database-url "$url" -rtps 100000 -merchants 10 -creds "$work/creds-$db.json") > /dev/null
done
echo "=== $(nproc) cores, $(go version | cut -d' ' -f3), c=$C, $D per scenario; the cluster: $(deploy/ha/cluster.sh leader "$work/ha") leads, one synchronous standby"
for round in $(seq "$ROUNDS"); do
  run "round $round: the cluster (synchronous standby, through HAProxy)" "$cluster" cluster
  run "round $round: one PostgreSQL" "$one" one
done
