#!/usr/bin/env bash
# Two revisions alternated on the same scenarios, in the same hour: each
# is built from a worktree and seeded on a database of its own (their
# schemas may differ), then rounds run one after the other, the order
# swapped every round. The newer revision's payd-load drives both, so the
# floors are measured the same way.
#   bench/ab.sh BASE NEW   ENGINES="sqlite postgres" MODES="sandbox production" ROUNDS=2 D=5s RTPS=200000 C=32
set -uo pipefail
cd "$(dirname "$0")/.."
BASE=$1 NEW=$2
R=${ROUNDS:-2} D=${D:-5s} C=${C:-32} N=${RTPS:-200000}
PG=${PAYD_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
W=$(mktemp -d)
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} PAYD_SECRET_KEY=${PAYD_SECRET_KEY:-$(head -c 32 /dev/urandom | base64)}
trap 'kill $(jobs -p) 2>/dev/null || true; for v in base new; do psql "$PG" -qc "DROP SCHEMA IF EXISTS ab_$v CASCADE" 2>/dev/null; done; rm -rf "$W"' EXIT
for v in base new; do
  rev=$BASE; [ $v = new ] && rev=$NEW
  git worktree add -q --detach "$W/src-$v" "$rev" || exit 1
  (cd "$W/src-$v" && go build -o "$W/payd-$v" ./cmd/payd && go build -o "$W/load-$v" ./cmd/payd-load) || exit 1
  git worktree remove --force "$W/src-$v"
done
db() { if [ "$2" = sqlite ]; then echo "sqlite:$W/$1.db"; else echo "$PG&search_path=ab_$1"; fi; }
for e in ${ENGINES:-sqlite postgres}; do
  for v in base new; do
    if [ "$e" = postgres ]; then psql "$PG" -qc "DROP SCHEMA IF EXISTS ab_$v CASCADE; CREATE SCHEMA ab_$v"; fi
    (cd "$W" && "./load-$v" seed -database-url "$(db $v $e)" -rtps "$N" -merchants 100 -creds "$W/creds-$v-$e.json") > /dev/null || exit 1
  done
done
run() { # revision engine mode
  local v=$1 e=$2 m=$3 dbu sc extra=()
  dbu=$(db "$v" "$e")
  local env=(PAYD_DATABASE_URL="$dbu" PAYD_TOKEN_RATE_CLIENT=100000000 PAYD_TOKEN_RATE_ADDR=100000000 PAYD_TOKEN_TTL=1h)
  sc=storage-floor,rtp-create,http-floor,rtp-get,rtp-flow
  if [ "$m" = production ]; then
    env+=(PAYD_MODE=production PAYD_PUBLIC_URL=https://payd.example PAYD_RAILS=iso20022 PAYD_RAILS_URL=http://127.0.0.1:18191/iso20022
      PAYD_RAILS_KEY=bench-shared-secret-0123 PAYD_RAILS_BIC=PAYDMD22 PAYD_CALLBACK_ALLOW=127.0.0.0/8 PAYD_ALLOW_HTTP_URLS=true)
    extra=(-rails-sink 127.0.0.1:18191)
    sc=storage-floor,rtp-create,http-floor,rtp-get,rails-credit
  fi
  env "${env[@]}" "$W/payd-$v" serve --addr 127.0.0.1:18181 > /dev/null 2> "$W/serve.log" &
  local pid=$!
  until curl -sf http://127.0.0.1:18181/readyz > /dev/null; do sleep 0.1; done
  echo "### $v ($([ $v = base ] && echo "$BASE" || echo "$NEW")) $e $m"
  PAYD_RAILS_KEY=bench-shared-secret-0123 "$W/load-new" run -target http://127.0.0.1:18181 -database-url "$dbu" -c "$C" -server-pid $pid \
    -creds "$W/creds-$v-$e.json" -d "$D" -scenarios "$sc" "${extra[@]}" | grep -v '^server peak RSS'
  kill $pid; wait $pid 2>/dev/null
}
for i in $(seq "$R"); do
  for e in ${ENGINES:-sqlite postgres}; do
    for m in ${MODES:-sandbox production}; do
      if [ $((i % 2)) = 1 ]; then run base "$e" "$m"; run new "$e" "$m"; else run new "$e" "$m"; run base "$e" "$m"; fi
    done
  done
done
