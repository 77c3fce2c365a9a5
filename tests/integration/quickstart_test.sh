#!/usr/bin/env bash
# The README's quick start, as written: a fresh PostgreSQL cluster with wal_level = replica
# and password authentication, tables owned by the superuser, the README's SQL block run by the
# superuser, a restart, the README's cdc.toml (only host and port changed), then
# `cppcdc check-config`, `preflight`, `run` (snapshot rows, then streamed changes), a clean
# stop, and `teardown --yes`.
#
# Usage: quickstart_test.sh REPO_ROOT CPPCDC_BINARY
# Environment: CPPCDC_TEST_QUICKSTART_PORT (default 25445), the cluster's port.
set -euo pipefail

ROOT=${1:?usage: quickstart_test.sh REPO_ROOT CPPCDC_BINARY}
CPPCDC=${2:?usage: quickstart_test.sh REPO_ROOT CPPCDC_BINARY}
PORT=${CPPCDC_TEST_QUICKSTART_PORT:-25445}
WORK=$(mktemp -d /tmp/cppcdc-quickstart.XXXXXX)
chmod 0755 "$WORK"
PGDIR=$WORK/pg
APP=$WORK/app
mkdir -p "$APP"
CPPCDC_PID=

fail() { printf 'quickstart_test: FAIL: %s\n' "$*" >&2; exit 1; }
log() { printf 'quickstart_test: %s\n' "$*"; }

cleanup() {
  local rc=$?
  if [[ -n "$CPPCDC_PID" ]] && kill -0 "$CPPCDC_PID" 2>/dev/null; then
    kill -KILL "$CPPCDC_PID" 2>/dev/null || true
  fi
  "$ROOT/scripts/pg.sh" stop "$PGDIR" --purge >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT

# psql as the superuser (trust on the Unix socket in $PGDIR).
su_sql() { # database sql...
  local db=$1
  shift
  psql -X -q -v ON_ERROR_STOP=1 -h "$PGDIR" -p "$PORT" -U postgres -d "$db" "$@"
}

# The fenced block that follows the marker `<!-- quickstart:NAME` in the README.
readme_block() { # name
  awk -v marker="<!-- quickstart:$1" '
    index($0, marker) == 1 { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$ROOT/README.md"
}

# Waits up to 60 s for `cond` (a command) to succeed.
wait_for() { # description command...
  local what=$1
  shift
  local deadline=$((SECONDS + 60))
  until "$@"; do
    ((SECONDS < deadline)) || fail "timed out waiting for $what"
    sleep 0.2
  done
}

sql_block=$(readme_block sql)
toml_block=$(readme_block toml)
[[ -n "$sql_block" ]] || fail "README.md has no <!-- quickstart:sql block"
[[ -n "$toml_block" ]] || fail "README.md has no <!-- quickstart:toml block"

log "a fresh cluster on port $PORT with wal_level = replica"
PG_WAL_LEVEL=replica "$ROOT/scripts/pg.sh" start "$PGDIR" "$PORT" >/dev/null
# Password authentication for everyone but the superuser over TCP, as on a real server.
hba=$PGDIR/data/pg_hba.conf
{
  printf 'local all postgres trust\n'
  printf 'host all postgres 127.0.0.1/32 trust\n'
  printf 'host all all 127.0.0.1/32 scram-sha-256\n'
  printf 'host replication all 127.0.0.1/32 scram-sha-256\n'
} >"$hba.new"
chown --reference="$hba" "$hba.new" 2>/dev/null || true
mv "$hba.new" "$hba"
su_sql postgres -c "select pg_reload_conf()" >/dev/null
su_sql postgres -c "create database app" >/dev/null
su_sql app <<'SQL'
create table public.orders (id bigint primary key, status text not null, total numeric(12,2));
create table public.customers (id bigint primary key, email text);
insert into public.orders values (1, 'new', 10.50), (2, 'paid', 99.00);
insert into public.customers values (1, 'a@example.com');
SQL

log "the README's SQL block, as the superuser"
printf '%s\n' "$sql_block" | su_sql app >/dev/null
[[ "$(su_sql app -tA -c 'show wal_level')" == replica ]] || fail "wal_level changed before the restart"
"$ROOT/scripts/pg.sh" stop "$PGDIR" >/dev/null
PG_WAL_LEVEL=replica "$ROOT/scripts/pg.sh" start "$PGDIR" "$PORT" >/dev/null
[[ "$(su_sql app -tA -c 'show wal_level')" == logical ]] || fail "wal_level is not logical after the restart"

log "the README's cdc.toml (host and port changed)"
grep -q 'host=db.example.com port=5432' <<<"$toml_block" || fail "the README's dsn changed; update this test"
printf '%s\n' "${toml_block/host=db.example.com port=5432/host=127.0.0.1 port=$PORT}" >"$APP/cdc.toml"
export PGPASSWORD=change-me

out=$("$CPPCDC" check-config --config "$APP/cdc.toml" 2>&1) || fail "check-config: $out"
log "preflight"
rc=0
out=$("$CPPCDC" preflight --config "$APP/cdc.toml" 2>&1) || rc=$?
printf '%s\n' "$out"
((rc == 0)) || fail "preflight exited $rc"
! grep -q 'FAIL' <<<"$out" || fail "preflight reported a failure"
grep -q 'change-me' <<<"$out" && fail "preflight printed the password"

log "run: the snapshot, then streamed changes"
"$CPPCDC" run --config "$APP/cdc.toml" >"$APP/run.log" 2>&1 &
CPPCDC_PID=$!
events() { # op: how many events of op are in the sink file
  local n=0
  if [[ -f "$APP/events.jsonl" ]]; then n=$(grep -c "\"op\":\"$1\"" "$APP/events.jsonl" || true); fi
  printf '%s\n' "${n:-0}"
}
has_events() { (($(events "$1") >= $2)); }
wait_for "3 snapshot rows" has_events read 3
# The stream starts after the snapshot: wait for the slot to be in use, then write.
slot_active() {
  [[ "$(su_sql app -tA -c "select active from pg_replication_slots where slot_name = 'cppcdc'")" == t ]]
}
wait_for "the slot to be streamed from" slot_active
su_sql app -c "insert into public.orders values (3, 'new', 5.00); update public.customers set email = 'b@example.com' where id = 1; delete from public.orders where id = 1" >/dev/null
wait_for "the insert" has_events insert 1
wait_for "the update" has_events update 1
wait_for "the delete" has_events delete 1
grep -q '"email":"b@example.com"' "$APP/events.jsonl" || fail "the update's new value is not in events.jsonl"
[[ "$(stat -c %a "$APP/events.jsonl")" == 600 ]] || fail "events.jsonl is not 0600"
kill -TERM "$CPPCDC_PID"
rc=0
wait "$CPPCDC_PID" || rc=$?
CPPCDC_PID=
((rc == 0)) || { cat "$APP/run.log" >&2; fail "cppcdc run exited $rc after SIGTERM"; }
grep -q 'change-me' "$APP/run.log" && fail "the log holds the password"

[[ -f "$APP/state/created-slot-cppcdc" ]] || fail "no record of the slot cppcdc created beside the checkpoint"

log "teardown"
out=$("$CPPCDC" teardown --config "$APP/cdc.toml" --yes 2>&1) || fail "teardown: $out"
printf '%s\n' "$out"
[[ "$(su_sql app -tA -c "select count(*) from pg_replication_slots")" == 0 ]] || fail "the slot is still there"
# The publication was made by the superuser, not by cppcdc: teardown keeps it.
[[ "$(su_sql app -tA -c "select count(*) from pg_publication where pubname = 'cppcdc_pub'")" == 1 ]] ||
  fail "teardown dropped a publication cppcdc did not create"
ls "$APP/state"/checkpoint-* >/dev/null 2>&1 && fail "the checkpoint is still there"
[[ -e "$APP/state/created-slot-cppcdc" ]] && fail "the slot's record is still there"
log "PASS"
