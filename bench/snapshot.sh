#!/usr/bin/env bash
# Snapshot read speed: cppcdc's blocking and incremental snapshots of one table, against
# PostgreSQL's own COPY (SELECT ...) TO STDOUT of the same rows as the reference, in one run.
#
# Usage: bench/snapshot.sh [--rows N] [--chunk-size N] [--repeat R] [--no-build]
#                          [--build-dir DIR] [--keep] [--out FILE]
#   --rows N        rows in the table (default 5,000,000)
#   --chunk-size N  [source.snapshot] chunk_size for both cppcdc runs (default 1024)
#   --repeat R      runs of each reader (interleaved); the median is reported (default 1)
#   --no-build      use the binaries already built
#   --build-dir DIR build with CMake into DIR instead of scripts/build.sh into build/
#   --keep          keep the cluster and the work files
#   --out FILE      result JSON (default bench/results/snapshot-latest.json)
# The table has 6 columns (bigint key, int, text, numeric, timestamptz, boolean). Each cppcdc
# run goes from the table to the file sink (fsync per batch) with the file checkpoint:
#   blocking     [source.snapshot] mode = "initial_only": the run ends when the snapshot is read
#   blk>null     the blocking run with the stdout sink into /dev/null: reading, decoding and
#                encoding without writing a file (COPY writes nothing either)
#   disk         no reader: dd writes as many bytes as the blocking run's file, 4 MiB at a
#                time, each synced (oflag=dsync): what the disk alone takes for the file
#                sink's bytes (its own speed varies between runs, so it bounds the file-sink
#                run only roughly)
# Each run times COPY first and the blocking read into /dev/null right after it. The "/ COPY"
# column is the median of the runs' own ratios (a reader's time against its run's COPY);
# seconds and rows/s are the medians of the times.
# Start-up (about 0.1 s) and the last batch weigh on small tables: ratios from --rows below a
# few million come out lower than those of the default 5,000,000.
#   incremental  mode = "incremental" on a quiet table: timed to the log line that says the
#                snapshot is complete
# Wall time includes start-up (connecting, creating the slot). Peak RSS comes from
# /usr/bin/time. PostgreSQL: a throwaway cluster on 127.0.0.1:55471 (scripts/pg.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
PG_DIR=/tmp/cppcdc-bench-snap-pg
PORT=55471
WORK=/tmp/cppcdc-bench-snap-work
PGBIN=/usr/lib/postgresql/15/bin
OUT=$ROOT/bench/results/snapshot-latest.json
rows=5000000
chunk=1024
repeat=1
build=1
keep=0
own_build_dir=0

log() { printf '[snapshot-bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf '[snapshot-bench] ERROR: %s\n' "$*" >&2; exit 1; }

while (($#)); do
  a=$1
  shift
  case "$a" in
    --rows) rows=${1:?--rows N}; shift ;;
    --chunk-size) chunk=${1:?--chunk-size N}; shift ;;
    --repeat) repeat=${1:?--repeat R}; shift ;;
    --no-build) build=0 ;;
    --build-dir) BUILD=${1:?--build-dir DIR}; own_build_dir=1; shift ;;
    --keep) keep=1 ;;
    --out) OUT=${1:?--out FILE}; shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done
CPPCDC=$BUILD/cppcdc

if ((build)); then
  build_log=$(mktemp /tmp/cppcdc-snapbench-build.XXXXXX.log)
  if ((own_build_dir)); then
    { cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCPPCDC_WERROR=ON &&
      cmake --build "$BUILD" --parallel "$(nproc)" --target cppcdc; } >"$build_log" 2>&1 ||
      { tail -n 40 "$build_log" >&2; die "build failed (log: $build_log)"; }
  else
    "$ROOT/scripts/build.sh" --target cppcdc >"$build_log" 2>&1 ||
      { tail -n 40 "$build_log" >&2; die "build failed (log: $build_log)"; }
  fi
  rm -f "$build_log"
fi
[[ -x $CPPCDC ]] || die "$CPPCDC is missing (drop --no-build)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)"

cdc_pid=""
success=0
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  if [[ -n $cdc_pid ]] && kill -0 "$cdc_pid" 2>/dev/null; then pkill -TERM -P "$cdc_pid" || true; fi
  wait 2>/dev/null || true
  if ((keep)); then
    log "kept: cluster in $PG_DIR (port $PORT), work files in $WORK"
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

log "loading $rows rows"
sql -c "create table snap (id bigint primary key, qty int, label text, price numeric(12,2),
                           at timestamptz, active boolean)"
sql -c "insert into snap select g, g % 1000, 'label ' || g, (g % 100000) / 100.0,
               timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second', g % 2 = 0
        from generate_series(1, $rows) g"
sql -c "vacuum analyze snap"

now_ns() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

write_config() { # dir mode [sink type]
  local sink="type = \"file\"
path = \"$1/events.jsonl\""
  [[ ${3:-file} == stdout ]] && sink='type = "stdout"'
  cat >"$1/cdc.toml" <<EOF
[source]
type = "postgres"
dsn = "$DSN"
slot_name = "$(basename "$1")"
publication_name = "snap_pub"
tables = ["public.snap"]

[source.snapshot]
mode = "$2"
chunk_size = $chunk

[sink]
$sink

[state.offset]
backend = "local_fs"
dir = "$1/state"
EOF
}

declare -A results=()
add() { results[$1]="${results[$1]:-} $2"; }

run_copy() {
  local t0 t1
  t0=$(now_ns)
  sql -c "copy (select * from snap order by id) to stdout" >/dev/null
  t1=$(now_ns)
  add copy "$(secs "$t0" "$t1")"
}

# The blocking snapshot into the file sink (result "blocking"), or with sink "stdout" into
# /dev/null (result "blocknull"). Rows counted from the sink file, or from the log's final line.
run_blocking() { # rep [stdout]
  local sink=${2:-file} name=blocking
  [[ $sink == stdout ]] && name=blocknull
  local dir=$WORK/${name}_$1 t0 t1 out
  mkdir -p "$dir"
  write_config "$dir" initial_only "$sink"
  out=$dir/log
  [[ $sink == stdout ]] && out=/dev/null
  t0=$(now_ns)
  /usr/bin/time -f '%M' -o "$dir/rss" "$CPPCDC" run --config "$dir/cdc.toml" >"$out" \
    2>>"$dir/log" || { tail -n 20 "$dir/log" >&2; die "the $name snapshot failed"; }
  t1=$(now_ns)
  if [[ $sink == stdout ]]; then
    grep -q "snapshot of public.snap: $rows rows" "$dir/log" ||
      { tail -n 20 "$dir/log" >&2; die "$name snapshot: not $rows rows"; }
  else
    local got
    got=$(grep -c '"op":"read"' "$dir/events.jsonl" || true)
    ((got == rows)) || die "$name snapshot: $got of $rows rows in the sink"
    add file_bytes "$(stat -c %s "$dir/events.jsonl")"
    rm -f "$dir/events.jsonl"
    run_disk "$1"
  fi
  add "$name" "$(secs "$t0" "$t1")"
  add "${name}_rss" "$(cat "$dir/rss")"
}

# The disk's own ceiling for the file sink: as many bytes as the blocking run wrote, in 4 MiB
# writes each synced before the next (O_DSYNC), as the sink syncs each batch of about that
# size. Nothing is encoded or read: the time it takes bounds the file-sink run from below.
run_disk() { # rep
  local bytes t0 t1
  bytes=$(tr ' ' '\n' <<<"${results[file_bytes]}" | grep -v '^$' | tail -n 1)
  t0=$(now_ns)
  dd if=/dev/zero of="$WORK/disk_$1" bs=4M count=$(((bytes + 4194303) / 4194304)) oflag=dsync \
    status=none
  t1=$(now_ns)
  rm -f "$WORK/disk_$1"
  add disk "$(secs "$t0" "$t1")"
}

run_incremental() { # rep
  local dir=$WORK/incremental_$1 t0 t1
  mkdir -p "$dir"
  write_config "$dir" incremental
  t0=$(now_ns)
  /usr/bin/time -f '%M' -o "$dir/rss" "$CPPCDC" run --config "$dir/cdc.toml" >"$dir/log" 2>&1 &
  cdc_pid=$!
  until grep -q 'incremental snapshot .* complete' "$dir/log"; do
    kill -0 "$cdc_pid" 2>/dev/null || { tail -n 20 "$dir/log" >&2; die "cppcdc ended early"; }
    sleep 0.05
  done
  t1=$(now_ns)
  pkill -TERM -P "$cdc_pid" || true  # cppcdc itself; /usr/bin/time reports when it ends
  wait "$cdc_pid" || true
  cdc_pid=""
  local got
  got=$(grep -c '"op":"read"' "$dir/events.jsonl" || true)
  ((got == rows)) || die "incremental snapshot: $got of $rows rows in the sink"
  add incremental "$(secs "$t0" "$t1")"
  add incremental_rss "$(cat "$dir/rss")"
  sql -c "select pg_drop_replication_slot('$(basename "$dir")')" >/dev/null
  rm -f "$dir/events.jsonl"
}

last() { tr ' ' '\n' <<<"${results[$1]}" | grep -v '^$' | tail -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
# COPY and the blocking read into /dev/null run back to back, and each run's ratios are taken
# against that run's own COPY: the machine's speed drifts between runs, and a ratio of two
# times measured seconds apart drifts less than one of medians taken minutes apart.
for ((r = 1; r <= repeat; r++)); do
  log "run $r of $repeat: COPY"
  run_copy
  log "run $r of $repeat: blocking snapshot to /dev/null"
  run_blocking "$r" stdout
  log "run $r of $repeat: blocking snapshot"
  run_blocking "$r"
  log "run $r of $repeat: incremental snapshot"
  run_incremental "$r"
  c=$(last copy)
  for x in blocknull blocking disk incremental; do add "${x}_ratio" "$(ratio "$(last "$x")" "$c")"; done
  log "run $r of $repeat: COPY ${c}s; / COPY: blk>null $(last blocknull_ratio), blocking $(last blocking_ratio), disk $(last disk_ratio), incremental $(last incremental_ratio)"
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
copy_s=$(median <<<"${results[copy]}")
block_s=$(median <<<"${results[blocking]}")
incr_s=$(median <<<"${results[incremental]}")
null_s=$(median <<<"${results[blocknull]}")
disk_s=$(median <<<"${results[disk]}")
file_mb=$(median <<<"${results[file_bytes]}" | awk '{ printf "%.0f", $1 / 1048576 }')
block_rss=$(median <<<"${results[blocking_rss]}")
incr_rss=$(median <<<"${results[incremental_rss]}")
rate() { awk -v n="$rows" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }
rmed() { median <<<"${results[${1}_ratio]}"; }  # median of the runs' own ratios to COPY

printf '\n%-12s %10s %12s %10s %10s\n' reader seconds rows/s "/ COPY" "peak RSS"
printf '%-12s %10s %12s %10s %10s\n' COPY "$copy_s" "$(rate "$copy_s")" 1.00 -
printf '%-12s %10s %12s %10s %9sM\n' blocking "$block_s" "$(rate "$block_s")" \
  "$(rmed blocking)" "$((block_rss / 1024))"
printf '%-12s %10s %12s %10s %10s\n' "blk>null" "$null_s" "$(rate "$null_s")" \
  "$(rmed blocknull)" -
printf '%-12s %10s %12s %10s %10s   (%s MB synced in 4 MiB writes: the disk alone)\n' \
  disk "$disk_s" "$(rate "$disk_s")" "$(rmed disk)" - "$file_mb"
printf '%-12s %10s %12s %10s %9sM\n' incremental "$incr_s" "$(rate "$incr_s")" \
  "$(rmed incremental)" "$((incr_rss / 1024))"
mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
{"rows": $rows, "chunk_size": $chunk, "repeat": $repeat,
 "copy": {"seconds": $copy_s, "rows_per_s": $(rate "$copy_s")},
 "blocking": {"seconds": $block_s, "rows_per_s": $(rate "$block_s"), "ratio_to_copy": $(rmed blocking), "peak_rss_kb": $block_rss},
 "blocking_to_dev_null": {"seconds": $null_s, "rows_per_s": $(rate "$null_s"), "ratio_to_copy": $(rmed blocknull), "ratios_by_run": [$(tr ' ' ',' <<<"${results[blocknull_ratio]# }")]},
 "disk_ceiling": {"seconds": $disk_s, "bytes": $(median <<<"${results[file_bytes]}"), "rows_per_s": $(rate "$disk_s"), "ratio_to_copy": $(rmed disk)},
 "incremental": {"seconds": $incr_s, "rows_per_s": $(rate "$incr_s"), "ratio_to_copy": $(rmed incremental), "peak_rss_kb": $incr_rss}}
EOF
log "results: $OUT"
success=1
