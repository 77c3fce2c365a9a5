#!/usr/bin/env bash
# Throwaway MariaDB server (Debian's mariadb-server, 10.11) for tests and the demo, with the
# binary log that change capture reads: ROW format, FULL row images, GTIDs (always on in MariaDB).
#
# Usage:
#   scripts/mariadb.sh start [DIR] PORT    initialise (first time) and start; prints connection
#                                          settings on stdout (host, port, user)
#   scripts/mariadb.sh stop DIR [--purge]  stop and wait; --purge also deletes DIR
#   scripts/mariadb.sh status DIR          exit 0 if a server is running in DIR
#
# DIR defaults to /tmp/cppcdc-mariadb-PORT. The data directory is DIR/data, the error log
# DIR/error.log and the unix socket DIR/mysqld.sock. It listens on 127.0.0.1 only. Users: root
# over the socket, and root@127.0.0.1 without a password over TCP, both with every privilege.
# Durability is relaxed (innodb_flush_log_at_trx_commit=2, sync_binlog=0): never put data you
# care about in it.
#
# As root the server runs as the system user `mysql` (from the mariadb-server package);
# otherwise as the calling user. If DIR already has a running server on PORT, `start` reuses it.
set -euo pipefail

SERVER_USER=mysql   # system user that owns and runs the server when we are root
MARKER=.cppcdc-mariadb  # marks a directory this script created; `stop --purge` requires it

log() { printf '[mariadb.sh] %s\n' "$*" >&2; }
die() { printf '[mariadb.sh] ERROR: %s\n' "$*" >&2; exit 1; }

usage() {
  sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//' >&2
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
  pid=$(cat "$DIR/mysqld.pid" 2>/dev/null || true)
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
}

is_running() {
  [[ -n "$(pid_of)" ]]
}

running_port() {
  cat "$DIR/port" 2>/dev/null || true
}

ping() {
  mariadb-admin --no-defaults -S "$DIR/mysqld.sock" -uroot ping >/dev/null 2>&1
}

settings() {
  printf 'host=127.0.0.1 port=%s user=root\n' "$1"
}

cmd_start() {
  case $# in
    1) PORT=$1; DIR=/tmp/cppcdc-mariadb-$PORT ;;
    2) DIR=$1; PORT=$2 ;;
    *) usage ;;
  esac
  valid_port "$PORT" || die "PORT must be a number from 1024 to 65535, got '$PORT'"
  check_dir_arg
  command -v mariadbd >/dev/null || die "mariadbd not found; run scripts/install-deps.sh"
  if ((EUID == 0)); then
    id "$SERVER_USER" >/dev/null 2>&1 ||
      die "system user '$SERVER_USER' does not exist (install mariadb-server)"
  fi

  if is_running; then
    local rp
    rp=$(running_port)
    [[ "$rp" == "$PORT" ]] ||
      die "a server is already running in $DIR on port ${rp:-?}, not $PORT; stop it first: $0 stop $DIR"
    log "reusing the server already running in $DIR on port $PORT"
    settings "$PORT"
    return 0
  fi

  mkdir -p "$DIR/data" "$DIR/tmp"
  touch "$DIR/$MARKER"
  if ((EUID == 0)); then chown -R "$SERVER_USER": "$DIR"; fi
  chmod 0700 "$DIR"

  if [[ ! -d "$DIR/data/mysql" ]]; then
    [[ -z "$(ls -A "$DIR/data")" ]] ||
      die "$DIR/data exists but is not a MariaDB data directory; remove it or pick another DIR"
    log "initialising $DIR/data"
    local user_opt=()
    ((EUID == 0)) && user_opt=(--user="$SERVER_USER")
    as_owner mariadb-install-db --no-defaults "${user_opt[@]}" --datadir="$DIR/data" \
      --auth-root-authentication-method=normal --skip-test-db >"$DIR/install.log" 2>&1 ||
      die "mariadb-install-db failed; see $DIR/install.log"
  fi

  printf '%s\n' "$PORT" >"$DIR/port"
  local user_opt=()
  ((EUID == 0)) && user_opt=(--user="$SERVER_USER")
  # --no-defaults keeps Debian's /etc/mysql out; its character set defaults then are latin1,
  # so utf8mb4 is named here.
  as_owner mariadbd --no-defaults "${user_opt[@]}" --datadir="$DIR/data" --tmpdir="$DIR/tmp" \
    --socket="$DIR/mysqld.sock" --port="$PORT" --bind-address=127.0.0.1 \
    --pid-file="$DIR/mysqld.pid" --log-error="$DIR/error.log" --skip-name-resolve \
    --log-bin=mysql-bin --binlog-format=ROW --binlog-row-image=FULL --server-id=1 \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
    --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 --sync-binlog=0 \
    >/dev/null 2>&1 &
  local launcher=$!  # lives as long as the server (mariadbd runs in the foreground under it)

  local waited=0
  until ping; do
    kill -0 "$launcher" 2>/dev/null || die "the server stopped while starting; see $DIR/error.log"
    ((waited < 600)) || die "the server did not answer within 60 s; see $DIR/error.log"
    sleep 0.1
    waited=$((waited + 1))
  done
  mariadb --no-defaults -S "$DIR/mysqld.sock" -uroot -e \
    "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
     GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" ||
    die "could not create root@127.0.0.1; see $DIR/error.log"
  log "MariaDB running in $DIR on 127.0.0.1:$PORT"
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
  *) usage ;;
esac
