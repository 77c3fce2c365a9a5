# Functions the server scripts share (scripts/kafka.sh, scripts/apicurio.sh): sourced, not
# run. The sourcing script sets SCRIPT_TAG (its name in its log lines) first; check_dir_arg
# reads and normalises DIR; usage prints the sourcing script's header comment.

log() { printf '[%s] %s\n' "$SCRIPT_TAG" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$SCRIPT_TAG" "$*" >&2; exit 1; }

usage() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2
  exit 2
}

valid_port() {
  [[ "$1" =~ ^[0-9]+$ ]] && (("$1" >= 1024 && "$1" <= 65535))
}

# True when something accepts TCP connections on 127.0.0.1:$1.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

check_dir_arg() {
  [[ -n "$DIR" ]] || die "DIR must not be empty"
  case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
  DIR=${DIR%/}
  [[ "$DIR" != "" && "$DIR" != "/" ]] || die "refusing to use / as DIR"
}

# Prints the pid recorded in file $1 when that process's command line contains $2 (so only
# the server this script started in DIR), else nothing.
recorded_pid() {
  local pid
  pid=$(cat "$1" 2>/dev/null || true)
  [[ -n "$pid" ]] || return 0
  [[ -r "/proc/$pid/cmdline" ]] || return 0
  if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$2"; then
    printf '%s\n' "$pid"
  fi
}
