#!/usr/bin/env bash
# Re-records basic.frames from a running PostgreSQL 15 with wal_level=logical.
#   record_basic.sh PGHOST PGPORT PATH/TO/pg_record_frames
# The database must be fresh (no objects from basic_setup.sql yet). Afterwards, refresh
# basic.expected with CPPCDC_UPDATE_GOLDEN=1 and review the diff.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
host=$1 port=$2 recorder=$3
psql=(psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -U postgres -d postgres)

"${psql[@]}" -f "$here/basic_setup.sql"
"${psql[@]}" -c "select pg_create_logical_replication_slot('golden_slot', 'pgoutput')" >/dev/null
start=$("${psql[@]}" -Atc "select confirmed_flush_lsn from pg_replication_slots
                           where slot_name = 'golden_slot'")
"${psql[@]}" -f "$here/basic.sql" >/dev/null
end=$("${psql[@]}" -Atc "select pg_current_wal_lsn()")
echo "recording $start .. $end"
"$recorder" --conninfo "host=$host port=$port user=postgres dbname=postgres" \
  --slot golden_slot --publication golden_pub --end-lsn "$end" --out "$here/basic.frames"
"${psql[@]}" -c "select pg_drop_replication_slot('golden_slot')" >/dev/null
