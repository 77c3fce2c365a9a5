#!/usr/bin/env bash
# Throwaway Redis server (Debian's redis-server, 7.0) for tests and the demo, with the
# append-only file on, as the "redis" checkpoint backend wants it.
#
# Usage:
#   scripts/redis.sh start [DIR] PORT      start (the data directory is made the first time);
#                                          prints connection settings on stdout (host, port)
#   scripts/redis.sh stop DIR [--purge]    stop (SHUTDOWN: the AOF is flushed) and wait;
#                                          --purge also deletes DIR
#   scripts/redis.sh status DIR            exit 0 if a server is running in DIR
#
# DIR defaults to /tmp/cppcdc-redis-PORT. The data (the AOF directory) lives in DIR/data, the
# log is DIR/redis.log and the pid file DIR/redis.pid. It listens on 127.0.0.1 only, without
# a password (protected mode stays on). appendonly yes with appendfsync always: an
# acknowledged write is on disk (REDIS_APPENDFSYNC=everysec or no overrides it); no RDB
# snapshots.
#
# As root the server runs as the system user `redis` (from the redis-server package);
# otherwise as the calling user. If DIR already has a running server on PORT, `start` reuses
# it; a stopped one restarts on the data it left (a restart keeps every acknowledged write).
set -euo pipefail

SERVER_USER=redis     # system user that owns and runs the server when we are root
MARKER=.cppcdc-redis  # marks a directory this script created; `stop --purge` requires it

log() { printf '[redis.sh] %s\n' "$*" >&2; }
die() { printf '[redis.sh] ERROR: %s\n' "$*" >&2; exit 1; }

usage() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2
  exit 2
}

valid_port() {
  [[ "$1" =~ ^[0-9]+$ ]] && (("$1" >= 1024 && "$1" <= 65535))
}

check_dir_arg() {
  [[ -n "$DIR" ]] || die "DIR must not be empty"
  case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
  DIR=${DIR%/}
  [[ "$DIR" != "" && "$DIR" != "/" ]] || die "refusing to use / as DIR"
}

as_owner() {
  if ((EUID == 0)); then
    (cd "$DIR" && runuser -u "$SERVER_USER" -- "$@")
  else
    (cd "$DIR" && "$@")
  fi
}

pid_of() {
  local pid
  pid=$(cat "$DIR/redis.pid" 2>/dev/null || true)
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
}

is_running() {
  [[ -n "$(pid_of)" ]]
}

running_port() {
  cat "$DIR/port" 2>/dev/null || true
}

ping() { # port
  [[ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" == PONG ]]
}

settings() {
  printf 'host=127.0.0.1 port=%s\n' "$1"
}

cmd_start() {
  case $# in
    1) PORT=$1; DIR=/tmp/cppcdc-redis-$PORT ;;
    2) DIR=$1; PORT=$2 ;;
    *) usage ;;
  esac
  valid_port "$PORT" || die "PORT must be a number from 1024 to 65535, got '$PORT'"
  check_dir_arg
  command -v redis-server >/dev/null || die "redis-server not found; run scripts/install-deps.sh"
  command -v redis-cli >/dev/null || die "redis-cli not found; run scripts/install-deps.sh"
  if ((EUID == 0)); then
    id "$SERVER_USER" >/dev/null 2>&1 ||
      die "system user '$SERVER_USER' does not exist (install redis-server)"
  fi
  local fsync=${REDIS_APPENDFSYNC:-always}
  case "$fsync" in always | everysec | no) ;; *) die "REDIS_APPENDFSYNC must be always, everysec or no" ;; esac

  if is_running; then
    local rp
    rp=$(running_port)
    [[ "$rp" == "$PORT" ]] ||
      die "a server is already running in $DIR on port ${rp:-?}, not $PORT; stop it first: $0 stop $DIR"
    log "reusing the server already running in $DIR on port $PORT"
    settings "$PORT"
    return 0
  fi
  if ping "$PORT"; then
    die "another server already answers on 127.0.0.1:$PORT; pick another port"
  fi

  if [[ -d "$DIR" && ! -f "$DIR/$MARKER" && -n "$(ls -A "$DIR")" ]]; then
    die "$DIR exists and was not made by this script; remove it or pick another DIR"
  fi
  mkdir -p "$DIR/data"
  touch "$DIR/$MARKER"
  if ((EUID == 0)); then chown -R "$SERVER_USER": "$DIR"; fi
  chmod 0700 "$DIR"
  printf '%s\n' "$PORT" >"$DIR/port"

  # No configuration file: Debian's /etc/redis is left out, every setting is here.
  as_owner redis-server --port "$PORT" --bind 127.0.0.1 --protected-mode yes \
    --dir "$DIR/data" --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log" \
    --daemonize no --supervised no --save '' \
    --appendonly yes --appendfsync "$fsync" >/dev/null 2>&1 &
  local launcher=$!  # lives as long as the server (redis-server runs in the foreground under it)

  local waited=0
  until ping "$PORT"; do
    kill -0 "$launcher" 2>/dev/null || die "the server stopped while starting; see $DIR/redis.log"
    ((waited < 300)) || die "the server did not answer within 30 s; see $DIR/redis.log"
    sleep 0.1
    waited=$((waited + 1))
  done
  # The pid file is written before the server answers; wait for it all the same, `stop` needs it.
  waited=0
  until is_running; do
    ((waited < 100)) || die "the server answers but wrote no pid file $DIR/redis.pid"
    sleep 0.1
    waited=$((waited + 1))
  done
  log "Redis running in $DIR on 127.0.0.1:$PORT (appendonly yes, appendfsync $fsync)"
  settings "$PORT"
}

cmd_stop() {
  [[ $# -ge 1 && $# -le 2 ]] || usage
  DIR=$1
  local purge=0
  if [[ $# -eq 2 ]]; then
    [[ "$2" == "--purge" ]] || usage
    purge=1
  fi
  check_dir_arg
  local pid
  pid=$(pid_of || true)
  if [[ -n "$pid" ]]; then
    # SIGTERM: Redis flushes and fsyncs the AOF, then exits.
    kill -TERM "$pid"
    local waited=0
    while kill -0 "$pid" 2>/dev/null; do
      ((waited < 600)) || die "server $pid in $DIR did not stop within 60 s"
      sleep 0.1
      waited=$((waited + 1))
    done
    log "stopped the server in $DIR"
  fi
  if ((purge)); then
    [[ -f "$DIR/$MARKER" ]] || { [[ -d "$DIR" ]] && die "$DIR was not made by this script; not deleting it"; }
    rm -rf "$DIR"
    log "removed $DIR"
  fi
}

cmd_status() {
  [[ $# -eq 1 ]] || usage
  DIR=$1
  check_dir_arg
  is_running
}

(($# >= 1)) || usage
cmd=$1
shift
case "$cmd" in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  status) cmd_status "$@" ;;
  -h | --help) usage ;;
  *) usage ;;
esac
