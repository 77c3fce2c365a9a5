#!/usr/bin/env bash
# The Kafka sink run (issue 15, item 6). Workload (a) of bench/run.sh (N inserts into bench6,
# 1,000 rows per transaction) is delivered by `cppcdc run` in batches of 10,000 events
# (max_buffer_size) three ways per repetition, and by Debezium as the peer, interleaved, each
# from a slot made before the load:
#   file   the file sink (local_fs checkpoint): PostgreSQL -> file, the reference pipeline
#   kafka  the Kafka sink, idempotent producer, at_least_once (local_fs checkpoint)
#   eo     the Kafka sink, delivery_mode = "transactional", delivery_contract =
#          "effectively_once", checkpoint in a compacted topic (kafka_topic): one Kafka
#          transaction per batch, the checkpoint record inside it
#   avro   (with --avro) as kafka, with codec = "avro" (bare Avro records of the envelope
#          schema, no registry): the Avro codec end to end against the JSON codec's kafka
#          variant (goal, issue 18: at least 0.8 of its events/s)
#   dbz    the peer: Debezium 3.6.1's PostgreSQL connector (pgoutput, streaming only) on a Kafka
#          Connect 4.3 standalone worker (the version Debezium 3.6.1 is built for), JSON
#          without schemas, producer tuned like cppcdc's (bench/debezium/pom.xml names the
#          jars; Maven fetches them once)
# Each cppcdc run is timed from exec until its admin endpoint's cppcdc_events_committed_total
# reaches N (polled every 50 ms); the Debezium worker from exec until its topic's end offset
# reaches N (bench/kafka_topic_wait.py, polled every 50 ms). Just before each is stopped, its
# CPU time (utime + stime, /proc/PID/stat) and peak RSS (VmHWM) are read. The ceiling is
# Kafka's own kafka-producer-perf-test, run in the same repetition against the same broker: N
# records whose size is the mean key + value size cppcdc produced, acks=all, idempotence on,
# the same linger and batch size, no compression, into a topic with as many partitions (one).
# Prints events/s, CPU s and peak RSS of each, the ratios kafka / ceiling (target: at least
# 0.7), eo / ceiling (target: at least 0.5) and kafka / file, and cppcdc against Debezium
# (goals: at least 3x its events/s, at most a quarter of its peak RSS).
#
# cppcdc's figure is end to end (decoding the WAL included), the ceiling is the producer alone:
# the ratio understates the sink's own share.
# So each repetition also times the sink alone, like for like with the ceiling:
# cppcdc_bench_kafka_sink writes N prebuilt bench6 events through the Kafka sink in batches of
# 10,000, each flushed (idempotent) or committed (transactional), right after the ceiling's run.
#
# Usage: bench/kafka_run.sh [--rows N] [--repeat R] [--port P] [--kafka-port K] [--admin-port A]
#                           [--no-debezium] [--avro] [--no-build]
#   --rows N        rows (a multiple of 1000; default 1000000)
#   --repeat R      repetitions, medians reported (default 3)
#   --port P        the throwaway PostgreSQL's port (default 55487; /tmp/cppcdc-bench-kafka-pg)
#   --kafka-port K  the throwaway broker's port (default 19500, controller K+1;
#                   /tmp/cppcdc-bench-kafka)
#   --admin-port A  first admin port (default 19600; one per run, the Connect worker's REST
#                   listener included)
#   --no-debezium   leave the dbz variant out (no Maven, no JVM besides the broker's)
#   --avro          add the avro variant (the Avro codec; compared with kafka)
# Environment:
#   DEBEZIUM_CACHE      where the worker's jars are kept (default ~/.cache/cppcdc/debezium)
#   DEBEZIUM_HEAP_OPTS  the worker JVM's heap (default -Xms256M -Xmx2G, what Kafka's
#                       connect-standalone.sh starts it with; the other JVM options are those
#                       of its kafka-run-class.sh)
# Work files: /tmp/cppcdc-bench-kafka-work (kept after a failure).
# Needs /usr/bin/python3 with confluent_kafka (Debian's python3-confluent-kafka) for dbz.
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
debezium=1
avro=0
BATCH=10000
DBZ_CACHE=${DEBEZIUM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cppcdc/debezium}
DBZ_HEAP=${DEBEZIUM_HEAP_OPTS:--Xms256M -Xmx2G}
# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS.
DBZ_JVM="-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true"
PY=/usr/bin/python3
CLK_TCK=$(getconf CLK_TCK)

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
    --no-debezium) debezium=0 ;;
    --avro) avro=1 ;;
    --no-build) build=0 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done
((rows % 1000 == 0)) || die "--rows must be a multiple of 1000"

CPPCDC=$BUILD/cppcdc
SINKBENCH=$BUILD/bench/cppcdc_bench_kafka_sink
if ((build)); then
  log "building (scripts/build.sh)"
  "$ROOT/scripts/build.sh" --target cppcdc --target cppcdc_bench_kafka_sink >/dev/null
fi
for b in "$CPPCDC" "$SINKBENCH"; do [[ -x $b ]] || die "$b is missing (drop --no-build)"; done

# The Debezium worker's jars, fetched by Maven on the first use (scripts/debezium-jars.sh),
# offline after.
fetch_debezium() {
  DEBEZIUM_CACHE=$DBZ_CACHE "$ROOT/scripts/debezium-jars.sh" --fetch ||
    die "Maven could not fetch the Debezium jars (see above)"
}

variants=(file kafka eo)
((avro)) && variants+=(avro)
if ((debezium)); then
  variants+=(dbz)
  "$PY" -c 'import confluent_kafka' 2>/dev/null ||
    die "$PY has no confluent_kafka (Debian's python3-confluent-kafka); or use --no-debezium"
  DBZ_LIBS=$(fetch_debezium)
fi

# The process a run started and has not stopped yet, in a file: the runs are in command
# substitutions (subshells), whose variables the EXIT trap would not see.
RUNNING=$WORK/running.pid
cleanup() {
  local pid
  pid=$(cat "$RUNNING" 2>/dev/null || true)
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" || true; fi
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

# CPU seconds (user + system, all threads) and peak RSS in kB of a running process.
cpu_of() {
  sed 's/.*) //' "/proc/$1/stat" | awk -v hz="$CLK_TCK" '{ printf "%.2f\n", ($12 + $13) / hz }'
}
rss_of() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

# Stops a process a run started: TERM, then KILL after 30 s.
stop_proc() { # pid
  local i
  kill -TERM "$1" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  rm -f "$RUNNING"
}

# Bytes of a topic's partition 0 on the broker (record batches, headers and control records).
topic_bytes() { # topic
  cat "$K_DIR/data/$1-0/"*.log 2>/dev/null | wc -c
}

# One cppcdc delivery. Prints "wall_ms first_ms cpu_s peak_rss_kb bytes": the wall time from
# exec until every row is committed, the time until the first commit, the CPU time and peak RSS
# just before it is stopped, and the bytes of its topic on the broker (0 for the file sink).
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
      [[ $v == avro ]] && printf 'codec = "avro"\n'
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
  local t0 t1 tf="" n="" pid
  t0=$(date +%s%N)
  "$CPPCDC" run --config "$dir/cdc.toml" 2>"$dir/cppcdc.log" &
  pid=$!
  echo "$pid" >"$RUNNING"
  local last_move=$SECONDS prev=""
  while :; do
    n=$(committed "$port")
    if [[ -z $tf && -n $n ]] && ((n > 0)); then tf=$(date +%s%N); fi
    if [[ -n $n ]] && ((n >= rows)); then break; fi
    if [[ $n != "$prev" ]]; then prev=$n last_move=$SECONDS; fi
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "$dir/cppcdc.log" >&2; die "$slot exited"; }
    ((SECONDS - last_move < 120)) ||
      { tail -n 20 "$dir/cppcdc.log" >&2; die "$slot stalled at ${n:-0}"; }
    sleep 0.05
  done
  t1=$(date +%s%N)
  local cpu rss bytes=0
  cpu=$(cpu_of "$pid")
  rss=$(rss_of "$pid")
  stop_proc "$pid"
  if [[ $v == file ]]; then
    local lines
    lines=$(wc -l <"$dir/events.jsonl")
    ((lines == rows)) || die "$slot: the sink has $lines lines, expected $rows"
    # Mean value size of what the Kafka sink sends (the same envelope), for the ceiling.
    awk '{ s += length($0) } END { printf "%d\n", s / NR }' "$dir/events.jsonl" >"$WORK/value_bytes"
    rm -f "$dir/events.jsonl"
  else
    bytes=$(topic_bytes "$slot")
  fi
  echo "$(((t1 - t0) / 1000000)) $(((tf - t0) / 1000000)) $cpu $rss $bytes"
}

# One Debezium delivery, on a Kafka Connect standalone worker; prints what run_one prints.
run_dbz() { # rep rest_port
  local r=$1 port=$2 slot="k_dbz_$1"
  local dir=$WORK/$slot topic="k_dbz_$1.public.bench6"
  mkdir -p "$dir"
  cat >"$dir/worker.properties" <<EOF
bootstrap.servers=$BOOT
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=false
value.converter.schemas.enable=false
offset.storage.file.filename=$dir/connect.offsets
offset.flush.interval.ms=10000
listeners=http://127.0.0.1:$port
# Every plugin on the class path has a ServiceLoader manifest: the worker's own advice, and it
# skips a reflective scan of every jar (5 s of start-up here).
plugin.discovery=service_load
# The producer as cppcdc's (librdkafka's defaults of linger and batch size; acks = all with an
# idempotent producer, no compression).
producer.acks=all
producer.enable.idempotence=true
producer.linger.ms=5
producer.batch.size=1000000
producer.compression.type=none
EOF
  cat >"$dir/connector.properties" <<EOF
name=$slot
connector.class=io.debezium.connector.postgresql.PostgresConnector
tasks.max=1
database.hostname=127.0.0.1
database.port=$PORT
database.user=postgres
database.dbname=postgres
database.sslmode=disable
topic.prefix=$slot
plugin.name=pgoutput
slot.name=$slot
publication.name=bench_pub
publication.autocreate.mode=disabled
snapshot.mode=no_data
table.include.list=public.bench6
max.batch.size=$BATCH
max.queue.size=$((4 * BATCH))
poll.interval.ms=50
topic.creation.default.partitions=1
topic.creation.default.replication.factor=1
EOF
  printf '%s\n' 'rootLogger.level=INFO' 'rootLogger.appenderRef.file.ref=file' \
    'appender.file.type=File' 'appender.file.name=file' "appender.file.fileName=$dir/connect.log" \
    'appender.file.layout.type=PatternLayout' 'appender.file.layout.pattern=[%d] %p %m (%c)%n' \
    >"$dir/log4j2.properties"
  local t0 pid out
  t0=$(date +%s%N)
  # shellcheck disable=SC2086  # DBZ_HEAP and DBZ_JVM hold several options
  java $DBZ_HEAP $DBZ_JVM -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$DBZ_LIBS/*" \
    org.apache.kafka.connect.cli.ConnectStandalone "$dir/worker.properties" \
    "$dir/connector.properties" >"$dir/stdout.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$RUNNING"
  if ! out=$("$PY" "$ROOT/bench/kafka_topic_wait.py" --bootstrap "$BOOT" --topic "$topic" \
      --count "$rows" --pid "$pid" --interval 0.05 --stall 120); then
    grep -E ' (ERROR|WARN) ' "$dir/connect.log" | tail -n 20 >&2
    tail -n 5 "$dir/stdout.log" >&2
    stop_proc "$pid"
    die "$slot did not deliver $rows records (logs: $dir)"
  fi
  local cpu rss
  cpu=$(cpu_of "$pid")
  rss=$(rss_of "$pid")
  stop_proc "$pid"
  local first fin total key
  read -r first fin total key <<<"$out"
  ((total == rows)) || die "$slot: $topic holds $total records, expected $rows"
  [[ $key == "{\"id\":$rows}" ]] ||
    die "$slot: the last record's key is $key, expected {\"id\":$rows}"
  echo "$(((fin - t0) / 1000000)) $(((first - t0) / 1000000)) $cpu $rss $(topic_bytes "$topic")"
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

declare -A times firsts cpus rsss bytes sink_eps
ceilings=""
port=$ADMIN
for ((r = 1; r <= repeat; r++)); do
  for v in "${variants[@]}"; do
    if [[ $v == dbz ]]; then
      res=$(run_dbz "$r" "$port")
    else
      res=$(run_one "$v" "$r" "$port")
    fi
    port=$((port + 1))
    read -r t f u m b <<<"$res"
    times[$v]+="$t " firsts[$v]+="$f " cpus[$v]+="$u " rsss[$v]+="$m " bytes[$v]+="$b "
    e=$(awk -v n="$rows" -v t="$t" 'BEGIN { printf "%.0f", n / (t / 1000) }')
    log "run $r, $v: $t ms ($e events/s), first after $f ms, CPU $u s, peak RSS $((m / 1024)) MB"
  done
  c=$(ceiling_one "$r")
  [[ -n $c ]] || die "kafka-producer-perf-test printed no records/sec"
  ceilings+="$c "
  log "run $r, kafka-producer-perf-test: $c records/s of $(($(cat "$WORK/value_bytes") + 14)) bytes"
  # The sink alone on prebuilt events (cppcdc_bench_kafka_sink), right after the ceiling.
  for mode in idempotent transactional; do
    out=$("$SINKBENCH" "$BOOT" "sinkbench_${mode}_$r" "$rows" "$BATCH" "$mode") ||
      die "cppcdc_bench_kafka_sink ($mode) failed: $out"
    sink_eps[$mode]+="$(awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "events/s,") { print $i; exit } }' <<<"$out") "
    log "run $r, $out"
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# shellcheck disable=SC2086
cm=$(median $ceilings)
# shellcheck disable=SC2086
mf=$(median ${times[file]})
declare -A eps rss_mb
# Bytes per event on the broker (median), "-" for the file sink.
per_event() { # variant
  # shellcheck disable=SC2086
  if [[ $1 == file ]]; then echo -; else
    awk -v b="$(median ${bytes[$1]})" -v n="$rows" 'BEGIN { printf "%.0f", b / n }'
  fi
}
printf '\n%d rows in batches of %d, %d run(s) each, medians:\n' "$rows" "$BATCH" "$repeat"
printf '  kafka-producer-perf-test (ceiling): %.0f records/s\n' "$cm"
printf '  %-5s %9s %9s %9s %9s %7s %8s %8s %8s %8s\n' variant wall_ms first_ms events/s \
  after_1st cpu_s rss_MB B/event ceiling file
for v in "${variants[@]}"; do
  # shellcheck disable=SC2086
  m=$(median ${times[$v]})
  eps[$v]=$(awk -v n="$rows" -v t="$m" 'BEGIN { print n / (t / 1000) }')
  # shellcheck disable=SC2086
  rss_mb[$v]=$(awk -v k="$(median ${rsss[$v]})" 'BEGIN { print k / 1024 }')
  # shellcheck disable=SC2086
  mfirst=$(median ${firsts[$v]})
  # shellcheck disable=SC2086
  printf '  %-5s %9.0f %9.0f %9.0f %9.0f %7.2f %8.1f %8s %8.3f %8.3f\n' "$v" "$m" "$mfirst" \
    "${eps[$v]}" "$(awk -v n="$rows" -v t="$m" -v f="$mfirst" 'BEGIN { print n * 1000 / (t - f) }')" \
    "$(median ${cpus[$v]})" "${rss_mb[$v]}" \
    "$(per_event "$v")" \
    "$(awk -v e="${eps[$v]}" -v c="$cm" 'BEGIN { print e / c }')" \
    "$(awk -v a="$mf" -v b="$m" 'BEGIN { print a / b }')"
done
printf '  (after_1st: N / (wall - first), the rate once started; ceiling, file: events/s\n'
printf '   divided by the ceiling'"'"'s and by the file sink'"'"'s;\n'
printf '   targets: kafka at least 0.7 of the ceiling, eo at least 0.5)\n'
for mode in idempotent transactional; do
  # shellcheck disable=SC2086
  se=$(median ${sink_eps[$mode]})
  printf '  the sink alone, %-13s %9.0f events/s  vs ceiling: %.3f (goal: %s)\n' "$mode" "$se" \
    "$(awk -v e="$se" -v c="$cm" 'BEGIN { print e / c }')" \
    "$([[ $mode == idempotent ]] && echo "at least 0.7" || echo "at least 0.5")"
done
if ((avro)); then
  printf '  cppcdc avro / kafka (JSON codec): events/s %.3f (goal: at least 0.8), bytes per event %s / %s\n' \
    "$(awk -v a="${eps[avro]}" -v b="${eps[kafka]}" 'BEGIN { print a / b }')" \
    "$(per_event avro)" "$(per_event kafka)"
fi
if ((debezium)); then
  for v in kafka eo; do
    printf '  cppcdc %-5s / Debezium: events/s %.2fx (goal: at least 3), %s %.3f %s\n' "$v" \
      "$(awk -v a="${eps[$v]}" -v b="${eps[dbz]}" 'BEGIN { print a / b }')" \
      "peak RSS" "$(awk -v a="${rss_mb[$v]}" -v b="${rss_mb[dbz]}" 'BEGIN { print a / b }')" \
      "(goal: at most 0.25)"
  done
fi
