#!/usr/bin/env bash
# The soak runs, too long for the CI's test command: the Kafka replay oracle with about 50,000
# PostgreSQL row changes, at least 20 SIGKILLs (and crashes at the crash points, with a Kafka
# transaction open or just committed) and two restarts of the broker during the load, once
# under effectively_once (a read_committed reader must hold every change exactly once, a
# read_uncommitted one the aborted attempts) and once under at_least_once (nothing lost,
# duplicates only from the batches in flight). Both end by replaying the topics into tables
# that must equal the source's.
#
# Usage: scripts/soak.sh [--no-build] [--port PORT] [--kafka-port PORT]
#   --no-build     use build/ as it is (default: scripts/build.sh --target cppcdc_integration_kafka)
#   --port         the throwaway PostgreSQL's port (default 55489; /tmp/cppcdc-soak-pg)
#   --kafka-port   the shared broker's port (default 19700; /tmp/cppcdc-soak-kafka); the tests
#                  restart brokers of their own on this port + 44 and + 46
# Takes about 10 minutes on 2 cores. Exits non-zero when a run failed. The servers are removed
# on exit; a failed run keeps its work directory (/tmp/cppcdc-it-kafka_*), named in its output.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[soak] %s\n' "$*" >&2; }
die() { printf '[soak] ERROR: %s\n' "$*" >&2; exit 2; }

build=1
PORT=55489
KPORT=19700
while (($#)); do
  case "$1" in
    --no-build) build=0; shift ;;
    --port) (($# >= 2)) || die "--port needs a number"; PORT=$2; shift 2 ;;
    --kafka-port) (($# >= 2)) || die "--kafka-port needs a number"; KPORT=$2; shift 2 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
PG_DIR=/tmp/cppcdc-soak-pg
K_DIR=/tmp/cppcdc-soak-kafka
BIN=$ROOT/build/tests/cppcdc_integration_kafka

cleanup() {
  "$ROOT/scripts/pg.sh" stop "$PG_DIR" --purge >/dev/null 2>&1 || true
  "$ROOT/scripts/kafka.sh" stop "$K_DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ((build)); then
  "$ROOT/scripts/build.sh" --target cppcdc_integration_kafka --target cppcdc >&2 ||
    die "the build failed"
fi
[[ -x "$BIN" ]] || die "$BIN is missing; run scripts/build.sh first"

cleanup
log "PostgreSQL on 127.0.0.1:$PORT, Kafka on 127.0.0.1:$KPORT"
"$ROOT/scripts/pg.sh" start "$PG_DIR" "$PORT" >/dev/null
bootstrap=$("$ROOT/scripts/kafka.sh" start "$K_DIR" "$KPORT")
export CPPCDC_TEST_PG_DSN="host=127.0.0.1 port=$PORT dbname=postgres user=postgres"
export CPPCDC_TEST_PG_PORT=$PORT
export CPPCDC_TEST_KAFKA_BOOTSTRAP=$bootstrap
export CPPCDC_SOAK=1
t0=$SECONDS
rc=0
"$BIN" --gtest_filter='KafkaSoak.*' || rc=$?
log "$( ((rc == 0)) && echo PASSED || echo FAILED) in $((SECONDS - t0)) s"
exit "$rc"
