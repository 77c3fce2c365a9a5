#!/usr/bin/env bash
# The HTTP sink run: workload (a) of bench/run.sh (N inserts into bench6, 1,000 rows per
# transaction) delivered by `cppcdc run` in batches of 1,000 events (max_buffer_size), once to
# the file sink and once to the HTTP sink POSTing to a receiver on 127.0.0.1, per repetition,
# interleaved, each from a slot made before the load. Prints the median wall time of each (from
# exec to the checkpoint recording every row) and the throughput ratio http / file (target: at
# least 0.80).
#
# The HTTP variant signs every request (Standard Webhooks, one secret) and sends a JSON array
# per batch; the receiver is tests/integration/http_receiver.py with --discard (it reads each
# request and answers 200), so the run measures cppcdc, not a receiver's storage.
#
# Usage: bench/http_run.sh [--rows N] [--repeat R] [--port P] [--http-port H] [--gzip]
#                          [--no-build]
#   --rows N       rows (a multiple of 1000; default 1000000)
#   --repeat R     runs per variant, interleaved; medians reported (default 3)
#   --port P       the throwaway cluster's port (default 55486; /tmp/cppcdc-bench-http-pg)
#   --http-port H  the receiver's port (default 0: one the kernel picks)
#   --gzip         a third variant: the HTTP sink with compression = "gzip"
# Work files: /tmp/cppcdc-bench-http-work (kept after a failure).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
PORT=55486
HTTP_PORT=0
PG_DIR=/tmp/cppcdc-bench-http-pg
WORK=/tmp/cppcdc-bench-http-work
PGBIN=/usr/lib/postgresql/15/bin
rows=1000000
repeat=3
build=1
gzip=0

log() { printf '[http-bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf '[http-bench] ERROR: %s\n' "$*" >&2; exit 1; }

while (($#)); do
  a=$1
  shift
  case "$a" in
    --rows) rows=${1:?--rows N}; shift ;;
    --repeat) repeat=${1:?--repeat R}; shift ;;
    --port) PORT=${1:?--port P}; shift ;;
    --http-port) HTTP_PORT=${1:?--http-port H}; shift ;;
    --gzip) gzip=1 ;;
    --no-build) build=0 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done
((rows % 1000 == 0)) || die "--rows must be a multiple of 1000"

CPPCDC=$BUILD/cppcdc
SINKWATCH=$BUILD/bench/cppcdc_bench_sinkwatch
if ((build)); then
  log "building (scripts/build.sh)"
  "$ROOT/scripts/build.sh" --target cppcdc --target cppcdc_bench_sinkwatch >/dev/null
fi
for b in "$CPPCDC" "$SINKWATCH"; do [[ -x $b ]] || die "$b is missing (drop --no-build)"; done

cdc_pid=""
rcv_pid=""
cleanup() {
  if [[ -n $cdc_pid ]] && kill -0 "$cdc_pid" 2>/dev/null; then kill -TERM "$cdc_pid" || true; fi
  if [[ -n $rcv_pid ]] && kill -0 "$rcv_pid" 2>/dev/null; then kill -TERM "$rcv_pid" || true; fi
  wait 2>/dev/null || true
  "$ROOT/scripts/pg.sh" stop "$PG_DIR" --purge >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$ROOT/scripts/pg.sh" stop "$PG_DIR" --purge >/dev/null 2>&1 || true
rm -rf -- "$WORK"
mkdir -p "$WORK"
log "starting PostgreSQL on 127.0.0.1:$PORT"
"$ROOT/scripts/pg.sh" start "$PG_DIR" "$PORT" >/dev/null
DSN="host=127.0.0.1 port=$PORT dbname=postgres user=postgres"
sql() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d postgres "$@"; }
val() { sql -At -c "$1"; }

SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
python3 "$ROOT/tests/integration/http_receiver.py" --store "$WORK/receiver" --port "$HTTP_PORT" \
  --discard >"$WORK/receiver.log" 2>&1 &
rcv_pid=$!
for _ in $(seq 100); do [[ -s $WORK/receiver/port ]] && break; sleep 0.1; done
[[ -s $WORK/receiver/port ]] || die "the receiver did not start: $(cat "$WORK/receiver.log")"
URL="http://127.0.0.1:$(cat "$WORK/receiver/port")/cdc"
log "receiver at $URL"

variants=(file http)
((gzip)) && variants+=(gzip)

sql <<SQL
create table bench6 (id bigint primary key, name text not null, amount numeric(12,2) not null,
  created_at timestamptz not null, qty integer, active boolean);
create publication bench_pub for table bench6;
SQL
for ((r = 1; r <= repeat; r++)); do
  for v in "${variants[@]}"; do
    val "select 1 from pg_create_logical_replication_slot('h_${v}_$r', 'pgoutput')" >/dev/null
  done
done
log "loading $rows rows (1,000 per transaction)"
sql -c "do \$\$ begin for i in 0..$((rows / 1000 - 1)) loop
  insert into bench6 (id, name, amount, created_at, qty, active)
  select g, md5(g::text), (g * 1.25)::numeric(12,2),
    timestamptz '2024-01-01 00:00:00+00' + g * interval '1 millisecond', (g % 1000)::int,
    g % 2 = 0 from generate_series(i * 1000 + 1, i * 1000 + 1000) g;
  commit; end loop; end \$\$"

# One delivery: prints the wall time in ms, from exec to the checkpoint recording all rows.
run_one() { # variant rep
  local v=$1 r=$2 slot="h_$1_$2"
  local dir=$WORK/$slot
  mkdir -p "$dir/state"
  {
    printf '[source]\ntype = "postgres"\ndsn = "%s"\nslot_name = "%s"\n' "$DSN" "$slot"
    printf 'publication_name = "bench_pub"\ntables = ["public.bench6"]\ncreate_slot = false\n'
    printf 'create_publication = false\n[source.snapshot]\nmode = "never"\n'
    if [[ $v == file ]]; then
      printf '[sink]\ntype = "file"\npath = "%s/events.jsonl"\n' "$dir"
    else
      printf '[sink]\ntype = "http"\nurl = "%s"\nsigning_secret = "%s"\n' "$URL" "$SECRET"
      [[ $v == gzip ]] && printf 'compression = "gzip"\n'
    fi
    printf '[state.offset]\nbackend = "local_fs"\ndir = "%s/state"\n' "$dir"
    printf '[runtime]\nmax_buffer_size = 1000\n'
  } >"$dir/cdc.toml"
  local t0 watch end_ns
  t0=$(date +%s%N)
  "$CPPCDC" run --config "$dir/cdc.toml" 2>"$dir/cppcdc.log" &
  cdc_pid=$!
  watch=$("$SINKWATCH" checkpoint --file "$dir/state/checkpoint-$slot.ckpt" --events "$rows" \
    --stall 120) || { tail -n 20 "$dir/cppcdc.log" >&2; die "$slot did not deliver $rows events"; }
  kill -TERM "$cdc_pid" 2>/dev/null || true
  wait "$cdc_pid" || true
  cdc_pid=""
  if [[ $v == file ]]; then
    local lines
    lines=$(wc -l <"$dir/events.jsonl")
    ((lines == rows)) || die "$slot: the sink has $lines lines, expected $rows"
    rm -f "$dir/events.jsonl"
  fi
  end_ns=$(sed 's/.*"checkpoint_mtime_ns":\([0-9]*\).*/\1/' <<<"$watch")
  echo $(((end_ns - t0) / 1000000))
}

declare -A times
for ((r = 1; r <= repeat; r++)); do
  for v in "${variants[@]}"; do
    t=$(run_one "$v" "$r")
    times[$v]+="$t "
    log "run $r, $v sink: $t ms"
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
printf '\n%d rows in batches of 1,000, %d run(s) each, medians:\n' "$rows" "$repeat"
# shellcheck disable=SC2086
mf=$(median ${times[file]})
for v in "${variants[@]}"; do
  # shellcheck disable=SC2086
  m=$(median ${times[$v]})
  printf '  %-5s sink: %8.0f ms  (%.0f events/s)  throughput vs file: %.3f\n' "$v" "$m" \
    "$(awk -v n="$rows" -v t="$m" 'BEGIN { print n / (t / 1000) }')" \
    "$(awk -v a="$mf" -v b="$m" 'BEGIN { print a / b }')"
done
printf '  (target for http: at least 0.80)\n'
