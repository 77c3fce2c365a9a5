#!/usr/bin/env bash
# Throwaway Apache Kafka broker (single node, KRaft: broker and controller in one JVM) for tests,
# benchmarks and the demo, on 127.0.0.1, from the jars scripts/kafka/pom.xml names.
#
# Usage:
#   scripts/kafka.sh start DIR PORT [CONTROLLER_PORT]  fetch the jars (first time), format the
#                                                      storage (first time) and start; waits until
#                                                      the broker serves, prints the bootstrap
#                                                      address (127.0.0.1:PORT) on stdout
#   scripts/kafka.sh stop DIR [--keep]                 stop the broker and delete DIR (--keep: keep
#                                                      DIR, a later start reuses its data)
#   scripts/kafka.sh status DIR                        exit 0 if a broker is running in DIR
#   scripts/kafka.sh fetch                             only fetch the jars; prints their directory
#   scripts/kafka.sh run TOOL [ARGS...]                run one of Kafka's tools from the same jars:
#                                                      console-consumer, console-producer,
#                                                      producer-perf-test, topics, acls, or a
#                                                      class name
#
# The controller listens on CONTROLLER_PORT (default PORT + 1). DIR holds server.properties,
# the data (DIR/data), the broker's log (DIR/server.log) and its pid (DIR/kafka.pid).
# Environment:
#   KAFKA_CACHE          where the jars are kept (default ~/.cache/cppcdc/kafka); filled by Maven
#                        on the first use and used offline afterwards
#   KAFKA_HEAP_OPTS      the JVM's heap (default -Xms128m -Xmx512m)
#   KAFKA_START_TIMEOUT  seconds `start` waits for the broker (default 180)
#   KAFKA_BROKER_PROPS   extra server.properties lines, appended as they are (e.g.
#                        "auto.create.topics.enable=false")
# Durability is that of a test broker: one replica, no fsync. Never put data you care about in it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
POM=$ROOT/scripts/kafka/pom.xml
CACHE=${KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cppcdc/kafka}
HEAP=${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m}
START_TIMEOUT=${KAFKA_START_TIMEOUT:-180}
MARKER=.cppcdc-kafka  # marks a directory this script created; `stop` deletes only such a one

SCRIPT_TAG=kafka.sh
# shellcheck source=lib/server-script.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/server-script.sh"

# --- the jars -----------------------------------------------------------------------------------

# The jar directory for the current pom: $CACHE/<first 16 hex digits of the pom's sha256>/libs.
libs_dir() {
  local sum
  sum=$(sha256sum "$POM" | cut -c1-16)
  printf '%s/%s/libs\n' "$CACHE" "$sum"
}

# Fetches the jars once; later calls find them and touch no network. Concurrent callers wait
# for each other (flock). Maven tries its local repository (~/.m2) offline first.
fetch_jars() {
  local libs
  libs=$(libs_dir)
  [[ -f "$libs/.complete" ]] && { printf '%s\n' "$libs"; return 0; }
  command -v mvn >/dev/null || die "mvn not found; run scripts/install-deps.sh (Debian's maven)"
  command -v java >/dev/null ||
    die "java not found; run scripts/install-deps.sh (openjdk-17-jre-headless)"
  mkdir -p "$CACHE"
  local top
  top=$(dirname "$libs")
  mkdir -p "$top"
  exec 8>"$top/.lock"
  flock 8
  if [[ ! -f "$libs/.complete" ]]; then
    local tmp=$top/libs.tmp.$$
    rm -rf -- "$tmp"
    log "fetching the Kafka jars named in scripts/kafka/pom.xml into $libs (once)"
    local args=(-q -B -f "$POM" dependency:copy-dependencies -DoutputDirectory="$tmp"
                -DincludeScope=runtime)
    if ! mvn -o "${args[@]}" >"$top/mvn.log" 2>&1; then
      if ! mvn "${args[@]}" >"$top/mvn.log" 2>&1; then
        tail -n 30 "$top/mvn.log" >&2
        rm -rf -- "$tmp"
        die "Maven could not fetch the jars (log: $top/mvn.log);" \
          "Maven Central must be reachable once"
      fi
    fi
    ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1 || die "no kafka_2.13 jar in $tmp after Maven ran"
    touch "$tmp/.complete"
    rm -rf -- "$libs"
    mv "$tmp" "$libs"
  fi
  exec 8>&-
  printf '%s\n' "$libs"
}

java_cmd() { # libs jvm-args... class args...
  local libs=$1
  shift
  # shellcheck disable=SC2086  # HEAP holds several options
  java $HEAP -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true -cp "$libs/*" "$@"
}

# --- the broker ---------------------------------------------------------------------------------

pid_of() {
  # Only our JVM: its command line names this DIR's properties file.
  recorded_pid "$DIR/kafka.pid" "$DIR/server.properties"
}

is_running() {
  [[ -n "$(pid_of)" ]]
}

write_properties() {
  cat >"$DIR/server.properties" <<EOF
# Written by scripts/kafka.sh on every start; edits are overwritten.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$DIR/data
# One node: every internal topic has one replica, and few partitions (they are created on first
# use, which is then quick).
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.partitions=1
# ACLs are enforced, but everything no ACL denies is allowed: tests take rights away with
# "kafka.sh run acls --add --deny-principal User:ANONYMOUS ..." (no backquotes in this here-doc).
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=true
# A small machine: few threads.
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
EOF
  if [[ -n "${KAFKA_BROKER_PROPS:-}" ]]; then
    printf '# KAFKA_BROKER_PROPS\n%s\n' "$KAFKA_BROKER_PROPS" >>"$DIR/server.properties"
  fi
  cat >"$DIR/log4j2.properties" <<EOF
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$DIR/server.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.kafka_request.name=kafka.request.logger
logger.kafka_request.level=WARN
EOF
}

# A cluster id: 16 random bytes in URL-safe base64 without padding (what the storage tool's
# random-uuid prints), made here to save a JVM start. Like Kafka's own, never one that starts
# with '-': the storage tool would take it for an option.
cluster_id() {
  local id=-
  while [[ "$id" == -* ]]; do
    id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
  done
  printf '%s\n' "$id"
}

cmd_start() {
  case $# in
    2) DIR=$1; PORT=$2; CPORT=$((PORT + 1)) ;;
    3) DIR=$1; PORT=$2; CPORT=$3 ;;
    *) usage ;;
  esac
  valid_port "$PORT" || die "PORT must be a number from 1024 to 65535, got '$PORT'"
  valid_port "$CPORT" || die "CONTROLLER_PORT must be a number from 1024 to 65535, got '$CPORT'"
  ((PORT != CPORT)) || die "PORT and CONTROLLER_PORT must differ"
  check_dir_arg

  if is_running; then
    if grep -qx "listeners=PLAINTEXT://127.0.0.1:$PORT,.*" "$DIR/server.properties"; then
      log "reusing the broker already running in $DIR on port $PORT"
      printf '127.0.0.1:%s\n' "$PORT"
      return 0
    fi
    die "a broker is already running in $DIR on another port; stop it first: $0 stop $DIR"
  fi
  local p
  for p in "$PORT" "$CPORT"; do
    if port_open "$p"; then die "port $p on 127.0.0.1 is already in use"; fi
  done
  if [[ -d "$DIR" && ! -e "$DIR/$MARKER" && -n "$(ls -A "$DIR")" ]]; then
    die "$DIR exists and was not made by kafka.sh (no $MARKER file); remove it or pick another DIR"
  fi

  local libs
  libs=$(fetch_jars)
  mkdir -p "$DIR"
  touch "$DIR/$MARKER"
  write_properties

  if [[ ! -f "$DIR/data/meta.properties" ]]; then
    log "formatting the storage in $DIR/data"
    # A short-lived JVM: the quick (C1) compiler alone and the serial collector start faster.
    if ! (HEAP="-Xms64m -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC" \
          java_cmd "$libs" -Dlog4j2.configurationFile="$DIR/log4j2.properties" \
            kafka.tools.StorageTool format -t "$(cluster_id)" -c "$DIR/server.properties" \
            >"$DIR/format.log" 2>&1); then
      cat "$DIR/format.log" >&2
      die "formatting the storage failed (log: $DIR/format.log)"
    fi
  fi

  local jar
  jar=$(basename "$(ls "$libs"/kafka_2.13-*.jar)" .jar)
  log "starting Kafka ($jar) in $DIR on 127.0.0.1:$PORT (controller $CPORT)"
  : >"$DIR/stdout.log"
  (
    cd "$DIR"
    # setsid: the broker outlives this script, in a session of its own (no terminal signals).
    # shellcheck disable=SC2086  # HEAP holds several options
    setsid java $HEAP -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true -cp "$libs/*" \
      -Dlog4j2.configurationFile="$DIR/log4j2.properties" -Dkafka.logs.dir="$DIR" \
      kafka.Kafka "$DIR/server.properties" >>"$DIR/stdout.log" 2>&1 </dev/null &
    printf '%s\n' "$!" >"$DIR/kafka.pid"
  )
  local pid
  pid=$(cat "$DIR/kafka.pid")
  local waited=0
  # Ready: the broker logs that it started (after the controller elected itself and the broker
  # was unfenced) and accepts connections.
  until grep -q "Kafka Server started" "$DIR/server.log" 2>/dev/null && port_open "$PORT"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$DIR/stdout.log" "$DIR/server.log" >&2 2>/dev/null || true
      die "the broker exited during start (logs: $DIR/server.log, $DIR/stdout.log)"
    fi
    if ((waited >= START_TIMEOUT * 4)); then
      tail -n 30 "$DIR/server.log" >&2 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
      die "the broker did not start within ${START_TIMEOUT}s (log: $DIR/server.log)"
    fi
    sleep 0.25
    waited=$((waited + 1))
  done
  log "ready after $((waited / 4)).$(((waited % 4) * 25))s of waiting"
  printf '127.0.0.1:%s\n' "$PORT"
}

cmd_stop() {
  local keep=0
  local args=()
  local a
  for a in "$@"; do
    case "$a" in
      --keep) keep=1 ;;
      -*) usage ;;
      *) args+=("$a") ;;
    esac
  done
  ((${#args[@]} == 1)) || usage
  DIR=${args[0]}
  check_dir_arg
  if [[ ! -d "$DIR" ]]; then
    log "$DIR does not exist; nothing to stop"
    return 0
  fi
  [[ -e "$DIR/$MARKER" ]] || die "$DIR was not made by kafka.sh (no $MARKER file); not touching it"
  local pid
  pid=$(pid_of)
  if [[ -n "$pid" ]]; then
    if ((keep)); then
      # A clean shutdown, so that the next start recovers nothing.
      log "stopping the broker in $DIR (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      local i
      for ((i = 0; i < 240; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
      done
    fi
    if kill -0 "$pid" 2>/dev/null; then
      # The data is deleted next (or the clean stop took a minute): no need to wait for it.
      kill -KILL "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    fi
    log "stopped the broker in $DIR"
  else
    log "no broker running in $DIR"
  fi
  rm -f "$DIR/kafka.pid"
  if ((!keep)); then
    rm -rf -- "$DIR"
    log "deleted $DIR"
  fi
}

cmd_status() {
  (($# == 1)) || usage
  DIR=$1
  check_dir_arg
  if is_running; then
    log "running in $DIR (pid $(pid_of))"
    return 0
  fi
  log "not running in $DIR"
  return 1
}

cmd_run() {
  (($# >= 1)) || usage
  local tool=$1
  shift
  local class quick=1
  case "$tool" in
    console-consumer) class=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
    console-producer) class=org.apache.kafka.tools.ConsoleProducer ;;
    producer-perf-test) class=org.apache.kafka.tools.ProducerPerformance; quick=0 ;;
    topics) class=org.apache.kafka.tools.TopicCommand ;;
    acls) class=org.apache.kafka.tools.AclCommand ;;
    *.*) class=$tool; quick=0 ;;
    *) die "unknown tool '$tool': console-consumer, console-producer, producer-perf-test," \
         "topics, acls or a class name" ;;
  esac
  local libs
  libs=$(fetch_jars)
  # The tools log only warnings, to stderr.
  local cfg
  cfg=$(dirname "$libs")/tools-log4j2.properties
  if [[ ! -f "$cfg" ]]; then
    printf '%s\n' 'rootLogger.level=WARN' 'rootLogger.appenderRef.err.ref=err' \
      'appender.err.type=Console' 'appender.err.name=err' 'appender.err.target=SYSTEM_ERR' \
      'appender.err.layout.type=PatternLayout' 'appender.err.layout.pattern=%p %m%n' >"$cfg"
  fi
  HEAP=${KAFKA_HEAP_OPTS:--Xms64m -Xmx512m}
  # The console tools start faster with the quick (C1) compiler alone; the perf test measures
  # throughput and keeps the full JIT.
  if ((quick)); then HEAP+=" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"; fi
  # shellcheck disable=SC2086  # HEAP holds several options
  exec java $HEAP -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true -cp "$libs/*" \
    -Dlog4j2.configurationFile="$cfg" "$class" "$@"
}

(($# >= 1)) || usage
sub=$1
shift
case "$sub" in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  status) cmd_status "$@" ;;
  fetch) (($# == 0)) || usage; fetch_jars ;;
  run) cmd_run "$@" ;;
  -h | --help | help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" ;;
  *) usage ;;
esac
