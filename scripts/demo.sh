#!/usr/bin/env bash
# One-command demo: capture changes from a local PostgreSQL 15 into a JSON-lines file.
#
# Usage: scripts/demo.sh [--setup-only]
#   --setup-only  stop after PostgreSQL, the schema and the config are ready (no build, no run)
#
# What it does:
#   1. installs the Debian packages and builds cppcdc (release build in build/)
#   2. starts PostgreSQL 15 on 127.0.0.1:55432 (data in /tmp/cppcdc-demo-pg)
#   3. creates database `app`, role `cdc` (LOGIN REPLICATION) and tables public.orders and
#      public.customers owned by `cdc`, with one customer that already exists (it arrives
#      through the initial snapshot as op `read`)
#   4. writes /tmp/cppcdc-demo/cdc.toml and runs `cppcdc run` with it in the background
#   5. makes a few changes (2 customers + 3 orders in one transaction, an update, a delete)
#   6. waits for the 8 events in /tmp/cppcdc-demo/events.jsonl, stops cppcdc, prints them
# Every run starts from scratch: the old slot, database and /tmp/cppcdc-demo are removed.
# PostgreSQL keeps running afterwards; the script prints how to stop it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Override these from the environment to run the demo beside another one (or beside a server
# already on 55432): CPPCDC_DEMO_PG_PORT=55999 CPPCDC_DEMO_DIR=/tmp/my-demo scripts/demo.sh
PG_DIR=${CPPCDC_DEMO_PG_DIR:-/tmp/cppcdc-demo-pg}
PG_PORT=${CPPCDC_DEMO_PG_PORT:-55432}
DEMO_DIR=${CPPCDC_DEMO_DIR:-/tmp/cppcdc-demo}
CONFIG=$DEMO_DIR/cdc.toml
EVENTS=$DEMO_DIR/events.jsonl
CDC_LOG=$DEMO_DIR/cppcdc.log
PID_FILE=$DEMO_DIR/cppcdc.pid
SLOT=cppcdc_demo
PUBLICATION=cppcdc_demo_pub
EXPECTED_EVENTS=8
WAIT_SECONDS=30
PSQL_BIN=/usr/lib/postgresql/15/bin/psql
# How to name our scripts in the instructions we print: short when run from the repo root.
if [[ "$PWD" == "$ROOT" ]]; then SCRIPTS=scripts; else SCRIPTS=$ROOT/scripts; fi

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
info() { printf '    %s\n' "$*"; }
die() { printf '\n[demo] ERROR: %s\n' "$*" >&2; exit 1; }

setup_only=0
for a in "$@"; do
  case "$a" in
    --setup-only) setup_only=1 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done

# psql as USER on DB; stops at the first SQL error.
sql() { # user db [psql args...]
  local user=$1 db=$2
  shift 2
  "$PSQL_BIN" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U "$user" -d "$db" "$@"
}
sql_value() { # user db query -> one value
  sql "$1" "$2" -At -c "$3"
}

cdc_pid=""
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  local rc=$?
  if [[ -n "$cdc_pid" ]] && kill -0 "$cdc_pid" 2>/dev/null; then
    kill -TERM "$cdc_pid" 2>/dev/null || true
    wait "$cdc_pid" 2>/dev/null || true
  fi
  if ((rc != 0)); then
    if [[ -s "$CDC_LOG" ]]; then
      printf '\n[demo] last lines of %s:\n' "$CDC_LOG" >&2
      tail -n 30 "$CDC_LOG" >&2 || true
    fi
    printf '\n[demo] failed. PostgreSQL may still be running; stop it with:\n  %s\n' \
      "$SCRIPTS/pg.sh stop $PG_DIR --purge" >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
say "Installing dependencies (fast when already installed)"
"$ROOT/scripts/install-deps.sh"

BIN=""
if ((!setup_only)); then
  say "Building cppcdc (release)"
  "$ROOT/scripts/build.sh" --target cppcdc
  for candidate in "$ROOT/build/cppcdc" "$ROOT/build/apps/cppcdc/cppcdc"; do
    if [[ -x "$candidate" ]]; then BIN=$candidate; break; fi
  done
  [[ -n "$BIN" ]] || die "build finished but no cppcdc binary in $ROOT/build"
  info "binary: $BIN"
fi

# ---------------------------------------------------------------------------------------------
say "Stopping a cppcdc left over from an earlier demo, if any"
if [[ -f "$PID_FILE" ]]; then
  old=$(cat "$PID_FILE" 2>/dev/null || true)
  if [[ "$old" =~ ^[0-9]+$ ]] && kill -0 "$old" 2>/dev/null \
     && tr '\0' ' ' <"/proc/$old/cmdline" 2>/dev/null | grep -qF -- "run --config $CONFIG"; then
    info "sending SIGTERM to pid $old"
    kill -TERM "$old" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$old" 2>/dev/null; then
      info "pid $old did not exit; sending SIGKILL"
      kill -KILL "$old" 2>/dev/null || true
    fi
  fi
fi

say "Starting PostgreSQL 15 on 127.0.0.1:$PG_PORT (data in $PG_DIR)"
"$ROOT/scripts/pg.sh" start "$PG_DIR" "$PG_PORT" >/dev/null

say "Removing state from an earlier demo (slot $SLOT, database app, $DEMO_DIR)"
# A slot pins its database and WAL; end any session still streaming from it, then drop it.
for _ in $(seq 50); do
  active=$(sql_value postgres postgres \
    "select active_pid from pg_replication_slots where slot_name = '$SLOT' and active_pid is not null")
  [[ -z "$active" ]] && break
  sql_value postgres postgres "select pg_terminate_backend($active)" >/dev/null || true
  sleep 0.2
done
sql postgres postgres -c \
  "select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = '$SLOT'" >/dev/null
if [[ "$(sql_value postgres postgres "select 1 from pg_database where datname = 'app'")" == 1 ]]; then
  sql postgres app -c "set client_min_messages = warning" -c "drop publication if exists $PUBLICATION"
  sql postgres postgres -c "drop database app with (force)"
fi
rm -rf -- "$DEMO_DIR"
mkdir -p "$DEMO_DIR/state"

say "Creating role cdc, database app and the tables"
sql postgres postgres <<'SQL'
do $$
begin
  if not exists (select from pg_roles where rolname = 'cdc') then
    create role cdc login replication;
  else
    alter role cdc login replication;
  end if;
end
$$;
create database app;
-- CREATE on the database lets cdc create the publication.
grant connect, create on database app to cdc;
SQL
sql postgres app <<'SQL'
create table public.customers (
  id    bigint primary key,
  name  text,
  email text
);
create table public.orders (
  id          bigserial primary key,
  customer_id bigint,
  status      text,
  amount      numeric(12,2),
  created_at  timestamptz default now()
);
grant select on public.customers, public.orders to cdc;
-- Only a table's owner may add it to a publication.
alter table public.customers owner to cdc;
alter table public.orders owner to cdc;
-- A row that exists before cppcdc starts: it arrives through the initial snapshot (op read).
insert into public.customers (id, name, email) values (0, 'Grace Hopper', 'grace@example.com');
SQL
info "$(sql_value cdc app "select string_agg(schemaname || '.' || tablename || ' (owner ' || tableowner || ')', ', ' order by tablename) from pg_tables where schemaname = 'public'")"
info "customers already holds one row (id 0, Grace Hopper): cppcdc's initial snapshot will deliver it as op \"read\""

say "Writing $CONFIG"
cat >"$CONFIG" <<EOF
[source]
type = "postgres"
dsn = "host=127.0.0.1 port=$PG_PORT dbname=app user=cdc"
slot_name = "$SLOT"
publication_name = "$PUBLICATION"
tables = ["public.orders", "public.customers"]
create_slot = true
create_publication = true

[sink]
type = "file"
path = "$EVENTS"

[state.offset]
backend = "local_fs"
dir = "$DEMO_DIR/state"
EOF
sed 's/^/    /' "$CONFIG"

if ((setup_only)); then
  say "Setup done (--setup-only)"
  info "DSN for psql:  $PSQL_BIN -h 127.0.0.1 -p $PG_PORT -U cdc app"
  info "run cppcdc:    build/cppcdc run --config $CONFIG"
  info "clean up:      $SCRIPTS/pg.sh stop $PG_DIR --purge && rm -rf $DEMO_DIR"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
say "Starting cppcdc in the background (log: $CDC_LOG)"
"$BIN" run --config "$CONFIG" >"$CDC_LOG" 2>&1 &
cdc_pid=$!
echo "$cdc_pid" >"$PID_FILE"
info "pid $cdc_pid"

alive_or_die() {
  kill -0 "$cdc_pid" 2>/dev/null && return 0
  local rc=0
  wait "$cdc_pid" || rc=$?
  cdc_pid=""
  die "cppcdc exited early (exit $rc); see $CDC_LOG"
}

say "Waiting for cppcdc to create replication slot $SLOT and start streaming (up to ${WAIT_SECONDS}s)"
# The slot is listed (and held by the creating session) as soon as its creation begins, but only
# changes committed after it is ready are in its stream: wait for a walsender streaming from it.
deadline=$((SECONDS + WAIT_SECONDS))
until [[ "$(sql_value postgres postgres "select count(*) from pg_replication_slots s join pg_stat_replication r on r.pid = s.active_pid where s.slot_name = '$SLOT' and r.state in ('catchup', 'streaming')")" == 1 ]]; do
  alive_or_die
  ((SECONDS < deadline)) || die "slot $SLOT did not appear within ${WAIT_SECONDS}s"
  sleep 0.2
done
info "cppcdc is streaming from slot $SLOT"

say "Making changes in database app"
sql cdc app -e <<'SQL'
begin;
insert into public.customers (id, name, email) values
  (1, 'Ada Lovelace', 'ada@example.com'),
  (2, 'Alan Turing',  'alan@example.com');
insert into public.orders (customer_id, status, amount) values
  (1, 'new', 19.99),
  (1, 'new', 5.00),
  (2, 'new', 120.50);
commit;
update public.orders set status = 'shipped' where id = 1;
delete from public.orders where id = 2;
SQL

say "Waiting for $EXPECTED_EVENTS events in $EVENTS (up to ${WAIT_SECONDS}s)"
deadline=$((SECONDS + WAIT_SECONDS))
count_events() { if [[ -f "$EVENTS" ]]; then wc -l <"$EVENTS"; else echo 0; fi; }
until (($(count_events) >= EXPECTED_EVENTS)); do
  alive_or_die
  ((SECONDS < deadline)) || die "only $(count_events) of $EXPECTED_EVENTS events arrived within ${WAIT_SECONDS}s"
  sleep 0.2
done
info "$(count_events) events"

say "Stopping cppcdc (SIGTERM)"
kill -TERM "$cdc_pid"
for _ in $(seq 75); do kill -0 "$cdc_pid" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$cdc_pid" 2>/dev/null; then
  info "cppcdc did not exit within 15s; sending SIGKILL"
  kill -KILL "$cdc_pid" 2>/dev/null || true
fi
cdc_rc=0
wait "$cdc_pid" || cdc_rc=$?
cdc_pid=""
rm -f "$PID_FILE"
if ((cdc_rc == 0)); then
  info "cppcdc exited cleanly"
else
  info "warning: cppcdc exited with status $cdc_rc (see $CDC_LOG)"
fi

say "Events captured ($EVENTS)"
if command -v jq >/dev/null; then
  jq . "$EVENTS"
else
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.strip():
        print(json.dumps(json.loads(line), indent=2))' "$EVENTS"
fi

# The same overrides again, so the command below reruns this demo and not one on the defaults.
RERUN="$SCRIPTS/demo.sh"
[[ -n ${CPPCDC_DEMO_DIR:-} ]] && RERUN="CPPCDC_DEMO_DIR=$CPPCDC_DEMO_DIR $RERUN"
[[ -n ${CPPCDC_DEMO_PG_DIR:-} ]] && RERUN="CPPCDC_DEMO_PG_DIR=$CPPCDC_DEMO_PG_DIR $RERUN"
[[ -n ${CPPCDC_DEMO_PG_PORT:-} ]] && RERUN="CPPCDC_DEMO_PG_PORT=$CPPCDC_DEMO_PG_PORT $RERUN"
say "Done"
cat <<EOF
    The events above are in $EVENTS, cppcdc's log is $CDC_LOG and its
    checkpoint is in $DEMO_DIR/state. PostgreSQL is still running on 127.0.0.1:$PG_PORT:
      $PSQL_BIN -h 127.0.0.1 -p $PG_PORT -U cdc app        (writes to the demo tables)
      $PSQL_BIN -h 127.0.0.1 -p $PG_PORT -U postgres app   (superuser: new tables, grants)

    Run the demo again (starts from scratch):
      $RERUN
    Run cppcdc yourself against the same database:
      $BIN run --config $CONFIG
    Clean up everything:
      $SCRIPTS/pg.sh stop $PG_DIR --purge && rm -rf $DEMO_DIR
EOF
