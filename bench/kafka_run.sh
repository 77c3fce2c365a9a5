#!/usr/bin/env bash
# The Kafka sink run (issue 15, item 6). Workload (a) of bench/run.sh (N inserts into bench6,
# 1,000 rows per transaction) is delivered by `cppcdc run` in batches of 10,000 events
# (max_buffer_size) three ways per repetition, interleaved, each from a slot made before the
# load:
#   file   the file sink (local_fs checkpoint): PostgreSQL -> file, the reference pipeline
#   kafka  the Kafka sink, idempotent producer, at_least_once (local_fs checkpoint)
#   eo     the Kafka sink, delivery_mode = "transactional", delivery_contract =
#          "effectively_once", checkpoint in a compacted topic (kafka_topic): one Kafka
#          transaction per batch, the checkpoint record inside it
# Each is timed from exec until its admin endpoint's cppcdc_events_committed_total reaches N
# (polled every 50 ms). The ceiling is Kafka's own kafka-producer-perf-test, run in the same
# repetition against the same broker: N records whose size is the mean key + value size cppcdc
# produced, acks=all, idempotence on, the same linger and batch size, no compression, into a
# topic with as many partitions (one). Prints events/s of each and the ratios kafka / ceiling
# (target: at least 0.7) and eo / ceiling (target: at least 0.5), and kafka / file.
#
# cppcdc's figure is end to end (decoding the WAL included), the ceiling is the producer alone:
# the ratio understates the sink's own share.
#
# Usage: bench/kafka_run.sh [--rows N] [--repeat R] [--port P] [--kafka-port K] [--no-build]
#   --rows N        rows (a multiple of 1000; default 1000000)
#   --repeat R      repetitions, medians reported (default 3)
#   --port P        the throwaway PostgreSQL's port (default 55487; /tmp/cppcdc-bench-kafka-pg)
#   --kafka-port K  the throwaway broker's port (default 19500, controller K+1;
#                   /tmp/cppcdc-bench-kafka)
#   --admin-port A  first admin port (default 19600; one per run)
# Work files: /tmp/cppcdc-bench-kafka-work (kept after a failure).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
PORT=55487
KPORT=19500
ADMIN=19600
PG_DIR=/tmp/cppcdc-bench-kafka-pg
K_DIR=/tmp/cppcdc-bench-kafka
WORK=/tmp/cppcdc-bench-kafka-work
PGBIN=/usr/lib/postgresql/15/bin
rows=1000000
repeat=3
build=1
BATCH=10000

log() { printf '[kafka-bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf '[kafka-bench] ERROR: %s\n' "$*" >&2; exit 1; }

while (($#)); do
  a=$1
  shift
  case "$a" in
    --rows) rows=${1:?--rows N}; shift ;;
    --repeat) repeat=${1:?--repeat R}; shift ;;
    --port) PORT=${1:?--port P}; shift ;;
    --kafka-port) KPORT=${1:?--kafka-port K}; shift ;;
    --admin-port) ADMIN=${1:?--admin-port A}; shift ;;
    --no-build) build=0 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done
((rows % 1000 == 0)) || die "--rows must be a multiple of 1000"

CPPCDC=$BUILD/cppcdc
if ((build)); then
  log "building (scripts/build.sh)"
  "$ROOT/scripts/build.sh" --target cppcdc >/dev/null
fi
[[ -x $CPPCDC ]] || die "$CPPCDC is missing (drop --no-build)"

cdc_pid=""
cleanup() {
  if [[ -n $cdc_pid ]] && kill -0 "$cdc_pid" 2>/dev/null; then kill -TERM "$cdc_pid" || true; fi
  wait 2>/dev/null || true
  "$ROOT/scripts/pg.sh" stop "$PG_DIR" --purge >/dev/null 2>&1 || true
  "$ROOT/scripts/kafka.sh" stop "$K_DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$ROOT/scripts/pg.sh" stop "$PG_DIR" --purge >/dev/null 2>&1 || true
"$ROOT/scripts/kafka.sh" stop "$K_DIR" >/dev/null 2>&1 || true
rm -rf -- "$WORK"
mkdir -p "$WORK"
log "starting PostgreSQL on 127.0.0.1:$PORT and a Kafka broker on 127.0.0.1:$KPORT"
"$ROOT/scripts/pg.sh" start "$PG_DIR" "$PORT" >/dev/null
BOOT=$("$ROOT/scripts/kafka.sh" start "$K_DIR" "$KPORT")
DSN="host=127.0.0.1 port=$PORT dbname=postgres user=postgres"
sql() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d postgres "$@"; }
val() { sql -At -c "$1"; }

variants=(file kafka eo)
sql <<SQL
create table bench6 (id bigint primary key, name text not null, amount numeric(12,2) not null,
  created_at timestamptz not null, qty integer, active boolean);
create publication bench_pub for table bench6;
SQL
for ((r = 1; r <= repeat; r++)); do
  for v in "${variants[@]}"; do
    val "select 1 from pg_create_logical_replication_slot('k_${v}_$r', 'pgoutput')" >/dev/null
  done
done
log "loading $rows rows (1,000 per transaction)"
sql -c "do \$\$ begin for i in 0..$((rows / 1000 - 1)) loop
  insert into bench6 (id, name, amount, created_at, qty, active)
  select g, md5(g::text), (g * 1.25)::numeric(12,2),
    timestamptz '2024-01-01 00:00:00+00' + g * interval '1 millisecond', (g % 1000)::int,
    g % 2 = 0 from generate_series(i * 1000 + 1, i * 1000 + 1000) g;
  commit; end loop; end \$\$"

# The sum of cppcdc_events_committed_total on an admin port ("" while it does not answer).
committed() {
  curl -s --max-time 2 "http://127.0.0.1:$1/metrics" 2>/dev/null |
    awk '/^cppcdc_events_committed_total/ { s += $NF; seen = 1 } END { if (seen) printf "%d\n", s }'
}

# One delivery: prints the wall time in ms, from exec until every row is committed.
run_one() { # variant rep admin_port
  local v=$1 r=$2 port=$3 slot="k_$1_$2"
  local dir=$WORK/$slot
  mkdir -p "$dir/state"
  {
    [[ $v == eo ]] && printf 'delivery_contract = "effectively_once"\n'
    printf '[source]\ntype = "postgres"\ndsn = "%s"\nslot_name = "%s"\n' "$DSN" "$slot"
    printf 'publication_name = "bench_pub"\ntables = ["public.bench6"]\ncreate_slot = false\n'
    printf 'create_publication = false\n[source.snapshot]\nmode = "never"\n'
    if [[ $v == file ]]; then
      printf '[sink]\ntype = "file"\npath = "%s/events.jsonl"\n' "$dir"
    else
      printf '[sink]\ntype = "kafka"\nbootstrap_servers = "%s"\ntopic = "%s"\n' "$BOOT" "$slot"
      printf 'create_topics = true\n'
      if [[ $v == eo ]]; then
        printf 'delivery_mode = "transactional"\ntransactional_id = "bench-%s"\n' "$slot"
      fi
    fi
    if [[ $v == eo ]]; then
      printf '[state.offset]\nbackend = "kafka_topic"\ntopic = "bench.checkpoints.%s"\n' "$slot"
    else
      printf '[state.offset]\nbackend = "local_fs"\ndir = "%s/state"\n' "$dir"
    fi
    printf '[runtime]\nmax_buffer_size = %d\n' "$BATCH"
    printf '[admin]\nlisten = "127.0.0.1:%d"\n' "$port"
  } >"$dir/cdc.toml"
  local t0 t1 n=""
  t0=$(date +%s%N)
  "$CPPCDC" run --config "$dir/cdc.toml" 2>"$dir/cppcdc.log" &
  cdc_pid=$!
  local last_move=$SECONDS prev=""
  while :; do
    n=$(committed "$port")
    if [[ -n $n ]] && ((n >= rows)); then break; fi
    if [[ $n != "$prev" ]]; then prev=$n last_move=$SECONDS; fi
    kill -0 "$cdc_pid" 2>/dev/null || { tail -n 20 "$dir/cppcdc.log" >&2; die "$slot exited"; }
    ((SECONDS - last_move < 120)) || { tail -n 20 "$dir/cppcdc.log" >&2; die "$slot stalled at ${n:-0}"; }
    sleep 0.05
  done
  t1=$(date +%s%N)
  kill -TERM "$cdc_pid" 2>/dev/null || true
  wait "$cdc_pid" || true
  cdc_pid=""
  if [[ $v == file ]]; then
    local lines
    lines=$(wc -l <"$dir/events.jsonl")
    ((lines == rows)) || die "$slot: the sink has $lines lines, expected $rows"
    # Mean value size of what the Kafka sink sends (the same envelope), for the ceiling.
    awk '{ s += length($0) } END { printf "%d\n", s / NR }' "$dir/events.jsonl" >"$WORK/value_bytes"
    rm -f "$dir/events.jsonl"
  fi
  echo $(((t1 - t0) / 1000000))
}

# The ceiling: kafka-producer-perf-test, N records of the mean size, into a fresh topic.
ceiling_one() { # rep -> records/s
  local r=$1 size topic="ceiling_$1" out
  # key = the primary key as JSON ({"id":123456}, about 14 bytes) + the value
  size=$(($(cat "$WORK/value_bytes") + 14))
  "$ROOT/scripts/kafka.sh" run topics --bootstrap-server "$BOOT" --create --topic "$topic" \
    --partitions 1 >/dev/null 2>&1
  out=$("$ROOT/scripts/kafka.sh" run producer-perf-test --topic "$topic" --num-records "$rows" \
    --record-size "$size" --throughput -1 --producer-props "bootstrap.servers=$BOOT" acks=all \
    enable.idempotence=true linger.ms=5 batch.size=1000000 compression.type=none 2>&1 | tail -n 1)
  awk '{ for (i = 1; i < NF; i++) if ($(i + 1) ~ /^records\/sec/) { printf "%d\n", $i; exit } }' <<<"$out"
}

declare -A times
ceilings=""
port=$ADMIN
for ((r = 1; r <= repeat; r++)); do
  for v in "${variants[@]}"; do
    t=$(run_one "$v" "$r" "$port")
    port=$((port + 1))
    times[$v]+="$t "
    log "run $r, $v: $t ms ($(awk -v n="$rows" -v t="$t" 'BEGIN { printf "%.0f", n / (t / 1000) }') events/s)"
  done
  c=$(ceiling_one "$r")
  [[ -n $c ]] || die "kafka-producer-perf-test printed no records/sec"
  ceilings+="$c "
  log "run $r, kafka-producer-perf-test: $c records/s of $(($(cat "$WORK/value_bytes") + 14)) bytes"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# shellcheck disable=SC2086
cm=$(median $ceilings)
# shellcheck disable=SC2086
mf=$(median ${times[file]})
printf '\n%d rows in batches of %d, %d run(s) each, medians:\n' "$rows" "$BATCH" "$repeat"
printf '  kafka-producer-perf-test (ceiling): %8.0f records/s\n' "$cm"
for v in "${variants[@]}"; do
  # shellcheck disable=SC2086
  m=$(median ${times[$v]})
  eps=$(awk -v n="$rows" -v t="$m" 'BEGIN { print n / (t / 1000) }')
  printf '  %-5s %8.0f ms  %8.0f events/s  vs ceiling: %.3f  vs file: %.3f\n' "$v" "$m" "$eps" \
    "$(awk -v e="$eps" -v c="$cm" 'BEGIN { print e / c }')" \
    "$(awk -v a="$mf" -v b="$m" 'BEGIN { print a / b }')"
done
printf '  (targets: kafka at least 0.7 of the ceiling, eo at least 0.5)\n'
