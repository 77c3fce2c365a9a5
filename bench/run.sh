#!/usr/bin/env bash
# cppcdc benchmarks in one command: throughput, latency, memory and CPU per event, measured
# against PostgreSQL's own decoder (pg_recvlogical + pgoutput) and wal2json in the same run.
#
# Usage: bench/run.sh [--quick] [options]
#   (default)            full run: 1,000,000-row workloads, 60 s of latency
#   --quick              100,000 rows for (a)/(b), 20,000 for (c)/(d), 10 s of latency
#   --rows N             rows for (a) and (b)
#   --updates N          updates for (c) (a multiple of 1000)
#   --wide-rows N        rows for (d)
#   --latency-seconds S  length of the latency run (rate: --rate, default 1000 tx/s)
#   --repeat R           runs per decoder and workload (interleaved); the median is reported
#   --only LIST          comma list of a,b,c,d,latency,micro (default: all)
#   --wal2json-format V  wal2json format-version (default 2: one JSON object per change)
#   --cppcdc-stream X    on (default) or off: cppcdc's [source] stream_in_progress (pgoutput
#                        protocol v2 streams large transactions before their commit); the
#                        pg_recvlogical references always use pgoutput's defaults (v1)
#   --admin              also run cppcdc with [admin] on (/metrics scraped every second) next
#                        to each plain cppcdc run (after it, or before it in even repetitions):
#                        the cost of the metrics (issue 17: at most 2 %) as the ratio of the
#                        two, same WAL, same run; use --repeat 2 or more
#   --callgrind          run every cppcdc (and cppcdc_admin) run under valgrind's callgrind and
#                        record the instructions it executed: a count that other load on the
#                        machine does not change (about 50 times slower: use --rows 200000);
#                        with --admin the scrape interval becomes 20 s, because 1 s under
#                        valgrind would be a scrape per ~20 ms of real run time
#   --record-frames      re-record bench/frames/*.frames (the micro-benchmark's input) first
#   --no-build           use the binaries already in the build directory
#   --build-dir DIR      build with CMake into DIR instead of scripts/build.sh into build/
#                        (same flags; useful while others build in build/)
#   --keep               keep the PostgreSQL cluster and the work directory afterwards
#   --out FILE           result JSON (default bench/results/latest.json)
# PostgreSQL: a throwaway cluster on 127.0.0.1:55470 in /tmp/cppcdc-bench-pg (scripts/pg.sh),
# removed at the end. Work files (sink files, logs): /tmp/cppcdc-bench-work. The variables
# CPPCDC_BENCH_PG_PORT, CPPCDC_BENCH_PG_DIR and CPPCDC_BENCH_WORK move them (two people on one
# machine, or a test server already on 55470).
# See bench/README.md for what each number means.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
PG_DIR=${CPPCDC_BENCH_PG_DIR:-/tmp/cppcdc-bench-pg}
PORT=${CPPCDC_BENCH_PG_PORT:-55470}
WORK=${CPPCDC_BENCH_WORK:-/tmp/cppcdc-bench-work}
PGBIN=/usr/lib/postgresql/15/bin
OUT=$ROOT/bench/results/latest.json
PUB=bench_pub

mode=full
rows=""
updates=""
wide_rows=""
lat_seconds=""
rate=1000
repeat=1
only="a,b,c,d,latency,micro"
w2j_format=2
cdc_stream=on
record_frames=0
admin=0
callgrind=0
ADMIN_PORT=${CPPCDC_BENCH_ADMIN_PORT:-9464}
build=1
keep=0
own_build_dir=0

log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 1; }

while (($#)); do
  a=$1
  shift
  case "$a" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --rows) rows=${1:?--rows N}; shift ;;
    --updates) updates=${1:?--updates N}; shift ;;
    --wide-rows) wide_rows=${1:?--wide-rows N}; shift ;;
    --latency-seconds) lat_seconds=${1:?--latency-seconds S}; shift ;;
    --rate) rate=${1:?--rate TX_PER_S}; shift ;;
    --repeat) repeat=${1:?--repeat R}; shift ;;
    --only) only=${1:?--only LIST}; shift ;;
    --wal2json-format) w2j_format=${1:?--wal2json-format 1|2}; shift ;;
    --cppcdc-stream) cdc_stream=${1:?--cppcdc-stream on|off}; shift ;;
    --record-frames) record_frames=1 ;;
    --admin) admin=1 ;;
    --callgrind) callgrind=1 ;;
    --no-build) build=0 ;;
    --build-dir) BUILD=${1:?--build-dir DIR}; own_build_dir=1; shift ;;
    --keep) keep=1 ;;
    --out) OUT=${1:?--out FILE}; shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done
if [[ $mode == quick ]]; then
  : "${rows:=100000}" "${updates:=20000}" "${wide_rows:=20000}" "${lat_seconds:=10}"
else
  : "${rows:=1000000}" "${updates:=200000}" "${wide_rows:=200000}" "${lat_seconds:=60}"
fi
((rows % 1000 == 0 && updates % 1000 == 0 && wide_rows % 1000 == 0)) ||
  die "--rows, --updates and --wide-rows must be multiples of 1000"
wants() { [[ ",$only," == *",$1,"* ]]; }

CPPCDC=$BUILD/cppcdc
DECODE_BENCH=$BUILD/bench/cppcdc_bench_decode
LOADGEN=$BUILD/bench/cppcdc_bench_loadgen
SINKWATCH=$BUILD/bench/cppcdc_bench_sinkwatch
RECORDER=$BUILD/tools/pg_record_frames
TOAST_ROWS=2000  # rows of the TOAST table; (c) updates each of them updates/TOAST_ROWS times
CLK_TCK=$(getconf CLK_TCK)

# ---- prerequisites --------------------------------------------------------------------------
command -v pg_recvlogical >/dev/null || die "pg_recvlogical not found (postgresql-client-15)"
[[ -f /usr/lib/postgresql/15/lib/wal2json.so ]] || die "wal2json missing (postgresql-15-wal2json)"
command -v python3 >/dev/null || die "python3 not found"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (Debian package 'time')"
if ((callgrind)); then command -v valgrind >/dev/null || die "--callgrind needs valgrind (apt-get install valgrind)"; fi

if ((build)); then
  targets=()
  for t in cppcdc pg_record_frames cppcdc_bench_decode cppcdc_bench_loadgen cppcdc_bench_sinkwatch; do
    targets+=(--target "$t")
  done
  build_log=$(mktemp /tmp/cppcdc-bench-build.XXXXXX.log)
  if ((own_build_dir)); then
    log "building into $BUILD"
    { cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCPPCDC_WERROR=ON &&
      cmake --build "$BUILD" --parallel "$(nproc)" "${targets[@]}"; } >"$build_log" 2>&1 ||
      { tail -n 40 "$build_log" >&2; die "build failed (log: $build_log)"; }
  else
    log "building (scripts/build.sh)"
    "$ROOT/scripts/build.sh" "${targets[@]}" >"$build_log" 2>&1 ||
      { tail -n 40 "$build_log" >&2; die "build failed (log: $build_log)"; }
  fi
  rm -f "$build_log"
fi
for b in "$CPPCDC" "$LOADGEN" "$SINKWATCH"; do [[ -x $b ]] || die "$b is missing (drop --no-build)"; done

# ---- cluster and clean-up -------------------------------------------------------------------
cdc_pid=""
bg_pids=()
success=0
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  local p
  for p in $cdc_pid "${bg_pids[@]}"; do
    if [[ -n $p ]] && kill -0 "$p" 2>/dev/null; then kill -TERM "$p" 2>/dev/null || true; fi
  done
  wait 2>/dev/null || true
  if ((keep)); then
    log "kept: cluster in $PG_DIR (port $PORT), work files in $WORK"
    log "stop it with: scripts/pg.sh stop $PG_DIR --purge"
  else
    "$ROOT/scripts/pg.sh" stop "$PG_DIR" --purge >/dev/null 2>&1 || true
    if ((success)); then rm -rf -- "$WORK"; else log "work files (logs) kept in $WORK"; fi
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$ROOT/scripts/pg.sh" stop "$PG_DIR" --purge >/dev/null 2>&1 || true
rm -rf -- "$WORK"
mkdir -p "$WORK"
log "starting PostgreSQL on 127.0.0.1:$PORT"
"$ROOT/scripts/pg.sh" start "$PG_DIR" "$PORT" >/dev/null 2>"$WORK/pg-start.log" ||
  { cat "$WORK/pg-start.log" >&2; die "PostgreSQL did not start"; }

DSN="host=127.0.0.1 port=$PORT dbname=postgres user=postgres"
sql() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d postgres "$@"; }
val() { sql -At -c "$1"; }
RECORDS=$WORK/records.jsonl
: >"$RECORDS"
record() { printf '%s\n' "$1" >>"$RECORDS"; }

now_ns() { date +%s%N; }
# utime+stime of a process in clock ticks, from /proc/PID/stat (fields after the command
# name), into the variable named $2; shell builtins only (no process started), so it can be
# sampled often. Fails when the process is gone.
cpu_ticks() { # pid var
  local line fields
  { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
  read -r -a fields <<<"${line##*) }"
  printf -v "$2" '%d' $((fields[11] + fields[12]))
}
ticks_to_s() { awk -v t="$1" -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }'; }
# The same in seconds; 0 when the process is gone.
cpu_s() {
  local ticks
  cpu_ticks "$1" ticks || { echo 0; return; }
  ticks_to_s "$ticks"
}
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# ---- schema ---------------------------------------------------------------------------------
# 6 columns: the row of workloads (a) and (b) and of the 6-column micro-benchmark.
SIX_COLS="id, name, amount, created_at, qty, active"
SIX_EXPR="g, md5(g::text), (g * 1.25)::numeric(12,2),
  timestamptz '2024-01-01 00:00:00+00' + g * interval '1 millisecond', (g % 1000)::int, g % 2 = 0"
# 50 columns: id + 49 columns cycling through 16 types (NULL in every other row of c15-type).
wide_types=("integer" "bigint" "text" "varchar(40)" "numeric(14,4)" "double precision" "boolean"
  "timestamptz" "date" "uuid" "jsonb" "bytea" "smallint" "real" "text" "interval")
wide_exprs=("(g % 100000)::int" "g * 7919" "md5(g::text)" "'customer-' || g"
  "(g * 1.0001)::numeric(14,4)" "(g / 7.0)::float8" "g % 3 = 0"
  "timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second'"
  "date '2024-01-01' + (g % 1000)::int" "md5(g::text)::uuid"
  "jsonb_build_object('k', g, 'tags', jsonb_build_array('a', 'b'))" "decode(md5(g::text), 'hex')"
  "(g % 30000)::smallint" "(g / 3.0)::real" "case when g % 2 = 0 then null else 'note ' || g end"
  "make_interval(secs => (g % 86400)::float8)")
WIDE_DDL="id bigint primary key"
WIDE_COLS="id"
WIDE_EXPR="g"
for i in $(seq 1 49); do
  t=$(((i - 1) % 16))
  c=$(printf 'c%02d' "$i")
  WIDE_DDL+=", $c ${wide_types[$t]}"
  WIDE_COLS+=", $c"
  WIDE_EXPR+=", ${wide_exprs[$t]}"
done

log "creating the schema"
sql <<SQL
create table bench6 (id bigint primary key, name text not null, amount numeric(12,2) not null,
  created_at timestamptz not null, qty integer, active boolean);
create table bench_toast (id bigint primary key, counter integer not null, doc text not null)
  with (fillfactor = 50);
alter table bench_toast alter column doc set storage external;  -- always out of line, 20 KB
create table bench50 ($WIDE_DDL);
create table bench_lat (id bigint primary key, created_at timestamptz not null, payload text);
create publication $PUB for table bench6, bench_toast, bench50, bench_lat;
SQL

record "$(printf '{"kind":"meta","mode":"%s","rows":%d,"updates":%d,"wide_rows":%d,"latency_seconds":%s,"rate":%s,"repeat":%d,"wal2json_format":%s,"cppcdc_stream_in_progress":%s,"nproc":%d,"loadavg_start":"%s","kernel":"%s","cpu":"%s","server":"%s","started_at":"%s","git_commit":"%s","uncommitted_source_changes":%d}' \
  "$mode" "$rows" "$updates" "$wide_rows" "$lat_seconds" "$rate" "$repeat" "$w2j_format" "$([[ $cdc_stream == on ]] && echo true || echo false)" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(uname -r)" \
  "$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo | tr -d '"')" \
  "$(val 'select version()' | cut -d, -f1)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  "$(git -C "$ROOT" status --porcelain -- src include apps CMakeLists.txt 2>/dev/null | wc -l)")"

# ---- decoders -------------------------------------------------------------------------------
# cppcdc's config: slot $2 (made before the load) on public.$3, events to $1/events.jsonl and
# the checkpoint in $1/state; written to $1/cdc.toml.
write_cdc_config() { # dir slot table [admin-port]
  local dir=$1 slot=$2 table=$3 admin_port=${4:-}
  cat >"$dir/cdc.toml" <<EOF
[source]
type = "postgres"
dsn = "$DSN"
slot_name = "$slot"
publication_name = "$PUB"
tables = ["public.$table"]
create_slot = false
create_publication = false
stream_in_progress = $([[ $cdc_stream == on ]] && echo true || echo false)

# The slot was made before the load: the stream alone carries every row (no snapshot).
[source.snapshot]
mode = "never"

[sink]
type = "file"
path = "$dir/events.jsonl"

[state.offset]
backend = "local_fs"
dir = "$dir/state"
EOF
  if [[ -n $admin_port ]]; then
    printf '\n[admin]\nlisten = "127.0.0.1:%s"\n' "$admin_port" >>"$dir/cdc.toml"
  fi
}

# cppcdc end to end: slot -> file sink (fsync per batch) -> file checkpoint, defaults for
# batching. Wall time: from just before exec to the mtime of the checkpoint that records all
# N events (the last batch written, fsynced, acknowledged and checkpointed).
# With decoder cppcdc_admin the same, with [admin] on and /metrics fetched every second (more
# often than a usual scrape interval) while it runs.
run_cppcdc() { # workload rep slot table events [decoder]
  local w=$1 r=$2 slot=$3 table=$4 n=$5 decoder=${6:-cppcdc}
  local dir=$WORK/$slot
  mkdir -p "$dir/state"
  : >"$dir/events.jsonl"
  if [[ $decoder == cppcdc_admin ]]; then
    write_cdc_config "$dir" "$slot" "$table" "$ADMIN_PORT"
  else
    write_cdc_config "$dir" "$slot" "$table"
  fi
  local t0 watch rc=0 scraper="" wrap=() scrape_s=1
  if ((callgrind)); then
    # valgrind execs its tool in the same process, so $! stays cppcdc's pid for the signals
    # and /proc reads below; callgrind writes its counts when cppcdc exits.
    rm -f "$dir/callgrind.out"
    wrap=(valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out")
    scrape_s=20
  fi
  t0=$(now_ns)
  "${wrap[@]}" "$CPPCDC" run --config "$dir/cdc.toml" 2>"$dir/cppcdc.log" &
  cdc_pid=$!
  if [[ $decoder == cppcdc_admin ]]; then
    # A scrape loop, paced like Prometheus (the sleep is the scrape interval, not a wait).
    (while kill -0 "$cdc_pid" 2>/dev/null; do
      curl -s -o /dev/null "http://127.0.0.1:$ADMIN_PORT/metrics" || true
      sleep "$scrape_s"
    done) &
    scraper=$!
    bg_pids+=("$scraper")
  fi
  watch=$("$SINKWATCH" checkpoint --file "$dir/state/checkpoint-$slot.ckpt" --events "$n" \
    --stall 120) || rc=$?
  local hwm cpu wpid wcpu=0
  hwm=$(hwm_kb "$cdc_pid")
  cpu=$(cpu_s "$cdc_pid")
  wpid=$(val "select active_pid from pg_replication_slots where slot_name = '$slot'")
  [[ -n $wpid ]] && wcpu=$(cpu_s "$wpid")
  kill -TERM "$cdc_pid" 2>/dev/null || true
  local exit_code=0
  wait "$cdc_pid" || exit_code=$?
  cdc_pid=""
  if [[ -n $scraper ]]; then wait "$scraper" 2>/dev/null || true; fi
  local instructions=0
  if ((callgrind)); then
    instructions=$(awk '/^(summary|totals):/ { print $2; exit }' "$dir/callgrind.out" 2>/dev/null)
    [[ $instructions =~ ^[0-9]+$ ]] || die "slot $slot: no instruction count in $dir/callgrind.out"
  fi
  if ((rc != 0)); then
    tail -n 20 "$dir/cppcdc.log" >&2
    die "cppcdc did not deliver $n events on slot $slot ($watch)"
  fi
  ((exit_code == 0)) || log "warning: cppcdc exited with $exit_code after the run (log: $dir/cppcdc.log)"
  local lines bytes
  lines=$(wc -l <"$dir/events.jsonl")
  bytes=$(stat -c %s "$dir/events.jsonl")
  ((lines == n)) || die "slot $slot: the sink has $lines lines, expected $n"
  local end_ns sink_ns first_ns
  end_ns=$(sed 's/.*"checkpoint_mtime_ns":\([0-9]*\).*/\1/' <<<"$watch")
  first_ns=$(sed 's/.*"first_checkpoint_mtime_ns":\([0-9]*\).*/\1/' <<<"$watch")
  sink_ns=$(stat -c %.9Y "$dir/events.jsonl" | tr -d .)
  record "$(printf '{"kind":"throughput","workload":"%s","rep":%d,"decoder":"%s","events":%d,"start_ns":%s,"end_ns":%s,"first_batch_ns":%s,"sink_end_ns":%s,"rss_peak_kb":%s,"cpu_s":%s,"walsender_cpu_s":%s,"output_bytes":%s,"exit_code":%d,"instructions":%s}' \
    "$w" "$r" "$decoder" "$n" "$t0" "$end_ns" "$first_ns" "$sink_ns" "$hwm" "$cpu" "$wcpu" "$bytes" "$exit_code" "$instructions")"
  rm -f "$dir/events.jsonl"
}

# pg_recvlogical into /dev/null, stopping at the end LSN; wall time of the whole process.
run_recvlogical() { # workload rep slot decoder endpos events
  local w=$1 r=$2 slot=$3 decoder=$4 endpos=$5 n=$6
  local dir=$WORK/$slot
  mkdir -p "$dir"
  local opts=()
  if [[ $decoder == pgoutput ]]; then
    opts=(-o proto_version=1 -o "publication_names=$PUB")
  else
    opts=(-o "format-version=$w2j_format")
  fi
  local t0 t1 rl_pid rc=0
  t0=$(now_ns)
  /usr/bin/time -f '%e %U %S %M' -o "$dir/time.txt" \
    timeout 900 pg_recvlogical -h 127.0.0.1 -p "$PORT" -U postgres -d postgres --slot="$slot" \
    --start --no-loop --endpos="$endpos" -f /dev/null "${opts[@]}" 2>"$dir/log" &
  rl_pid=$!
  bg_pids+=("$rl_pid")
  local wcpu
  wcpu=$(walsender_cpu_until_exit "$rl_pid")
  wait "$rl_pid" || rc=$?
  t1=$(now_ns)
  ((rc == 0)) || { cat "$dir/log" >&2; die "pg_recvlogical on $slot failed (exit $rc)"; }
  local cpu rss
  cpu=$(awk '{ printf "%.2f", $2 + $3 }' "$dir/time.txt")
  rss=$(awk '{ print $4 }' "$dir/time.txt")
  record "$(printf '{"kind":"throughput","workload":"%s","rep":%d,"decoder":"%s","events":%d,"start_ns":%s,"end_ns":%s,"rss_peak_kb":%s,"cpu_s":%s,"walsender_cpu_s":%s}' \
    "$w" "$r" "$decoder" "$n" "$t0" "$t1" "$rss" "$cpu" "$wcpu")"
}

# CPU seconds of the walsender serving a reference decoder: the server's only walsender while
# the reference runs (cppcdc's has exited by then), a child of this cluster's postmaster. It is
# sampled every 20 ms from /proc with shell builtins only (no process per sample, so the
# sampling itself takes next to no CPU from the run), until it or the client exits; the
# figure may fall short by up to one interval. Prints 0 when no walsender was seen.
walsender_cpu_until_exit() { # client-pid
  local client=$1 pm wpid="" i
  pm=$(sed -n 1p "$PG_DIR/data/postmaster.pid")
  for ((i = 0; i < 500; i++)); do
    kill -0 "$client" 2>/dev/null || break
    wpid=$(pgrep -P "$pm" -f 'walsender' | head -n 1) || true
    [[ -z $wpid ]] || break
    sleep 0.01
  done
  [[ -n $wpid ]] || { echo 0; return; }
  local ticks=0 now tick_fd
  exec {tick_fd}<> <(:)  # a pipe nobody writes: `read -t` on it is a builtin sleep
  while kill -0 "$client" 2>/dev/null; do
    cpu_ticks "$wpid" now || break  # gone: keep the last sample
    ticks=$now
    read -r -t 0.02 -u "$tick_fd" _ || true
  done
  exec {tick_fd}<&-
  ticks_to_s "$ticks"
}

# One workload: slots for every decoder (and repetition) first, then the load, then the
# decoders one after another on the same WAL.
workload() { # name table events load_sql_function
  local w=$1 table=$2 n=$3 loader=$4
  local r slots=()
  for ((r = 1; r <= repeat; r++)); do
    slots+=("cdc_${w}_$r:pgoutput" "pgo_${w}_$r:pgoutput" "w2j_${w}_$r:wal2json")
    if ((admin)); then slots+=("adm_${w}_$r:pgoutput"); fi
  done
  local s
  for s in "${slots[@]}"; do
    val "select 1 from pg_create_logical_replication_slot('${s%%:*}', '${s##*:}')" >/dev/null
  done
  local start_lsn end_lsn t0 t1
  start_lsn=$(val "select pg_current_wal_lsn()")
  log "($w) loading $n changes into $table"
  t0=$(now_ns)
  "$loader"
  t1=$(now_ns)
  end_lsn=$(val "select pg_current_wal_lsn()")
  local wal_bytes
  wal_bytes=$(val "select pg_wal_lsn_diff('$end_lsn', '$start_lsn')::bigint")
  record "$(printf '{"kind":"load","workload":"%s","table":"%s","events":%d,"load_s":%.3f,"wal_bytes":%s,"start_lsn":"%s","end_lsn":"%s"}' \
    "$w" "$table" "$n" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')" "$wal_bytes" "$start_lsn" "$end_lsn")"
  log "($w) $((wal_bytes / 1048576)) MB of WAL; decoding"
  for ((r = 1; r <= repeat; r++)); do
    # With --admin, the [admin] run goes second in odd repetitions and first in even ones, so
    # that neither profits from the WAL the other left in the page cache.
    if ((admin && r % 2 == 0)); then
      run_cppcdc "$w" "$r" "adm_${w}_$r" "$table" "$n" cppcdc_admin
      log "($w) cppcdc with [admin] run $r done"
    fi
    run_cppcdc "$w" "$r" "cdc_${w}_$r" "$table" "$n"
    log "($w) cppcdc run $r done"
    if ((admin && r % 2 == 1)); then
      run_cppcdc "$w" "$r" "adm_${w}_$r" "$table" "$n" cppcdc_admin
      log "($w) cppcdc with [admin] run $r done"
    fi
    run_recvlogical "$w" "$r" "pgo_${w}_$r" pgoutput "$end_lsn" "$n"
    log "($w) pg_recvlogical/pgoutput run $r done"
    run_recvlogical "$w" "$r" "w2j_${w}_$r" wal2json "$end_lsn" "$n"
    log "($w) pg_recvlogical/wal2json run $r done"
  done
  for s in "${slots[@]}"; do
    val "select pg_drop_replication_slot('${s%%:*}')" >/dev/null
  done
  sql -c "checkpoint" >/dev/null
}

# ---- loads ----------------------------------------------------------------------------------
load_a() { # n inserts in 1000-row transactions
  sql -c "do \$\$ begin for i in 0..$((rows / 1000 - 1)) loop
    insert into bench6 ($SIX_COLS) select $SIX_EXPR from generate_series(i * 1000 + 1, i * 1000 + 1000) g;
    commit; end loop; end \$\$"
}
load_b() { # n inserts in one transaction
  sql -c "insert into bench6 ($SIX_COLS) select $SIX_EXPR from generate_series(1, $rows) g"
}
load_c() { # updates leaving the TOASTed doc unchanged, 1000 rows per transaction
  sql -c "do \$\$ begin for r in 1..$((updates / TOAST_ROWS)) loop for b in 0..$((TOAST_ROWS / 1000 - 1)) loop
    update bench_toast set counter = counter + 1 where id between b * 1000 + 1 and b * 1000 + 1000;
    commit; end loop; end loop; end \$\$"
}
load_d() { # 50-column inserts in 1000-row transactions
  sql -c "do \$\$ begin for i in 0..$((wide_rows / 1000 - 1)) loop
    insert into bench50 ($WIDE_COLS) select $WIDE_EXPR from generate_series(i * 1000 + 1, i * 1000 + 1000) g;
    commit; end loop; end \$\$"
}

# ---- frames for the micro-benchmark ---------------------------------------------------------
record_frames() {
  [[ -x $RECORDER ]] || die "$RECORDER is missing"
  local name table cols expr
  for name in 6col 50col; do
    if [[ $name == 6col ]]; then table=bench6 cols=$SIX_COLS expr=$SIX_EXPR; else table=bench50 cols=$WIDE_COLS expr=$WIDE_EXPR; fi
    sql -c "truncate $table" >/dev/null
    val "select 1 from pg_create_logical_replication_slot('frames_$name', 'pgoutput')" >/dev/null
    sql -c "insert into $table ($cols) select $expr from generate_series(1, 100) g"
    # The recorder stops at the first keepalive whose WAL end reaches --end-lsn, and the
    # walsender may send one in the middle of a transaction (its WAL end is already the
    # commit's). A marker written after the transaction keeps --end-lsn beyond it.
    val "select pg_logical_emit_message(false, 'cppcdc-bench', 'end')" >/dev/null
    local end
    end=$(val "select pg_current_wal_lsn()")
    "$RECORDER" --conninfo "$DSN" --slot "frames_$name" --publication "$PUB" --end-lsn "$end" \
      --out "$ROOT/bench/frames/$name.frames" --no-messages >/dev/null
    val "select pg_drop_replication_slot('frames_$name')" >/dev/null
    sql -c "truncate $table" >/dev/null
    log "recorded bench/frames/$name.frames"
  done
}
((record_frames)) && record_frames

# ---- throughput -----------------------------------------------------------------------------
if wants a; then
  sql -c "truncate bench6" >/dev/null
  workload a bench6 "$rows" load_a
fi
if wants b; then
  sql -c "truncate bench6" >/dev/null
  workload b bench6 "$rows" load_b
fi
if wants c; then
  log "(c) preloading $TOAST_ROWS rows with a 20 KB TOASTed column"
  sql -c "insert into bench_toast select g, 0, repeat(md5(g::text), 625) from generate_series(1, $TOAST_ROWS) g" >/dev/null
  sql -c "vacuum analyze bench_toast" >/dev/null
  workload c bench_toast "$updates" load_c
fi
if wants d; then
  workload d bench50 "$wide_rows" load_d
fi

# ---- latency --------------------------------------------------------------------------------
# cppcdc and, on the same load at the same time, a reference client (pg_recvlogical with
# wal2json, one line per change, writing to a file without fsync) each follow their own slot.
# A watcher per output file notes when each line appears; report.py compares that with the
# row's clock_timestamp() taken by the server inside the inserting transaction.
if wants latency; then
  slot=cdc_lat
  dir=$WORK/$slot
  mkdir -p "$dir/state"
  : >"$dir/events.jsonl"
  : >"$dir/reference.jsonl"
  val "select 1 from pg_create_logical_replication_slot('$slot', 'pgoutput')" >/dev/null
  val "select 1 from pg_create_logical_replication_slot('w2j_lat', 'wal2json')" >/dev/null
  write_cdc_config "$dir" "$slot" bench_lat
  "$CPPCDC" run --config "$dir/cdc.toml" 2>"$dir/cppcdc.log" &
  cdc_pid=$!
  pg_recvlogical -h 127.0.0.1 -p "$PORT" -U postgres -d postgres --slot=w2j_lat --start \
    --no-loop -F 0 -f "$dir/reference.jsonl" -o format-version=2 -o include-transaction=false \
    -o add-tables=public.bench_lat 2>"$dir/reference.log" &
  ref_pid=$!
  bg_pids+=("$ref_pid")
  # Warm-up: one row (id 0) through both paths, so connection set-up and cppcdc's catalog
  # look-up for the relation are not counted as latency.
  sql -c "insert into bench_lat values (0, clock_timestamp(), 'warm-up')" >/dev/null
  "$SINKWATCH" checkpoint --file "$dir/state/checkpoint-$slot.ckpt" --events 1 --stall 60 >/dev/null ||
    { tail -n 20 "$dir/cppcdc.log" >&2; die "cppcdc did not deliver the warm-up row"; }
  "$SINKWATCH" lines --file "$dir/reference.jsonl" --lines 1 --times /dev/null --stall 60 >/dev/null ||
    { cat "$dir/reference.log" >&2; die "pg_recvlogical/wal2json did not deliver the warm-up row"; }
  n=$(awk -v r="$rate" -v s="$lat_seconds" 'BEGIN { printf "%d", r * s }')
  "$SINKWATCH" lines --file "$dir/events.jsonl" --lines $((n + 1)) --times "$dir/seen.txt" \
    --stall 60 >"$dir/watch.json" &
  watch_pid=$!
  "$SINKWATCH" lines --file "$dir/reference.jsonl" --lines $((n + 1)) --times "$dir/ref_seen.txt" \
    --stall 60 >"$dir/ref_watch.json" &
  ref_watch_pid=$!
  bg_pids+=("$watch_pid" "$ref_watch_pid")
  log "(latency) $rate single-row transactions per second for $lat_seconds s"
  "$LOADGEN" --conninfo "$DSN" --table bench_lat --rate "$rate" --seconds "$lat_seconds" \
    --out "$dir/commits.txt" >"$dir/loadgen.json"
  wait "$watch_pid" || { cat "$dir/watch.json" >&2; die "the latency run's sink did not get $n lines"; }
  wait "$ref_watch_pid" || { cat "$dir/ref_watch.json" >&2; die "the reference output did not get $n lines"; }
  hwm=$(hwm_kb "$cdc_pid")
  cpu=$(cpu_s "$cdc_pid")
  kill -TERM "$cdc_pid" "$ref_pid" 2>/dev/null || true
  wait "$cdc_pid" || true
  wait "$ref_pid" || true
  cdc_pid=""
  val "select pg_drop_replication_slot('w2j_lat')" >/dev/null
  val "select pg_drop_replication_slot('$slot')" >/dev/null
  record "$(printf '{"kind":"latency","rate":%s,"seconds":%s,"rss_peak_kb":%s,"cpu_s":%s,"loadgen":%s,"sink":"%s","seen":"%s","commits":"%s","reference":"%s","reference_seen":"%s"}' \
    "$rate" "$lat_seconds" "$hwm" "$cpu" "$(cat "$dir/loadgen.json")" "$dir/events.jsonl" \
    "$dir/seen.txt" "$dir/commits.txt" "$dir/reference.jsonl" "$dir/ref_seen.txt")"
  # The analysis reads those files now, before the work directory goes away.
  python3 "$ROOT/bench/report.py" latency "$RECORDS" >"$RECORDS.latency"
  cat "$RECORDS.latency" >>"$RECORDS"
  rm -f "$RECORDS.latency"
  log "(latency) done"
fi

# ---- micro-benchmark ------------------------------------------------------------------------
if wants micro; then
  [[ -x $DECODE_BENCH ]] || die "$DECODE_BENCH is missing (Google Benchmark not found at build time?)"
  log "(micro) decode/assemble/render benchmark over bench/frames/*.frames"
  "$DECODE_BENCH" --benchmark_repetitions=5 --benchmark_min_time=0.2 \
    --benchmark_report_aggregates_only=true --benchmark_out="$WORK/micro.json" \
    --benchmark_out_format=json >"$WORK/micro.txt" 2>&1 || { cat "$WORK/micro.txt" >&2; die "micro-benchmark failed"; }
  record "$(printf '{"kind":"micro","results":%s}' "$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$WORK/micro.json")")"
fi

record "$(printf '{"kind":"end","loadavg_end":"%s","finished_at":"%s"}' "$(cut -d' ' -f1-3 /proc/loadavg)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
mkdir -p "$(dirname "$OUT")"
python3 "$ROOT/bench/report.py" summary "$RECORDS" --out "$OUT"
success=1
