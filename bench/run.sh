#!/usr/bin/env bash
# Produces the figures of BENCHMARKS.md: builds payd and payd-load, and on
# each database seeds 1,000,000 RTPs across 100 merchants, starts payd, and
# runs every scenario with the floors measured in the same run, in the
# sandbox, then again in production mode (the iso20022 rails), and RTP
# creation in production with the connector away.
#   bench/run.sh [sqlite|postgres ...]   (default: both)   DURATION=10s C=32 RTPS=1000000
#   LOGDIR=DIR keeps each engine's server log there (serve-ENGINE.log)
set -euo pipefail
cd "$(dirname "$0")/.."
D=${DURATION:-10s}
C=${C:-32}
PG=${PAYD_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
work=$(mktemp -d)
# The toolchain go.mod names, as .ci/run builds with (a go.env may say local).
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
# payd seals signature keys under this operator key; payd-load uses it too.
export PAYD_SECRET_KEY=${PAYD_SECRET_KEY:-$(head -c 32 /dev/urandom | base64)}
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/payd" ./cmd/payd
go build -o "$work/payd-load" ./cmd/payd-load

for engine in "${@:-sqlite postgres}"; do
  for e in $engine; do
    echo "=== $e ($(nproc) cores, $(go version | cut -d' ' -f3), c=$C, $D per scenario)"
    if [ "$e" = sqlite ]; then
      db="sqlite:$work/bench.db"
    else
      schema="bench_$$"
      psql "$PG" -qc "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
      db="$PG&search_path=$schema"
    fi
    if [ "$e" = postgres ]; then psql "$PG" -Atc "SELECT 'database size before seeding: ' || pg_size_pretty(pg_database_size(current_database()))"; fi
    (cd "$work" && ./payd-load seed -database-url "$db" -rtps "${RTPS:-1000000}" -merchants 100 -creds "$work/creds.json")
    if [ "$e" = postgres ]; then
      psql "$PG" -Atc "SELECT 'rtps table with its indexes: ' || pg_size_pretty(pg_total_relation_size('$schema.rtps'))"
      # Settle: the seed has checkpointed; let autovacuum finish what the
      # seed left it (up to two minutes) before anything is timed.
      for i in $(seq 120); do
        [ "$(psql "$PG" -Atc "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND datname = current_database()")" = 0 ] && break
        sleep 1
      done
      echo "settled after ${i} s"
    fi
    echo "--- ready after start, on the freshly seeded database:"
    "$work/payd-load" startup -database-url "$db" -payd "$work/payd" -times 5
    PAYD_DATABASE_URL="$db" PAYD_TOKEN_RATE_CLIENT=100000000 PAYD_TOKEN_RATE_ADDR=100000000 PAYD_TOKEN_TTL=1h \
      "$work/payd" serve --addr 127.0.0.1:18181 > /dev/null 2> "$work/serve-$e.log" &
    pid=$!
    until curl -sf http://127.0.0.1:18181/readyz > /dev/null; do sleep 0.1; done
    L="$work/payd-load run -target http://127.0.0.1:18181 -database-url $db -c $C -server-pid $pid -creds $work/creds.json"
    $L -d "$D" -scenarios http-floor,storage-floor,token,rtp-create,rtp-get,qr-pay,checkout-create
    # The machine's speed drifts by tens of percent within minutes: each
    # ratio target is measured again three times right after its floor.
    echo "--- rtp-create and rtp-get each beside its floor, three times:"
    for i in 1 2 3; do $L -d "$D" -scenarios storage-floor,rtp-create,http-floor,rtp-get | grep -v '^server peak RSS'; done
    echo "--- every list shape at 4 connections (target p99 <= 25 ms):"
    "$work/payd-load" run -target http://127.0.0.1:18181 -database-url "$db" -c 4 -server-pid $pid -creds "$work/creds.json" -d "$D" -scenarios rtp-list
    peak=$($L -d "$D" -scenarios rtp-create | sed -n 's/.* \([0-9]*\) req\/s .*/\1/p' | head -1)
    echo "--- rtp-create at half its peak rate ($((peak / 2))/s):"
    $L -d "$D" -rate $((peak / 2)) -scenarios rtp-create
    echo "--- callbacks, 30 s:"
    $L -d 30s -scenarios rtp-flow
    echo "--- callbacks with one flow in 8 calling back to an endpoint that never answers (the others measured):"
    $L -d "$D" -scenarios rtp-flow-hung
    echo "--- overload: 64 connections of lists, creates and gets (503 allowed, any other 5xx fails):"
    $L -d "$D" -c 64 -scenarios overload
    kill $pid; wait $pid 2>/dev/null || true
    if [ -n "${LOGDIR:-}" ]; then mkdir -p "$LOGDIR" && cp "$work/serve-$e.log" "$LOGDIR/"; fi

    # The same database in production mode, as operators run it: the
    # iso20022 rails, payd-load as the connector (it checks every signature,
    # answers 200 and times each pain.013 from the API's answer), an https
    # public URL. The sandbox-only scenarios (test-pay, test-accept) are
    # left out; the money path is the rails' credits.
    echo "=== $e, production mode (PAYD_RAILS=iso20022)"
    sink=127.0.0.1:18191
    PAYD_DATABASE_URL="$db" PAYD_MODE=production PAYD_PUBLIC_URL=https://payd.example PAYD_RAILS=iso20022 \
      PAYD_RAILS_URL="http://$sink/iso20022" PAYD_RAILS_KEY=bench-shared-secret-0123 PAYD_RAILS_BIC=PAYDMD22 \
      PAYD_CALLBACK_ALLOW=127.0.0.0/8 PAYD_ALLOW_HTTP_URLS=true \
      PAYD_TOKEN_RATE_CLIENT=100000000 PAYD_TOKEN_RATE_ADDR=100000000 PAYD_TOKEN_TTL=1h \
      "$work/payd" serve --addr 127.0.0.1:18181 > /dev/null 2> "$work/serve-$e-production.log" &
    pid=$!
    until curl -sf http://127.0.0.1:18181/readyz > /dev/null; do sleep 0.1; done
    P="$work/payd-load run -target http://127.0.0.1:18181 -database-url $db -c $C -server-pid $pid -creds $work/creds.json -rails-sink $sink"
    PAYD_RAILS_KEY=bench-shared-secret-0123 $P -d "$D" \
      -scenarios http-floor,storage-floor,token,rtp-create,rtp-get,checkout-create,storage-floor,rtp-create,http-floor,rtp-get,storage-floor,rails-credit
    echo "--- production: every list shape at 4 connections:"
    PAYD_RAILS_KEY=bench-shared-secret-0123 "$work/payd-load" run -target http://127.0.0.1:18181 -database-url "$db" -c 4 \
      -server-pid $pid -creds "$work/creds.json" -rails-sink $sink -d "$D" -scenarios rtp-list
    kill $pid; wait $pid 2>/dev/null || true
    # The connector away: nothing listens where payd POSTs. New RTPs'
    # orders wait (worker/away.go) while one order at a time probes it.
    echo "--- production with the connector away:"
    PAYD_DATABASE_URL="$db" PAYD_MODE=production PAYD_PUBLIC_URL=https://payd.example PAYD_RAILS=iso20022 \
      PAYD_RAILS_URL="http://127.0.0.1:18192/iso20022" PAYD_RAILS_KEY=bench-shared-secret-0123 PAYD_RAILS_BIC=PAYDMD22 \
      PAYD_CALLBACK_ALLOW=127.0.0.0/8 PAYD_ALLOW_HTTP_URLS=true \
      PAYD_TOKEN_RATE_CLIENT=100000000 PAYD_TOKEN_RATE_ADDR=100000000 PAYD_TOKEN_TTL=1h \
      "$work/payd" serve --addr 127.0.0.1:18181 > /dev/null 2>> "$work/serve-$e-production.log" &
    pid=$!
    until curl -sf http://127.0.0.1:18181/readyz > /dev/null; do sleep 0.1; done
    "$work/payd-load" run -target http://127.0.0.1:18181 -database-url "$db" -c $C -server-pid $pid -creds "$work/creds.json" \
      -d "$D" -scenarios storage-floor,rtp-create
    kill $pid; wait $pid 2>/dev/null || true
    if [ -n "${LOGDIR:-}" ]; then cp "$work/serve-$e-production.log" "$LOGDIR/"; fi
    if [ "$e" = postgres ]; then psql "$PG" -qc "DROP SCHEMA $schema CASCADE"; fi
  done
done
