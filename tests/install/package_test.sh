#!/usr/bin/env bash
# The Debian packages, installed on this machine (ctest label install; scripts/test.sh runs it):
#   1. scripts/package.sh builds cppcdc and cppcdc-dev as a user would, in build-pkg/ of the
#      source tree (shared with a manual run and with install_test.sh, which installs that
#      build elsewhere, so a rerun or the second test is incremental); each holds what it
#      should, and cppcdc's Depends (from dpkg-shlibdeps) name libpq and Connector/C;
#   2. dpkg -i installs both: /usr/bin/cppcdc runs and reports the project's version, postinst
#      made the system user cppcdc and /etc/cppcdc (root:cppcdc, 0750), pkg-config finds
#      cppcdc, the man page (where man is installed) formats without a warning and covers
#      every command and exit code that `cppcdc --help` lists;
#   3. the installed binary runs the demo's capture (scripts/demo.sh: a row read by the
#      snapshot, 2 + 3 inserts in one transaction, an update, a delete: 8 events) against the
#      test PostgreSQL (CPPCDC_TEST_PG_DSN), as the cppcdc service would: as the user cppcdc,
#      from /etc/cppcdc/NAME.toml made from the packaged example configuration, with its state
#      in /var/lib/cppcdc/NAME; preflight passes first and SIGTERM stops it with exit 0;
#      where the kernel has it, under prctl(PR_SET_MDWE) (what MemoryDenyWriteExecute= asks);
#      where strace and systemd-analyze exist, every system call it made is one the unit's
#      SystemCallFilter= allows, and every socket is of a family RestrictAddressFamilies=
#      allows;
#   4. the installed unit passes `systemd-analyze verify`, and `systemd-analyze security`
#      rates its exposure 2.0 or less (when systemd-analyze exists); `systemctl enable`
#      enables an instance;
#   5. dpkg -P removes both packages and the instance's enable link, and the machine is as it
#      was: the user, /etc/cppcdc and /var/lib/cppcdc go again when the test made them, also
#      when a step fails.
# Exits 77 (ctest: skipped) when not root, without dpkg or CPPCDC_TEST_PG_DSN, or when a
# cppcdc package is installed already (the test would replace and then purge it).
# One run at a time on a machine (a lock in /tmp), whichever checkout it comes from.
#
# Usage: package_test.sh SOURCE_DIR WORK_DIR   (WORK_DIR: the package build's log)
set -euo pipefail

log() { printf '[package-test] %s\n' "$*"; }
die() { printf '[package-test] FAIL: %s\n' "$*" >&2; exit 1; }
skip() { printf '[package-test] SKIP: %s\n' "$*"; exit 77; }

(($# == 2)) || die "usage: $0 SOURCE_DIR WORK_DIR"
SRC=$(cd "$1" && pwd)
WORK=$2
PSQL=/usr/lib/postgresql/15/bin/psql
NAME=pkgtest                 # the instance: /etc/cppcdc/pkgtest.toml, /var/lib/cppcdc/pkgtest
DB=cppcdc_pkgtest
SLOT=cppcdc_pkgtest
PUBLICATION=cppcdc_pkgtest_pub
EXPECTED_EVENTS=8
WAIT_SECONDS=60

((EUID == 0)) || skip "installing a package needs root"
command -v dpkg >/dev/null && command -v dpkg-deb >/dev/null || skip "no dpkg on this machine"
[[ -n "${CPPCDC_TEST_PG_DSN:-}" ]] || skip "CPPCDC_TEST_PG_DSN is not set (scripts/test.sh sets it)"
[[ -x "$PSQL" ]] || die "$PSQL not found (scripts/install-deps.sh installs postgresql-client-15)"

mkdir -p "$WORK"
exec 9>/tmp/cppcdc-package-test.lock
flock 9

installed() { # package: is it installed (or half-installed)?
  local status
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) || return 1
  [[ "$status" == ?[!n]* ]]
}
for p in cppcdc cppcdc-dev; do
  installed "$p" && skip "package $p is installed already; this test would replace and purge it"
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/cppcdc-package-test.XXXXXX")
had_user=0 had_group=0 had_etc=0 had_varlib=0
getent passwd cppcdc >/dev/null && had_user=1
getent group cppcdc >/dev/null && had_group=1
[[ -e /etc/cppcdc ]] && had_etc=1
[[ -e /var/lib/cppcdc ]] && had_varlib=1
[[ ! -e /etc/cppcdc/$NAME.toml ]] || die "/etc/cppcdc/$NAME.toml exists; not touching it"
[[ ! -e /var/lib/cppcdc/$NAME ]] || die "/var/lib/cppcdc/$NAME exists; not touching it"
cdc_pid="" run_pid=""
enable_link=/etc/systemd/system/multi-user.target.wants/cppcdc@$NAME.service
[[ ! -e "$enable_link" ]] || die "$enable_link exists; not touching it"
DSN="$CPPCDC_TEST_PG_DSN"

sql() { # db [psql args...]
  local db=$1
  shift
  "$PSQL" -X -q -v ON_ERROR_STOP=1 "$DSN dbname=$db" "$@"
}
sql_value() { sql "$1" -At -c "$2"; }

drop_test_database() {
  local active
  for _ in $(seq 50); do
    active=$(sql_value postgres "select active_pid from pg_replication_slots
                                 where slot_name = '$SLOT' and active_pid is not null")
    [[ -z "$active" ]] && break
    sql_value postgres "select pg_terminate_backend($active)" >/dev/null || true
    sleep 0.2
  done
  sql postgres -c "select pg_drop_replication_slot(slot_name) from pg_replication_slots
                   where slot_name = '$SLOT'" >/dev/null
  sql postgres -c "set client_min_messages = warning" \
    -c "drop database if exists $DB with (force)" >/dev/null
}

# Everything the test did to the machine is undone here, whatever failed.
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  local rc=$?
  set +e
  for p in $cdc_pid $run_pid; do
    if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null; fi
  done
  [[ -n "$run_pid" ]] && wait "$run_pid" 2>/dev/null
  if ((rc != 0)) && [[ -s "$TMP/cppcdc.log" ]]; then
    printf '[package-test] last lines of the cppcdc log:\n' >&2
    tail -n 30 "$TMP/cppcdc.log" >&2
  fi
  drop_test_database 2>/dev/null
  rm -f -- "/etc/cppcdc/$NAME.toml" "$enable_link"
  rm -rf -- "/var/lib/cppcdc/$NAME"
  for p in cppcdc-dev cppcdc; do
    if installed "$p"; then
      dpkg -P "$p" >"$TMP/purge-$p.log" 2>&1 || cat "$TMP/purge-$p.log" >&2
    fi
  done
  ((had_etc)) || rmdir /etc/cppcdc 2>/dev/null
  ((had_varlib)) || rmdir /var/lib/cppcdc 2>/dev/null
  ((had_user)) || ! getent passwd cppcdc >/dev/null || userdel cppcdc
  ((had_group)) || ! getent group cppcdc >/dev/null || groupdel cppcdc
  rm -rf -- "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. build the packages --------------------------------------------------------------------
PACKAGES=$SRC/build-pkg/packages
log "scripts/package.sh (build in $SRC/build-pkg, log: $WORK/package.log)"
CPPCDC_JOBS=${CPPCDC_JOBS:-2} "$SRC/scripts/package.sh" >"$WORK/package.log" 2>&1 ||
  { tail -n 60 "$WORK/package.log" >&2; die "scripts/package.sh failed"; }
shopt -s nullglob
server_debs=("$PACKAGES"/cppcdc_*.deb)
dev_debs=("$PACKAGES"/cppcdc-dev_*.deb)
shopt -u nullglob
((${#server_debs[@]} == 1 && ${#dev_debs[@]} == 1)) ||
  die "expected one cppcdc and one cppcdc-dev package in $PACKAGES"
SERVER_DEB=${server_debs[0]}
DEV_DEB=${dev_debs[0]}
version=$(sed -nE 's/^project\(cppcdc VERSION ([0-9.]+).*/\1/p' "$SRC/CMakeLists.txt")
[[ -n "$version" ]] || die "no project version in CMakeLists.txt"
for deb in "$SERVER_DEB" "$DEV_DEB"; do
  [[ "$(dpkg-deb -f "$deb" Version)" == "$version-1" ]] ||
    die "$(basename "$deb"): Version $(dpkg-deb -f "$deb" Version), expected $version-1"
  [[ "$(dpkg-deb -f "$deb" Maintainer)" == *'<'*'@'*'>' ]] ||
    die "$(basename "$deb"): Maintainer is not 'name <address>'"
done
depends=$(dpkg-deb -f "$SERVER_DEB" Depends)
for d in libpq5 libmariadb3 libc6 libstdc++6 adduser; do
  [[ ", $depends," == *", $d"[\ ,]* ]] || die "cppcdc's Depends lacks $d: $depends"
done
dpkg-deb -c "$SERVER_DEB" | awk '{ print $6 }' >"$TMP/server.files"
dpkg-deb -c "$DEV_DEB" | awk '{ print $6 }' >"$TMP/dev.files"
for f in ./usr/bin/cppcdc ./usr/lib/systemd/system/cppcdc@.service \
  ./usr/share/man/man1/cppcdc.1.gz ./usr/share/doc/cppcdc/examples/cdc.toml; do
  grep -qxF -- "$f" "$TMP/server.files" || die "cppcdc does not hold $f"
done
libdir=./usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)  # what GNUInstallDirs picks for /usr
for f in ./usr/include/cppcdc/runtime.hpp "$libdir/libcppcdc_core.a" "$libdir/pkgconfig/cppcdc.pc" \
  "$libdir/cmake/cppcdc/cppcdcConfig.cmake"; do
  grep -qxF -- "$f" "$TMP/dev.files" || die "cppcdc-dev does not hold $f"
done
! grep -qE '^\./usr/(include|lib/.*\.a$)' "$TMP/server.files" ||
  die "cppcdc holds development files"
! grep -qxF ./usr/bin/cppcdc "$TMP/dev.files" || die "cppcdc-dev holds the binary"
# (No `| grep -q` on a longer output: grep's early exit would fail the pipeline under pipefail.)
control_files=$(dpkg-deb --ctrl-tarfile "$SERVER_DEB" | tar -t)
grep -qx './postinst' <<<"$control_files" ||
  die "cppcdc has no postinst"
log "built $(basename "$SERVER_DEB") (Depends: $depends) and $(basename "$DEV_DEB")"

# 2. install --------------------------------------------------------------------------------
log "dpkg -i"
dpkg -i "$SERVER_DEB" "$DEV_DEB" >"$TMP/dpkg-i.log" 2>&1 ||
  { cat "$TMP/dpkg-i.log" >&2; die "dpkg -i failed"; }
[[ "$(/usr/bin/cppcdc version)" == "cppcdc $version" ]] ||
  die "/usr/bin/cppcdc version says '$(/usr/bin/cppcdc version)', expected 'cppcdc $version'"
getent passwd cppcdc >/dev/null || die "postinst made no user cppcdc"
[[ "$(stat -c '%U:%G %a' /etc/cppcdc)" == "root:cppcdc 750" ]] ||
  die "/etc/cppcdc is $(stat -c '%U:%G %a' /etc/cppcdc), expected root:cppcdc 750"
[[ "$(pkg-config --modversion cppcdc)" == "$version" ]] ||
  die "pkg-config does not find cppcdc $version"
log "installed: /usr/bin/cppcdc $version, user cppcdc, /etc/cppcdc, cppcdc.pc"

# The man page (man-db is not among the project's dependencies; it is on most machines).
check_man_page() {
  local page=/usr/share/man/man1/cppcdc.1.gz
  [[ "$(man -w cppcdc)" == "$page" ]] || die "man -w cppcdc: $(man -w cppcdc)"
  MANWIDTH=100 man --warnings -l "$page" >"$TMP/man.txt" 2>"$TMP/man.err" ||
    die "man cppcdc failed: $(cat "$TMP/man.err")"
  [[ ! -s "$TMP/man.err" ]] || die "man cppcdc warns: $(cat "$TMP/man.err")"
  # Every command and subcommand `--help` lists has an entry in COMMANDS; every exit code of the
  # --help footer has one under EXIT STATUS.
  commands_of() { # help text -> the names under SUBCOMMANDS:
    awk 'tolower($0) ~ /^subcommands:/ { on = 1; next } on && /^ *$/ { exit } on { print $1 }'
  }
  section() { awk -v s="$1" '/^[A-Z][A-Z ]+$/ { on = ($0 == s); next } on' "$TMP/man.txt"; }
  man_commands=$(section COMMANDS)
  man_exit=$(section 'EXIT STATUS')
  mapfile -t top < <(/usr/bin/cppcdc --help | commands_of)
  mapfile -t snap < <(/usr/bin/cppcdc snapshot --help | commands_of)
  ((${#top[@]} >= 6 && ${#snap[@]} >= 6)) || die "could not read the commands from cppcdc --help"
  for c in "${top[@]}"; do
    [[ "$c" == snapshot ]] && continue
    grep -qE "^       $c\b" <<<"$man_commands" || die "the man page has no entry for '$c'"
  done
  for c in "${snap[@]}"; do
    grep -qE "^       snapshot $c\b" <<<"$man_commands" ||
      die "the man page has no entry for 'snapshot $c'"
  done
  mapfile -t codes < <(/usr/bin/cppcdc --help | tr ',' '\n' |
    sed -nE 's/.*\b([0-9]) [a-z`].*/\1/p')
  ((${#codes[@]} >= 6)) || die "could not read the exit codes from cppcdc --help"
  for code in "${codes[@]}"; do
    grep -qE "^       $code\b" <<<"$man_exit" ||
      die "the man page does not explain exit code $code"
  done
  log "man page: formats cleanly; commands ${top[*]}, snapshot ${snap[*]};" \
    "exit codes ${codes[*]}"
}
if command -v man >/dev/null; then
  check_man_page
else
  log "man not installed: the man page is not checked"
fi

# 3. the demo's capture with the installed binary, as the service would run it -------------
log "database $DB, tables public.customers and public.orders, one row before the start"
drop_test_database
sql postgres -c "create database $DB"
sql "$DB" <<'SQL'
create table public.customers (id bigint primary key, name text, email text);
create table public.orders (
  id bigserial primary key, customer_id bigint, status text, amount numeric(12,2),
  created_at timestamptz default now());
insert into public.customers (id, name, email) values (0, 'Grace Hopper', 'grace@example.com');
SQL

config=/etc/cppcdc/$NAME.toml
state=/var/lib/cppcdc/$NAME
# The packaged example with NAME, the DSN and the slot filled in, as the man page says to.
sed -e "s|^dsn = .*|dsn = \"$DSN dbname=$DB\"|" -e "s|cppcdc_NAME|$SLOT|g" -e "s|NAME|$NAME|g" \
  /usr/share/doc/cppcdc/examples/cdc.toml >"$TMP/cdc.toml"
install -m 0640 -o root -g cppcdc "$TMP/cdc.toml" "$config"
# systemd makes the state directory for the unit (StateDirectory=cppcdc/%i, mode 0700).
[[ -d /var/lib/cppcdc ]] || install -d -m 0755 /var/lib/cppcdc
install -d -m 0700 -o cppcdc -g cppcdc "$state"

as_cppcdc=(setpriv --reuid=cppcdc --regid=cppcdc --init-groups --)
(cd "$state" && "${as_cppcdc[@]}" /usr/bin/cppcdc check-config --config "$config") \
  >"$TMP/check.log" 2>&1 || { cat "$TMP/check.log" >&2; die "check-config of $config failed"; }
(cd "$state" && "${as_cppcdc[@]}" /usr/bin/cppcdc preflight --config "$config") \
  >"$TMP/preflight.log" 2>&1 || { cat "$TMP/preflight.log" >&2; die "preflight failed"; }

run=("${as_cppcdc[@]}")
mdwe=0
# PR_GET_MDWE (66) answers where the kernel (6.3 and later) has it.
if /usr/bin/python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).prctl(66, 0, 0, 0, 0) < 0)' \
  2>/dev/null; then
  # PR_SET_MDWE (65) with PR_MDWE_REFUSE_EXEC_GAIN (1): no mapping may be writable and
  # executable, none may become executable; inherited across fork and execve.
  run+=(/usr/bin/python3 -c 'import ctypes, os, sys
if ctypes.CDLL(None).prctl(65, 1, 0, 0, 0) != 0: sys.exit("prctl(PR_SET_MDWE) failed")
os.execvp(sys.argv[1], sys.argv[1:])')
  mdwe=1
fi
traced=0
if command -v strace >/dev/null && command -v systemd-analyze >/dev/null; then
  run+=(strace -f -qq -o "$TMP/strace.log")
  traced=1
fi
run+=(/usr/bin/cppcdc run --config "$config")
touch "$TMP/strace.log" && chmod 0666 "$TMP/strace.log" && chmod 0755 "$TMP"
log "cppcdc run as user cppcdc (MemoryDenyWriteExecute: $( ((mdwe)) && echo yes ||
  echo 'no: kernel'); system call trace: $( ((traced)) && echo yes ||
  echo 'no: strace or systemd-analyze missing'))"
(cd "$state" && exec "${run[@]}") >"$TMP/cppcdc.log" 2>&1 &
run_pid=$!

# The cppcdc process itself: the one started, or strace's child.
deadline=$((SECONDS + WAIT_SECONDS))
until [[ -n "$cdc_pid" ]]; do
  kill -0 "$run_pid" 2>/dev/null || die "cppcdc exited early (its log follows)"
  for p in $run_pid $(pgrep -P "$run_pid" || true); do
    if [[ "$(readlink "/proc/$p/exe" 2>/dev/null)" == /usr/bin/cppcdc ]]; then cdc_pid=$p; fi
  done
  ((SECONDS < deadline)) || die "no cppcdc process within ${WAIT_SECONDS}s"
  [[ -n "$cdc_pid" ]] || sleep 0.1
done
[[ "$(stat -c %U "/proc/$cdc_pid")" == cppcdc ]] || die "cppcdc does not run as user cppcdc"

until [[ "$(sql_value postgres "select count(*) from pg_replication_slots s
           join pg_stat_replication r on r.pid = s.active_pid
           where s.slot_name = '$SLOT' and r.state in ('catchup', 'streaming')")" == 1 ]]; do
  kill -0 "$run_pid" 2>/dev/null || die "cppcdc exited before streaming"
  ((SECONDS < deadline)) || die "cppcdc was not streaming from $SLOT within ${WAIT_SECONDS}s"
  sleep 0.2
done
log "streaming from slot $SLOT; making the demo's changes"
sql "$DB" <<'SQL'
begin;
insert into public.customers (id, name, email) values
  (1, 'Ada Lovelace', 'ada@example.com'), (2, 'Alan Turing', 'alan@example.com');
insert into public.orders (customer_id, status, amount) values
  (1, 'new', 19.99), (1, 'new', 5.00), (2, 'new', 120.50);
commit;
update public.orders set status = 'shipped' where id = 1;
delete from public.orders where id = 2;
SQL

events=$state/events.jsonl
count_events() { if [[ -f "$events" ]]; then wc -l <"$events"; else echo 0; fi; }
deadline=$((SECONDS + WAIT_SECONDS))
until (($(count_events) >= EXPECTED_EVENTS)); do
  kill -0 "$run_pid" 2>/dev/null || die "cppcdc exited with $(count_events) events delivered"
  ((SECONDS < deadline)) || die "$(count_events) of $EXPECTED_EVENTS events within ${WAIT_SECONDS}s"
  sleep 0.2
done
kill -TERM "$cdc_pid"
rc=0
wait "$run_pid" || rc=$?
run_pid="" cdc_pid=""
((rc == 0)) || die "cppcdc exited with $rc after SIGTERM"
grep -q 'stopped by signal' "$TMP/cppcdc.log" || die "cppcdc's log does not show a clean stop"

python3 - "$events" <<'PY' || die "the captured events are not the demo's"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
got = [(e["op"], e["table"], (e["after"] or e["before"])["id"]) for e in rows]
want = [("read", "customers", "0"), ("insert", "customers", "1"), ("insert", "customers", "2"),
        ("insert", "orders", "1"), ("insert", "orders", "2"), ("insert", "orders", "3"),
        ("update", "orders", "1"), ("delete", "orders", "2")]
if got != want:
    sys.exit(f"events {got}, expected {want}")
if rows[6]["after"]["status"] != "shipped":
    sys.exit(f"update: {rows[6]}")
PY
for f in "$events" "$state/checkpoint-$SLOT.ckpt"; do
  [[ "$(stat -c '%U %a' "$f")" == "cppcdc 600" ]] ||
    die "$f is $(stat -c '%U %a' "$f"), expected cppcdc 600"
done
[[ ! -e "$state/$NAME.sock" ]] || die "the control socket was left behind"
log "$EXPECTED_EVENTS events as in the demo, checkpoint in $state, clean stop (exit 0)"

# The same instance with its checkpoint kept off the machine (the memory backend stands in for
# kafka_topic, redis and postgresql: no directory here). Its control socket (and the source's
# own files) default to the instance's state directory, which the unit may write, not to
# /etc/cppcdc beside the file, which it may not.
sed -e 's/^backend = "local_fs"$/backend = "memory"/' -e "\\|^dir = \"$state\"\$|d" \
  "$TMP/cdc.toml" >"$TMP/offbox.toml"
grep -q '^backend = "memory"$' "$TMP/offbox.toml" || die "could not make the off-machine variant"
install -m 0640 -o root -g cppcdc "$TMP/offbox.toml" "$config"
(cd / && "${as_cppcdc[@]}" /usr/bin/cppcdc check-config --config "$config") \
  >"$TMP/check-offbox.log" 2>&1 || { cat "$TMP/check-offbox.log" >&2; die "check-config failed"; }
grep -Eq "control socket: +$state/$NAME.sock " "$TMP/check-offbox.log" ||
  { cat "$TMP/check-offbox.log" >&2; die "the control socket is not in $state"; }
log "a checkpoint kept elsewhere puts the control socket in $state"

if ((traced)); then
  # The unit: SystemCallFilter=@system-service, then ~@privileged @resources.
  python3 - "$TMP/strace.log" <<'PY' || die "cppcdc made system calls the unit's filter refuses"
import re, subprocess, sys
groups, cur = {}, None
for line in subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True,
                           text=True, check=True).stdout.splitlines():
    s = line.strip()
    if not s or s.startswith("#"):
        continue
    if not line.startswith(" ") and s.startswith("@"):
        cur = groups.setdefault(s, set())
    elif cur is not None:
        cur.add(s)
def expand(name, seen=()):
    out = set()
    for m in groups[name]:
        out |= expand(m, seen + (name,)) if m.startswith("@") and m not in seen else {m}
    return out
allowed = expand("@system-service") - expand("@privileged") - expand("@resources")
used, wx, families = set(), [], []
for line in open(sys.argv[1]):
    m = re.match(r"\d+\s+([a-z0-9_]+)\(", line)
    if m:
        used.add(m.group(1))
    if re.search(r"\b(mprotect|pkey_mprotect)\(.*PROT_EXEC", line) or \
       re.search(r"\bmmap\(.*PROT_WRITE\|PROT_EXEC", line):
        wx.append(line.strip())
    m = re.search(r"\b(socket|socketpair)\((AF_[A-Z0-9]+)", line)
    if m and m.group(2) not in ("AF_UNIX", "AF_INET", "AF_INET6"):
        families.append(line.strip())
used.discard("execve")  # systemd's own execve of the binary, and strace's
refused = sorted(used - allowed)
if refused or wx or families:
    sys.exit(f"refused by the filter: {refused}; writable+executable memory: {wx[:5]}; "
             f"address families the unit does not allow: {families[:5]}")
print(f"[package-test] {len(used)} distinct system calls, all allowed by the unit's filter")
PY
fi

# 4. the unit -------------------------------------------------------------------------------
unit=/usr/lib/systemd/system/cppcdc@.service
if command -v systemd-analyze >/dev/null; then
  # A template is verified through an instance of it.
  systemd-analyze verify "cppcdc@$NAME.service" >"$TMP/verify.log" 2>&1 ||
    { cat "$TMP/verify.log" >&2; die "systemd-analyze verify cppcdc@$NAME.service failed"; }
  [[ ! -s "$TMP/verify.log" ]] || { cat "$TMP/verify.log" >&2; die "systemd-analyze verify warns"; }
  log "systemd-analyze verify $unit (as cppcdc@$NAME.service): clean"
  # The hardening as systemd rates it, from 0 (locked down) to 10; 1.2 when written.
  exposure=$(systemd-analyze security --offline=true "$unit" 2>&1 |
    sed -nE 's/^.*Overall exposure level for [^:]*: ([0-9.]+).*/\1/p')
  [[ -n "$exposure" ]] || die "systemd-analyze security --offline gave no exposure level"
  awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }' ||
    die "systemd-analyze security rates the unit's exposure $exposure (above 2.0)"
  log "systemd-analyze security: exposure $exposure"
else
  log "systemd-analyze not installed: the unit is not verified"
fi
# `systemctl enable` works on the files alone; the purge removes what it made.
if command -v systemctl >/dev/null; then
  systemctl enable "cppcdc@$NAME.service" >"$TMP/enable.log" 2>&1 ||
    { cat "$TMP/enable.log" >&2; die "systemctl enable cppcdc@$NAME.service failed"; }
  [[ -L "$enable_link" ]] || die "systemctl enable made no $enable_link"
  log "systemctl enable cppcdc@$NAME.service: $enable_link"
fi

# 5. purge ----------------------------------------------------------------------------------
rm -f -- "$config"
rm -rf -- "$state"
dpkg -P cppcdc-dev cppcdc >"$TMP/dpkg-p.log" 2>&1 ||
  { cat "$TMP/dpkg-p.log" >&2; die "dpkg -P failed"; }
for f in /usr/bin/cppcdc "$unit" /usr/share/man/man1/cppcdc.1.gz /usr/include/cppcdc; do
  [[ ! -e "$f" ]] || die "$f is still there after dpkg -P"
done
((had_etc)) || [[ ! -e /etc/cppcdc ]] || die "/etc/cppcdc is still there after dpkg -P"
[[ ! -e "$enable_link" && ! -L "$enable_link" ]] || die "$enable_link is still there after dpkg -P"
log "dpkg -P removed both packages"
log "ok"
