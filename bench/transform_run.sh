#!/usr/bin/env bash
# The transform run: workload (a) of bench/run.sh (N inserts into bench6, 1,000 rows per
# transaction) delivered by `cppcdc run` to the file sink twice per repetition from slots made
# before the load, once without transforms and once with the chain filter + mask (HMAC-SHA256
# of `name`) + metadata_projection, interleaved. Prints the median wall time of each and their
# ratio (target: at most 1.10), then the per-action micro-benchmark (cppcdc_bench_transform).
#
# Usage: bench/transform_run.sh [--rows N] [--repeat R] [--port P] [--callgrind] [--no-build]
#                               [--no-micro]
#   --rows N     rows (a multiple of 1000; default 1000000)
#   --repeat R   runs per variant, interleaved (the order alternating); medians reported
#                (default 3)
#   --port P     the throwaway cluster's port (default 55484; /tmp/cppcdc-bench-xform-pg)
#   --callgrind  run cppcdc under valgrind's callgrind and print its instructions per event
#                for each variant and their ratio as well (deterministic where wall time on a
#                shared machine is not; valgrind hides SHA-NI, so OpenSSL hashes in software
#                there and the HMAC's share is overstated). Use fewer rows (e.g. 100000).
# Work files: /tmp/cppcdc-bench-xform-work (kept after a failure). CPPCDC_BENCH_XFORM_DIR=D
# puts the cluster in D-pg and the work files in D-work instead (for concurrent runs).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${CPPCDC_BENCH_BUILD:-$ROOT/build}  # another build tree: compare builds
PORT=55484
PG_DIR=${CPPCDC_BENCH_XFORM_DIR:-/tmp/cppcdc-bench-xform}-pg
WORK=${CPPCDC_BENCH_XFORM_DIR:-/tmp/cppcdc-bench-xform}-work
PGBIN=/usr/lib/postgresql/15/bin
rows=1000000
repeat=3
build=1
micro=1
callgrind=0

log() { printf '[xform-bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf '[xform-bench] ERROR: %s\n' "$*" >&2; exit 1; }

while (($#)); do
  a=$1
  shift
  case "$a" in
    --rows) rows=${1:?--rows N}; shift ;;
    --repeat) repeat=${1:?--repeat R}; shift ;;
    --port) PORT=${1:?--port P}; shift ;;
    --no-build) build=0 ;;
    --no-micro) micro=0 ;;
    --callgrind) callgrind=1 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done
((rows % 1000 == 0)) || die "--rows must be a multiple of 1000"
if ((callgrind)); then command -v valgrind >/dev/null || die "--callgrind needs valgrind"; fi

CPPCDC=$BUILD/cppcdc
SINKWATCH=$BUILD/bench/cppcdc_bench_sinkwatch
MICRO=$BUILD/bench/cppcdc_bench_transform
if ((build)); then
  log "building (scripts/build.sh)"
  "$ROOT/scripts/build.sh" --target cppcdc --target cppcdc_bench_sinkwatch \
    --target cppcdc_bench_transform >/dev/null
fi
for b in "$CPPCDC" "$SINKWATCH"; do [[ -x $b ]] || die "$b is missing (drop --no-build)"; done

cdc_pid=""
cleanup() {
  if [[ -n $cdc_pid ]] && kill -0 "$cdc_pid" 2>/dev/null; then kill -TERM "$cdc_pid" || true; fi
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

sql <<SQL
create table bench6 (id bigint primary key, name text not null, amount numeric(12,2) not null,
  created_at timestamptz not null, qty integer, active boolean);
create publication bench_pub for table bench6;
SQL
for ((r = 1; r <= repeat; r++)); do
  for v in none chain; do
    val "select 1 from pg_create_logical_replication_slot('x_${v}_$r', 'pgoutput')" >/dev/null
  done
done
log "loading $rows rows (1,000 per transaction)"
sql -c "do \$\$ begin for i in 0..$((rows / 1000 - 1)) loop
  insert into bench6 (id, name, amount, created_at, qty, active)
  select g, md5(g::text), (g * 1.25)::numeric(12,2),
    timestamptz '2024-01-01 00:00:00+00' + g * interval '1 millisecond', (g % 1000)::int,
    g % 2 = 0 from generate_series(i * 1000 + 1, i * 1000 + 1000) g;
  commit; end loop; end \$\$"

export CPPCDC_BENCH_HMAC_KEY=bench-secret
CHAIN='
[[pipeline.transforms]]
name = "keep-bench"
  [[pipeline.transforms.actions]]
  type = "filter"
  include_tables = ["public.bench*"]
  filters = [{ field = "after.qty", op = "ge", value = 0 }]

[[pipeline.transforms]]
name = "pii"
  [[pipeline.transforms.actions]]
  type = "mask"
  rules = { "name" = { hmac_sha256 = { secret_env = "CPPCDC_BENCH_HMAC_KEY" } } }

[[pipeline.transforms]]
name = "meta"
  [[pipeline.transforms.actions]]
  type = "metadata_projection"
  target_field = "_cdc"
  fields = ["table", "operation", "offset", "source_timestamp"]
'

# One delivery: prints the wall time in ms, from exec to the checkpoint recording all rows.
run_one() { # variant rep
  local v=$1 r=$2 slot="x_$1_$2"
  local dir=$WORK/$slot
  mkdir -p "$dir/state"
  {
    printf '[source]\ntype = "postgres"\ndsn = "%s"\nslot_name = "%s"\n' "$DSN" "$slot"
    printf 'publication_name = "bench_pub"\ntables = ["public.bench6"]\ncreate_slot = false\n'
    printf 'create_publication = false\n[source.snapshot]\nmode = "never"\n'
    printf '[sink]\ntype = "file"\npath = "%s/events.jsonl"\n' "$dir"
    printf '[state.offset]\nbackend = "local_fs"\ndir = "%s/state"\n' "$dir"
    [[ $v == chain ]] && printf '%s\n' "$CHAIN"
  } >"$dir/cdc.toml"
  local t0 watch end_ns wrap=()
  ((callgrind)) && wrap=(valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out")
  t0=$(date +%s%N)
  "${wrap[@]}" "$CPPCDC" run --config "$dir/cdc.toml" 2>"$dir/cppcdc.log" &
  cdc_pid=$!
  watch=$("$SINKWATCH" checkpoint --file "$dir/state/checkpoint-$slot.ckpt" --events "$rows" \
    --stall 120) || { tail -n 20 "$dir/cppcdc.log" >&2; die "$slot did not deliver $rows events"; }
  kill -TERM "$cdc_pid" 2>/dev/null || true
  wait "$cdc_pid" || true
  cdc_pid=""
  local lines
  lines=$(wc -l <"$dir/events.jsonl")
  ((lines == rows)) || die "$slot: the sink has $lines lines, expected $rows"
  if [[ $v == chain ]]; then
    grep -q '"_cdc":{"table":"bench6"' "$dir/events.jsonl" || die "$slot: no _cdc column"
    ! grep -q '"name":"c4ca4238a0b923820dcc509a6f75849b"' "$dir/events.jsonl" ||
      die "$slot: name shipped in clear text"
  fi
  rm -f "$dir/events.jsonl"
  if ((callgrind)); then
    local ir
    ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$dir/callgrind.out" 2>/dev/null)
    [[ $ir =~ ^[0-9]+$ ]] || die "$slot: no instruction count in $dir/callgrind.out"
    echo "$ir" >"$WORK/ir_$slot"
  fi
  end_ns=$(sed 's/.*"checkpoint_mtime_ns":\([0-9]*\).*/\1/' <<<"$watch")
  echo $(((end_ns - t0) / 1000000))
}

none=()
chain=()
run_none() {
  none+=("$(run_one none "$1")")
  log "run $1 without transforms: ${none[-1]} ms"
}
run_chain() {
  chain+=("$(run_one chain "$1")")
  log "run $1 with filter + mask (HMAC) + metadata_projection: ${chain[-1]} ms"
}
# The order alternates between repetitions (none first, then chain first), so that whatever
# favours the first or the second run of a pair (the page cache, the slots' order) is shared.
for ((r = 1; r <= repeat; r++)); do
  if ((r % 2)); then
    run_none "$r"
    run_chain "$r"
  else
    run_chain "$r"
    run_none "$r"
  fi
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
mn=$(median "${none[@]}")
mc=$(median "${chain[@]}")
printf '\n%d rows, %d run(s) each, medians:\n' "$rows" "$repeat"
printf '  no transforms:                              %8.0f ms  (%.0f events/s)\n' "$mn" \
  "$(awk -v n="$rows" -v t="$mn" 'BEGIN { print n / (t / 1000) }')"
printf '  filter + mask (HMAC) + metadata_projection: %8.0f ms  (%.0f events/s)\n' "$mc" \
  "$(awk -v n="$rows" -v t="$mc" 'BEGIN { print n / (t / 1000) }')"
printf '  ratio (target <= 1.10):                     %8.3f\n' \
  "$(awk -v a="$mc" -v b="$mn" 'BEGIN { print a / b }')"

if ((callgrind)); then
  irs() { for ((r = 1; r <= repeat; r++)); do cat "$WORK/ir_x_$1_$r"; done; }
  in=$(median $(irs none))
  ic=$(median $(irs chain))
  printf '  callgrind instructions per event (whole cppcdc process, medians):\n'
  printf '    no transforms: %.0f   chain: %.0f   ratio: %.3f\n' \
    "$(awk -v i="$in" -v n="$rows" 'BEGIN { print i / n }')" \
    "$(awk -v i="$ic" -v n="$rows" 'BEGIN { print i / n }')" \
    "$(awk -v a="$ic" -v b="$in" 'BEGIN { print a / b }')"
fi

if ((micro)) && [[ -x $MICRO ]]; then
  printf '\nper-action CPU per event (Google Benchmark, batches of 1,000 events):\n'
  "$MICRO" --benchmark_min_time=0.2
fi
