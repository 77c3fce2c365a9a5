#!/usr/bin/env bash
# The MariaDB run: N inserts into bench.bench6 (6 columns, 1,000 rows per transaction) on a
# throwaway MariaDB 10.11, then per repetition, interleaved, three readers of exactly that part
# of the binlog:
#   binlog     mariadb-binlog --read-from-remote-server --verbose, from the position recorded
#              before the load to the one after it, into /dev/null (the reference)
#   file       cppcdc run into the file sink (write + fdatasync per batch, local_fs checkpoint)
#   null       cppcdc run into the stdout sink redirected to /dev/null (the file sink refuses
#              /dev/null: fdatasync on a character device fails with EINVAL)
# Prints the median rows/s, CPU seconds and peak RSS of each, and cppcdc's throughput against
# mariadb-binlog's (target: at least 1.0 for both cppcdc variants). After each file sink run,
# `dd` writes the same bytes past the page cache (disk_copy): about the time the disk alone
# needs for them, for comparison.
#
# Then the memory check: one transaction of T rows into bench.bench6_1tx, read by cppcdc into
# /dev/null (stdout sink); prints its peak RSS (VmHWM; target for 1,000,000 rows: at most
# 128 MB), next to mariadb-binlog reading the same transaction.
#
# cppcdc has no setting for a start position: a first start without a snapshot begins at the
# server's current GTID position. So before each load cppcdc runs once with a local_fs
# checkpoint until its first (idle, heartbeat) checkpoint records that position; every timed run
# then starts from a copy of that checkpoint. The script checks that this position is the
# binlog end recorded before the load (SHOW MASTER STATUS / @@gtid_binlog_pos).
#
# cppcdc's wall time runs from exec to the checkpoint recording all N events (its mtime), so it
# includes start-up and the last durable batch; mariadb-binlog's from exec to exit. CPU: user +
# system of the cppcdc process (/proc/PID/stat) read just before it is stopped, and of
# mariadb-binlog from GNU time; peak RSS: VmHWM, and GNU time's %M.
#
# Usage: bench/mariadb_run.sh [--rows N] [--repeat R] [--port P] [--tx-rows T] [--no-build]
#                            [--baseline BIN]
#   --rows N      rows of the throughput part (a multiple of 1000; default 1000000)
#   --repeat R    runs per reader, interleaved (each round in a rotated order); medians
#                 reported (default 3)
#   --port P      the throwaway server's port (default 33490; its data in
#                 /tmp/cppcdc-bench-maria-db, or $CPPCDC_BENCH_MARIA_DB_DIR)
#   --tx-rows T   rows of the one-transaction memory check (default: N; 0 skips it)
#   --baseline BIN  also time another cppcdc binary (e.g. a copy of main's build) into both
#                 sinks, interleaved with the others (readers base-file, base-null), so that
#                 a change is compared with its baseline within one run on a busy machine
# Work files: /tmp/cppcdc-bench-maria-work, or $CPPCDC_BENCH_MARIA_WORK (kept after a failure);
# the two variables let several people run the script on one machine at once.
# CPPCDC_BENCH_MARIA_KEEP=1 leaves the server running at the end, for profiling by hand (stop
# it with scripts/mariadb.sh stop DIR --purge).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
PORT=33490
DB_DIR=${CPPCDC_BENCH_MARIA_DB_DIR:-/tmp/cppcdc-bench-maria-db}
WORK=${CPPCDC_BENCH_MARIA_WORK:-/tmp/cppcdc-bench-maria-work}
rows=1000000
repeat=3
tx_rows=""
build=1
baseline=""

log() { printf '[maria-bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf '[maria-bench] ERROR: %s\n' "$*" >&2; exit 1; }

while (($#)); do
  a=$1
  shift
  case "$a" in
    --rows) rows=${1:?--rows N}; shift ;;
    --repeat) repeat=${1:?--repeat R}; shift ;;
    --port) PORT=${1:?--port P}; shift ;;
    --tx-rows) tx_rows=${1:?--tx-rows T}; shift ;;
    --no-build) build=0 ;;
    --baseline) baseline=${1:?--baseline BIN}; shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done
((rows > 0 && rows % 1000 == 0)) || die "--rows must be a positive multiple of 1000"
tx_rows=${tx_rows:-$rows}
((tx_rows >= 0)) || die "--tx-rows must not be negative"
command -v mariadb-binlog >/dev/null || die "mariadb-binlog not found (Debian: mariadb-client)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (Debian: time)"

CPPCDC=$BUILD/cppcdc
SINKWATCH=$BUILD/bench/cppcdc_bench_sinkwatch
if ((build)); then
  log "building (scripts/build.sh)"
  "$ROOT/scripts/build.sh" --target cppcdc --target cppcdc_bench_sinkwatch >/dev/null
fi
for b in "$CPPCDC" "$SINKWATCH" ${baseline:+"$baseline"}; do [[ -x $b ]] || die "$b is missing (drop --no-build)"; done
TICKS=$(getconf CLK_TCK)

# cppcdc runs start inside command substitutions (subshells): their pid goes to a file so that
# the cleanup here can stop one left behind by a failure.
cleanup() {
  local pid
  pid=$(cat "$WORK/cdc.pid" 2>/dev/null || true)
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  # CPPCDC_BENCH_MARIA_KEEP=1 leaves the server (and its loaded binlog) running for profiling
  # by hand, with the work files' cdc.toml and base checkpoints.
  [[ ${CPPCDC_BENCH_MARIA_KEEP:-0} == 1 ]] ||
    "$ROOT/scripts/mariadb.sh" stop "$DB_DIR" --purge >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$ROOT/scripts/mariadb.sh" stop "$DB_DIR" --purge >/dev/null 2>&1 || true
rm -rf -- "$WORK"
mkdir -p "$WORK"
log "starting MariaDB on 127.0.0.1:$PORT"
"$ROOT/scripts/mariadb.sh" start "$DB_DIR" "$PORT" >/dev/null
sql() { mariadb --no-defaults -h 127.0.0.1 -P "$PORT" -uroot -D bench "$@"; }
val() { sql -N -B -e "$1"; }
mariadb --no-defaults -h 127.0.0.1 -P "$PORT" -uroot -e "create database bench"
sql <<'SQL'
create table bench6 (id bigint primary key, name text not null, amount decimal(12,2) not null,
  created_at datetime(6) not null, qty int, active boolean);
create table bench6_1tx like bench6;
delimiter //
create procedure load_bench6(batches int)
begin
  declare i int default 0;
  while i < batches do
    -- autocommit: every statement is a transaction of 1,000 rows
    insert into bench6 (id, name, amount, created_at, qty, active)
      select i * 1000 + seq, md5(i * 1000 + seq), (i * 1000 + seq) * 1.25,
        timestamp '2024-01-01 00:00:00' + interval (i * 1000 + seq) * 1000 microsecond,
        (i * 1000 + seq) % 1000, (i * 1000 + seq) % 2 = 0
      from seq_1_to_1000;
    set i = i + 1;
  end while;
end//
delimiter ;
SQL

# The cppcdc configuration of one run: config_for ID TABLE STATE_DIR SINK(file PATH | null).
config_for() {
  printf '[source]\ntype = "mariadb"\nhost = "127.0.0.1"\nport = %s\nuser = "root"\n' "$PORT"
  printf 'tables = ["bench.%s"]\nsource_id = "%s"\nheartbeat_interval_ms = 200\n' "$2" "$1"
  printf '[source.snapshot]\nmode = "never"\n'
  if [[ $4 == file ]]; then
    printf '[sink]\ntype = "file"\npath = "%s"\n' "$5"
  else
    printf '[sink]\ntype = "stdout"\n'
  fi
  printf '[state.offset]\nbackend = "local_fs"\ndir = "%s"\n' "$3"
}

# Runs cppcdc once with no checkpoint until it checkpoints the server's current position, and
# keeps that checkpoint in $WORK/base-ID. Prints the checkpoint's offset (a GTID position).
base_state() { # id table
  local id=$1 dir=$WORK/base-$1
  mkdir -p "$dir/state"
  config_for "$id" "$2" "$dir/state" null >"$dir/cdc.toml"
  "$CPPCDC" run --config "$dir/cdc.toml" >/dev/null 2>"$dir/cppcdc.log" &
  local cdc_pid=$!
  echo "$cdc_pid" >"$WORK/cdc.pid"
  local ckpt=$dir/state/checkpoint-$id.ckpt
  for _ in $(seq 300); do
    [[ -s $ckpt ]] && grep -q '"offset":"' "$ckpt" && break
    kill -0 "$cdc_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$cdc_pid" 2>/dev/null || true
  wait "$cdc_pid" || true
  rm -f "$WORK/cdc.pid"
  [[ -s $ckpt ]] || { tail -n 20 "$dir/cppcdc.log" >&2; die "no first checkpoint for $id"; }
  grep -q '"committed_events":0,' "$ckpt" || die "the first checkpoint of $id holds events"
  sed 's/.*"offset":"\([^"]*\)".*/\1/' <"$ckpt" | tail -n 1
}

# The binlog range of the next load: records file and position (and GTID) now.
binlog_pos() { val "show master status" | awk '{ print $1, $2 }'; }

# mariadb-binlog over the range, into /dev/null; prints "wall_ms user_s sys_s peak_kb".
# FILES is the list of binlog files from START_FILE to END_FILE.
run_binlog() { # out start_file start_pos end_file end_pos
  local out=$1 files t0 t1
  files=$(val "show binary logs" | awk -v s="$2" -v e="$4" '$1 >= s && $1 <= e { print $1 }')
  t0=$(date +%s%N)
  # shellcheck disable=SC2086
  /usr/bin/time -f '%U %S %M' -o "$out.time" mariadb-binlog --no-defaults \
    --read-from-remote-server --host 127.0.0.1 --port "$PORT" --user root --verbose \
    --start-position="$3" --stop-position="$5" $files >/dev/null 2>"$out.err" ||
    { cat "$out.err" >&2; die "mariadb-binlog failed"; }
  t1=$(date +%s%N)
  echo "$(((t1 - t0) / 1000000)) $(tail -n 1 "$out.time")"
}

# One cppcdc run from a copy of base-ID until the checkpoint records WANT events; prints
# "wall_ms cpu_s peak_kb".
run_cdc() { # id table variant(file|null|base-file|base-null) rep want
  local id=$1 v=$3 want=$5 bin=$CPPCDC
  if [[ $v == base-* ]]; then
    bin=$baseline
    v=${v#base-}
  fi
  local dir=$WORK/run-$id-$3-$4
  mkdir -p "$dir/state"
  cp "$WORK/base-$id/state/checkpoint-$id.ckpt" "$dir/state/"
  config_for "$id" "$2" "$dir/state" "$v" "$dir/events.jsonl" >"$dir/cdc.toml"
  local t0 watch end_ns stat hwm
  t0=$(date +%s%N)
  if [[ $v == file ]]; then
    "$bin" run --config "$dir/cdc.toml" 2>"$dir/cppcdc.log" &
  else
    "$bin" run --config "$dir/cdc.toml" >/dev/null 2>"$dir/cppcdc.log" &
  fi
  local cdc_pid=$!
  echo "$cdc_pid" >"$WORK/cdc.pid"
  watch=$("$SINKWATCH" checkpoint --file "$dir/state/checkpoint-$id.ckpt" --events "$want" \
    --stall 300) || { tail -n 20 "$dir/cppcdc.log" >&2; die "$id/$v did not deliver $want events"; }
  # Fields 14 and 15 of /proc/PID/stat (counted after the command name's closing parenthesis).
  stat=$(sed 's/.*) //' "/proc/$cdc_pid/stat" | awk '{ print $12 + $13 }')
  hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$cdc_pid/status")
  kill -TERM "$cdc_pid" 2>/dev/null || true
  wait "$cdc_pid" || true
  rm -f "$WORK/cdc.pid"
  local copy_ms=-
  if [[ $v == file ]]; then
    local lines
    lines=$(wc -l <"$dir/events.jsonl")
    ((lines == want)) || die "$id/$v: the sink has $lines lines, expected $want"
    copy_ms=$(disk_copy "$dir/events.jsonl")
    rm -f "$dir/events.jsonl"
  fi
  grep -q '"committed_events":'"$want"',' "$dir/state/checkpoint-$id.ckpt" ||
    die "$id/$v: the checkpoint holds more than $want events"
  end_ns=$(sed 's/.*"checkpoint_mtime_ns":\([0-9]*\).*/\1/' <<<"$watch")
  echo "$(((end_ns - t0) / 1000000)) $(awk -v t="$stat" -v h="$TICKS" 'BEGIN { print t / h }') $hwm $copy_ms"
}

# The disk's share of a file sink run: the time `dd` takes to write the bytes the run wrote (read
# from the page cache) to a new file beside it, past the page cache (oflag=direct, 4 MiB
# blocks), then fdatasync. Prints milliseconds. That is about the least this disk needs for
# those bytes; the file sink also syncs once per batch, and the first write after a large file
# was deleted is often several times slower on this VM (both show in the spread of runs).
disk_copy() { # file
  local t0 t1
  t0=$(date +%s%N)
  dd if="$1" of="$1.copy" bs=4M oflag=direct conv=fdatasync status=none || die "dd could not copy $1"
  t1=$(date +%s%N)
  rm -f "$1.copy"
  echo $(((t1 - t0) / 1000000))
}

median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# --- throughput ------------------------------------------------------------------------------
gtid0=$(base_state bench bench6)
pos=$(binlog_pos)
read -r start_file start_pos <<<"$pos"
[[ $(val "select @@gtid_binlog_pos") == "$gtid0" ]] ||
  die "cppcdc's start position $gtid0 is not the binlog's end $(val 'select @@gtid_binlog_pos')"
log "loading $rows rows (1,000 per transaction) from $start_file:$start_pos (GTID $gtid0)"
sql -e "call load_bench6($((rows / 1000)))"
pos=$(binlog_pos)
read -r end_file end_pos <<<"$pos"
[[ $(val "select count(*) from bench6") == "$rows" ]] || die "the load did not insert $rows rows"
log "binlog range $start_file:$start_pos .. $end_file:$end_pos ($(val "select @@gtid_binlog_pos"))"

# The reference's output, counted once outside the timed runs.
files=$(val "show binary logs" | awk -v s="$start_file" -v e="$end_file" '$1 >= s && $1 <= e { print $1 }')
# shellcheck disable=SC2086
got=$(mariadb-binlog --no-defaults --read-from-remote-server --host 127.0.0.1 --port "$PORT" \
  --user root --verbose --start-position="$start_pos" --stop-position="$end_pos" $files |
  grep -c '^### INSERT INTO `bench`.`bench6`$' || true)
((got == rows)) || die "mariadb-binlog decoded $got inserts over the range, expected $rows"

readers=(binlog file null)
[[ -z $baseline ]] || readers+=(base-file base-null)
declare -A wall cpu rss disk
for ((r = 1; r <= repeat; r++)); do
  # Each round starts one reader further on, so that every reader runs in every place of the
  # round as often as the others: a run right after a file sink run (whose 500 MB output was
  # just deleted) is slowed by the disk, and a fixed order gave that place to one reader only.
  order=()
  for ((i = 0; i < ${#readers[@]}; i++)); do
    order+=("${readers[(i + r - 1) % ${#readers[@]}]}")
  done
  for v in "${order[@]}"; do
    if [[ $v == binlog ]]; then
      out=$(run_binlog "$WORK/binlog-$r" "$start_file" "$start_pos" "$end_file" "$end_pos")
      read -r w u s k <<<"$out"
      c=$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')
    else
      out=$(run_cdc bench bench6 "$v" "$r" "$rows")
      read -r w c k d <<<"$out"
      [[ $d == - ]] || disk[$v]+="$d "
    fi
    wall[$v]+="$w "
    cpu[$v]+="$c "
    rss[$v]+="$k "
    log "run $r, $v: $w ms, $c CPU s, peak RSS $((k / 1024)) MB"
  done
done

printf '\n%d rows in transactions of 1,000, %d run(s) per reader, medians:\n' "$rows" "$repeat"
printf '  %-36s %9s %10s %7s %8s %9s\n' reader "wall ms" "rows/s" "CPU s" "RSS MB" "/binlog"
# shellcheck disable=SC2086
wb=$(median ${wall[binlog]})
declare -A label=([binlog]="mariadb-binlog --verbose > /dev/null" [file]="cppcdc -> file sink"
  [null]="cppcdc -> stdout sink > /dev/null" [base-file]="baseline -> file sink"
  [base-null]="baseline -> stdout sink > /dev/null")
for v in "${readers[@]}"; do
  # shellcheck disable=SC2086
  w=$(median ${wall[$v]})
  # shellcheck disable=SC2086
  printf '  %-36s %9.0f %10.0f %7.2f %8.1f %9.3f\n' "${label[$v]}" "$w" \
    "$(awk -v n="$rows" -v t="$w" 'BEGIN { print n / (t / 1000) }')" "$(median ${cpu[$v]})" \
    "$(awk -v k="$(median ${rss[$v]})" 'BEGIN { print k / 1024 }')" \
    "$(awk -v a="$wb" -v b="$w" 'BEGIN { print a / b }')"
done
printf '  (target: cppcdc at least 1.0 of mariadb-binlog'"'"'s rows/s)\n'
for v in file base-file; do
  [[ -n ${disk[$v]:-} ]] || continue
  # shellcheck disable=SC2086
  d=$(median ${disk[$v]})
  printf '  %-36s %9.0f %10.0f %7s %8s %9.3f\n' "dd: $v's output, O_DIRECT" "$d" \
    "$(awk -v n="$rows" -v t="$d" 'BEGIN { print n / (t / 1000) }')" - - \
    "$(awk -v a="$wb" -v b="$d" 'BEGIN { print a / b }')"
  log "$v: dd copies of its output took ${disk[$v]}ms (the disk alone)"
done

# --- memory: one transaction of T rows -------------------------------------------------------
((tx_rows > 0)) || exit 0
gtid1=$(base_state bench1tx bench6_1tx)
pos=$(binlog_pos)
read -r start_file start_pos <<<"$pos"
[[ $(val "select @@gtid_binlog_pos") == "$gtid1" ]] || die "cppcdc's start position moved"
log "loading $tx_rows rows in one transaction"
sql -e "insert into bench6_1tx (id, name, amount, created_at, qty, active)
  select seq, md5(seq), seq * 1.25, timestamp '2024-01-01 00:00:00' + interval seq * 1000
    microsecond, seq % 1000, seq % 2 = 0 from seq_1_to_$tx_rows"
pos=$(binlog_pos)
read -r end_file end_pos <<<"$pos"
out=$(run_binlog "$WORK/binlog-1tx" "$start_file" "$start_pos" "$end_file" "$end_pos")
read -r bw bu bs bk <<<"$out"
out=$(run_cdc bench1tx bench6_1tx null 1 "$tx_rows")
read -r cw cc ck _ <<<"$out"
printf '\none transaction of %d rows:\n' "$tx_rows"
printf '  %-36s %9s %10s %7s %8s\n' reader "wall ms" "rows/s" "CPU s" "RSS MB"
printf '  %-36s %9.0f %10.0f %7.2f %8.1f\n' "mariadb-binlog --verbose > /dev/null" "$bw" \
  "$(awk -v n="$tx_rows" -v t="$bw" 'BEGIN { print n / (t / 1000) }')" \
  "$(awk -v u="$bu" -v s="$bs" 'BEGIN { print u + s }')" "$(awk -v k="$bk" 'BEGIN { print k / 1024 }')"
printf '  %-36s %9.0f %10.0f %7.2f %8.1f\n' "cppcdc -> stdout sink > /dev/null" "$cw" \
  "$(awk -v n="$tx_rows" -v t="$cw" 'BEGIN { print n / (t / 1000) }')" "$cc" \
  "$(awk -v k="$ck" 'BEGIN { print k / 1024 }')"
printf '  cppcdc peak RSS %.1f MB (target for 1,000,000 rows: at most 128 MB): %s\n' \
  "$(awk -v k="$ck" 'BEGIN { print k / 1024 }')" \
  "$( ((ck <= 128 * 1024)) && echo met || echo MISSED)"
