#!/usr/bin/env bash
# The jars of Debezium's PostgreSQL connector and a Kafka Connect worker (bench/debezium/pom.xml):
# the reference peer of bench/kafka_run.sh and of the DebeziumOnBroker.* tests.
#
# Usage:
#   scripts/debezium-jars.sh          print their directory; exit 1 (saying how to fetch them)
#                                     when they have not been fetched
#   scripts/debezium-jars.sh --fetch  fetch them first when missing (Maven, from Maven Central:
#                                     once; about 70 jars), then print their directory
#
# They are kept in $DEBEZIUM_CACHE (default ~/.cache/cppcdc/debezium)/<first 16 hex digits of
# the pom's sha256>/libs, so a changed pom fetches anew. Nothing is built: Maven only copies the
# artifacts and their runtime dependencies (dependency:copy-dependencies).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
POM=$ROOT/bench/debezium/pom.xml
CACHE=${DEBEZIUM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cppcdc/debezium}
LIBS=$CACHE/$(sha256sum "$POM" | cut -c1-16)/libs

die() { printf '[debezium-jars] ERROR: %s\n' "$*" >&2; exit 1; }

if [[ -f $LIBS/.complete ]]; then
  printf '%s\n' "$LIBS"
  exit 0
fi
[[ ${1:-} == --fetch ]] ||
  die "the Debezium jars are not in $LIBS; fetch them with scripts/debezium-jars.sh --fetch"

command -v mvn >/dev/null || die "mvn not found; run scripts/install-deps.sh (Debian's maven)"
top=$(dirname "$LIBS")
tmp=$top/libs.tmp.$$
mkdir -p "$top"
rm -rf -- "$tmp"
printf '[debezium-jars] fetching the jars %s names into %s (once)\n' "$POM" "$LIBS" >&2
args=(-q -B -f "$POM" dependency:copy-dependencies -DoutputDirectory="$tmp" -DincludeScope=runtime)
if ! mvn -o "${args[@]}" >"$top/mvn.log" 2>&1 && ! mvn "${args[@]}" >"$top/mvn.log" 2>&1; then
  tail -n 30 "$top/mvn.log" >&2
  rm -rf -- "$tmp"
  die "Maven could not fetch the Debezium jars (log: $top/mvn.log)"
fi
ls "$tmp"/debezium-connector-postgres-*.jar "$tmp"/connect-runtime-*.jar >/dev/null 2>&1 ||
  die "no Debezium connector or Connect runtime jar in $tmp after Maven ran"
touch "$tmp/.complete"
rm -rf -- "$LIBS"
mv "$tmp" "$LIBS"
printf '%s\n' "$LIBS"
