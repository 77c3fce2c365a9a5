#!/usr/bin/env bash
# Throwaway Apicurio Registry (in-memory storage, Quarkus on the JVM) on 127.0.0.1 for the tests
# of cppcdc's schema registry clients against a real registry, built by Maven from
# scripts/apicurio/pom.xml (Maven Central serves the application's jar, not a runnable build).
#
# Usage:
#   scripts/apicurio.sh start DIR PORT   build the registry (first time), start it; waits until
#                                        it answers, prints its root URL
#                                        (http://127.0.0.1:PORT) on stdout
#   scripts/apicurio.sh stop DIR         stop it and delete DIR (its schemas are in memory)
#   scripts/apicurio.sh status DIR       exit 0 if a registry is running in DIR
#   scripts/apicurio.sh fetch            only build it; prints the directory of its runner jar
#
# The registry serves the Confluent-compatible API at http://127.0.0.1:PORT/apis/ccompat/v7 and
# Apicurio's native API v2 at /apis/registry/v2 (the 2.x line: see scripts/apicurio/pom.xml).
# DIR holds its log (DIR/registry.log) and pid (DIR/registry.pid).
# Environment:
#   APICURIO_CACHE          where the build is kept (default ~/.cache/cppcdc/apicurio); made by
#                           Maven on the first use and used offline afterwards
#   APICURIO_HEAP_OPTS      the JVM's heap (default -Xms64m -Xmx512m)
#   APICURIO_START_TIMEOUT  seconds `start` waits for the registry (default 180)
# No authentication, no TLS, nothing kept: a test fixture, never a registry for real data.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROJECT=$ROOT/scripts/apicurio
CACHE=${APICURIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cppcdc/apicurio}
HEAP=${APICURIO_HEAP_OPTS:--Xms64m -Xmx512m}
START_TIMEOUT=${APICURIO_START_TIMEOUT:-180}
MARKER=.cppcdc-apicurio  # marks a directory this script created; `stop` deletes only such a one

SCRIPT_TAG=apicurio.sh
# shellcheck source=lib/server-script.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/server-script.sh"

# --- the build ----------------------------------------------------------------------------------

# $CACHE/<first 16 hex digits of the sha256 of the project's files>: pom.xml and the sources.
build_dir() {
  local sum
  sum=$(cd "$PROJECT" && find . -type f -not -path './target/*' | LC_ALL=C sort |
        xargs sha256sum | sha256sum | cut -c1-16)
  printf '%s/%s\n' "$CACHE" "$sum"
}

# Builds once; later calls find the build and touch no network. Concurrent callers wait for each
# other (flock). Prints the directory holding the runner jar and its lib/.
fetch_build() {
  local top
  top=$(build_dir)
  [[ -f "$top/app/.complete" ]] && { printf '%s\n' "$top/app"; return 0; }
  command -v mvn >/dev/null || die "mvn not found; run scripts/install-deps.sh (Debian's maven)"
  command -v java >/dev/null ||
    die "java not found; run scripts/install-deps.sh (openjdk-17-jdk-headless)"
  command -v javac >/dev/null ||
    die "javac not found; run scripts/install-deps.sh (openjdk-17-jdk-headless)"
  mkdir -p "$top"
  exec 8>"$top/.lock"
  flock 8
  if [[ ! -f "$top/app/.complete" ]]; then
    local work=$top/work.$$
    rm -rf -- "$work"
    mkdir -p "$work"
    (cd "$PROJECT" && tar --exclude=./target -cf - .) | (cd "$work" && tar -xf -)
    log "building Apicurio Registry from scripts/apicurio/pom.xml into $top/app (once)"
    local args=(-q -B -f "$work/pom.xml" package -DskipTests)
    if ! mvn -o "${args[@]}" >"$top/mvn.log" 2>&1; then
      if ! mvn "${args[@]}" >"$top/mvn.log" 2>&1; then
        tail -n 30 "$top/mvn.log" >&2
        rm -rf -- "$work"
        die "Maven could not build the registry (log: $top/mvn.log);" \
          "Maven Central must be reachable once"
      fi
    fi
    [[ -f "$work/target/apicurio-registry-1-runner.jar" ]] ||
      die "no runner jar in $work/target after Maven ran (log: $top/mvn.log)"
    rm -rf -- "$top/app"
    mkdir -p "$top/app"
    mv "$work/target/apicurio-registry-1-runner.jar" "$work/target/lib" "$top/app/"
    rm -rf -- "$work"
    touch "$top/app/.complete"
  fi
  exec 8>&-
  printf '%s\n' "$top/app"
}

# --- the registry -------------------------------------------------------------------------------

pid_of() {
  # Only our JVM: its command line names this DIR.
  recorded_pid "$DIR/registry.pid" "-Dcppcdc.dir=$DIR "
}

is_running() {
  [[ -n "$(pid_of)" ]]
}

answers() {
  curl -sf -o /dev/null "http://127.0.0.1:$1/apis/ccompat/v7/subjects"
}

cmd_start() {
  (($# == 2)) || usage
  DIR=$1
  PORT=$2
  valid_port "$PORT" || die "PORT must be a number from 1024 to 65535, got '$PORT'"
  check_dir_arg
  command -v curl >/dev/null || die "curl not found; run scripts/install-deps.sh"
  if is_running; then
    if [[ "$(cat "$DIR/registry.port" 2>/dev/null)" == "$PORT" ]]; then
      log "reusing the registry already running in $DIR on port $PORT"
      printf 'http://127.0.0.1:%s\n' "$PORT"
      return 0
    fi
    die "a registry is already running in $DIR on another port; stop it first: $0 stop $DIR"
  fi
  if port_open "$PORT"; then die "port $PORT on 127.0.0.1 is already in use"; fi
  if [[ -d "$DIR" && ! -e "$DIR/$MARKER" && -n "$(ls -A "$DIR")" ]]; then
    die "$DIR exists and was not made by apicurio.sh (no $MARKER file); remove it or pick" \
      "another DIR"
  fi
  local app
  app=$(fetch_build)
  mkdir -p "$DIR"
  touch "$DIR/$MARKER"
  printf '%s\n' "$PORT" >"$DIR/registry.port"
  log "starting Apicurio Registry in $DIR on 127.0.0.1:$PORT"
  : >"$DIR/registry.log"
  (
    cd "$DIR"
    # setsid: the registry outlives this script, in a session of its own.
    # shellcheck disable=SC2086  # HEAP holds several options
    setsid java $HEAP -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
      "-Dcppcdc.dir=$DIR" -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$PORT" \
      -Dquarkus.log.console.color=false \
      -jar "$app/apicurio-registry-1-runner.jar" >>"$DIR/registry.log" 2>&1 </dev/null &
    printf '%s\n' "$!" >"$DIR/registry.pid"
  )
  local pid waited=0
  pid=$(cat "$DIR/registry.pid")
  until answers "$PORT"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$DIR/registry.log" >&2 || true
      die "the registry exited during start (log: $DIR/registry.log)"
    fi
    if ((waited >= START_TIMEOUT * 4)); then
      tail -n 30 "$DIR/registry.log" >&2 || true
      kill -KILL "$pid" 2>/dev/null || true
      die "the registry did not answer within ${START_TIMEOUT}s (log: $DIR/registry.log)"
    fi
    sleep 0.25
    waited=$((waited + 1))
  done
  log "ready after $((waited / 4)).$(((waited % 4) * 25))s of waiting"
  printf 'http://127.0.0.1:%s\n' "$PORT"
}

cmd_stop() {
  (($# == 1)) || usage
  DIR=$1
  check_dir_arg
  if [[ ! -d "$DIR" ]]; then
    log "$DIR does not exist; nothing to stop"
    return 0
  fi
  [[ -e "$DIR/$MARKER" ]] ||
    die "$DIR was not made by apicurio.sh (no $MARKER file); not touching it"
  local pid
  pid=$(pid_of)
  if [[ -n "$pid" ]]; then
    # Everything is in memory and deleted next: no clean shutdown to wait for.
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    log "stopped the registry in $DIR"
  else
    log "no registry running in $DIR"
  fi
  rm -rf -- "$DIR"
  log "deleted $DIR"
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

(($# >= 1)) || usage
sub=$1
shift
case "$sub" in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  status) cmd_status "$@" ;;
  fetch) (($# == 0)) || usage; fetch_build ;;
  -h | --help | help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" ;;
  *) usage ;;
esac
