#!/usr/bin/env bash
# The one test command: dependencies, both builds, every test, sanitizers and a short fuzz run.
#
# Usage: scripts/test.sh
#
# Steps:
#   1. scripts/install-deps.sh              (returns at once when everything is installed)
#   2. scripts/build.sh                     -> build/
#   3. scripts/build.sh --asan              -> build-asan/ (the unit test executables only)
#   4. scripts/build.sh --tsan              -> build-tsan/ (the unit test executables only)
#   5. a throwaway PostgreSQL 15 on 127.0.0.1:25440 in /tmp/cppcdc-test-pg, a throwaway
#      MariaDB 10.11 on 127.0.0.1:23440 in /tmp/cppcdc-test-mariadb, a throwaway Redis 7.0 on
#      127.0.0.1:26379 in /tmp/cppcdc-test-redis and a throwaway Kafka broker on
#      127.0.0.1:19092 (controller 19093) in /tmp/cppcdc-test-kafka and a throwaway Apicurio
#      Registry on 127.0.0.1:18085 in /tmp/cppcdc-test-apicurio (scripts/apicurio.sh), all
#      removed on exit; the broker and the registry start in the background while the unit
#      tests run
#   6. ctest in build/: unit tests in parallel, then integration tests one at a time (they use
#      CPPCDC_TEST_PG_DSN / _PORT, CPPCDC_TEST_MARIADB_PORT, CPPCDC_TEST_REDIS_PORT,
#      CPPCDC_TEST_KAFKA_BOOTSTRAP and CPPCDC_TEST_APICURIO_URL),
#      then the PostgreSQL core set (label pgcore) against PostgreSQL 12 and 18
#      (scripts/pg-matrix.sh: npm binaries, one server at a time on 127.0.0.1:25441, removed on
#      exit; scripts/pg-matrix.sh alone runs all of 12 to 18), then the install tests, which
#      share one Release build with default options, scripts/package.sh's build-pkg/: it is
#      installed to a temporary prefix, examples/ built against it, no fault point in it; its
#      Debian packages installed with dpkg -i, the demo's capture run with the installed
#      binary as its service would, then purged
#   7. ctest -L unit in build-asan/ (unit tests under ASan + UBSan)
#   8. ctest -L unit in build-tsan/ (unit tests, the threaded runtime, reader and snapshot ones
#      among them, under ThreadSanitizer; suppressions in tests/tsan.supp)
#   9. scripts/fuzz.sh: every fuzz target, CPPCDC_FUZZ_SECONDS (default 60) split between
#      them, when clang-14 can link libFuzzer (ctest already replayed their corpora in 6 and 7)
# A failing build skips the tests that need it; the other steps still run. Exits non-zero if
# any step failed, and always ends with a one-line summary. Takes no arguments (-h prints this).
set -euo pipefail

if (($#)); then
  case "$1" in
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) printf '[test] ERROR: unknown argument %s: scripts/test.sh takes none (see --help)\n' "'$1'" >&2
       exit 2 ;;
  esac
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# Every port here, and the ports the tests derive from them (PostgreSQL + 100..120, Redis + 1
# and + 2), lies below Linux's ephemeral range (32768-60999), so no outgoing connection of a
# busy machine can be holding one when a server wants to bind it.
PG_DIR=/tmp/cppcdc-test-pg
PG_PORT=25440
MATRIX_PORT=25441          # scripts/pg-matrix.sh: its cluster lives in /tmp/cppcdc-matrix-pg-PORT
MATRIX_MAJORS=(12 18)      # 15 is the main run's server
MARIADB_DIR=/tmp/cppcdc-test-mariadb
MARIADB_PORT=23440
REDIS_DIR=/tmp/cppcdc-test-redis
REDIS_PORT=26379   # the redis restart tests run servers of their own on REDIS_PORT + 1 and + 2
KAFKA_DIR=/tmp/cppcdc-test-kafka
KAFKA_PORT=19092
APICURIO_DIR=/tmp/cppcdc-test-apicurio
APICURIO_PORT=18085
JOBS=2
# A test without a TIMEOUT of its own fails after this many seconds instead of hanging the run.
TEST_TIMEOUT=600

log() { printf '\n[test] ==== %s\n' "$*"; }

declare -a STEP_NAMES=() STEP_RESULTS=()
failed=0
pg_started=0
matrix_started=0
mariadb_started=0
redis_started=0
kafka_started=0
kafka_job=
apicurio_started=0
apicurio_job=
interrupted=0
t0=$SECONDS
# The failed tests of every ctest step, with their first failure lines (scripts/ctest-digest.sh),
# printed again just above the summary, so that the end of a long log says what failed.
DIGEST=$(mktemp)

record() { # name result
  STEP_NAMES+=("$1")
  STEP_RESULTS+=("$2")
  if [[ "$2" == FAIL ]]; then failed=1; fi
}

# Run a step, record PASS/FAIL, and return its status without stopping the script.
step() { # name command...
  local name=$1
  shift
  log "$name: $*"
  local rc=0
  "$@" || rc=$?
  if ((rc == 0)); then
    record "$name" PASS
  else
    printf '[test] %s FAILED (exit %d)\n' "$name" "$rc" >&2
    record "$name" FAIL
  fi
  return "$rc"
}

skip() { # name reason
  printf '[test] skipping %s: %s\n' "$1" "$2"
  record "$1" "SKIP($2)"
}

# shellcheck disable=SC2317  # called from the EXIT trap
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if ((pg_started)); then
    "$ROOT/scripts/pg.sh" stop "$PG_DIR" --purge || true
  fi
  if ((mariadb_started)); then
    "$ROOT/scripts/mariadb.sh" stop "$MARIADB_DIR" --purge || true
  fi
  if ((redis_started)); then
    "$ROOT/scripts/redis.sh" stop "$REDIS_DIR" --purge || true
  fi
  if ((matrix_started)); then  # pg-matrix.sh removes its server itself; this is for a kill
    "$ROOT/scripts/pg.sh" stop "/tmp/cppcdc-matrix-pg-$MATRIX_PORT" --purge >/dev/null 2>&1 || true
  fi
  if ((kafka_started)); then
    # A start still under way is ended first (it is this script's own background job).
    if [[ -n "$kafka_job" ]] && kill -0 "$kafka_job" 2>/dev/null; then
      kill "$kafka_job" 2>/dev/null || true
      wait "$kafka_job" 2>/dev/null || true
    fi
    "$ROOT/scripts/kafka.sh" stop "$KAFKA_DIR" || true
    rm -f "$KAFKA_DIR.start.log"
  fi
  if ((apicurio_started)); then
    if [[ -n "$apicurio_job" ]] && kill -0 "$apicurio_job" 2>/dev/null; then
      kill "$apicurio_job" 2>/dev/null || true
      wait "$apicurio_job" 2>/dev/null || true
    fi
    "$ROOT/scripts/apicurio.sh" stop "$APICURIO_DIR" || true
    rm -f "$APICURIO_DIR.start.log"
  fi
  if [[ -s "$DIGEST" ]]; then
    printf '\n[test] the tests that failed, and how:\n'
    head -n 400 "$DIGEST"
  fi
  rm -f -- "$DIGEST"
  local i summary=""
  for i in "${!STEP_NAMES[@]}"; do
    summary+="${summary:+, }${STEP_NAMES[$i]} ${STEP_RESULTS[$i]}"
  done
  local verdict=PASSED
  if ((interrupted)); then
    verdict=INTERRUPTED
  elif ((failed || rc != 0)); then
    verdict=FAILED
  fi
  ((rc != 0)) || ((!failed)) || rc=1
  printf '\n[test] %s in %ds: %s\n' "$verdict" "$((SECONDS - t0))" "${summary:-no steps ran}"
  exit "$rc"
}
trap finish EXIT
trap 'interrupted=1; exit 130' INT
trap 'interrupted=1; exit 143' TERM

# Run a ctest step (step's arguments; the build directory follows --test-dir) and keep the
# digest of its failed tests for the end of the log.
ctest_step() { # name command...
  local name=$1 dir="" a prev="" rc=0
  for a in "${@:2}"; do
    [[ "$prev" == --test-dir ]] && dir=$a
    prev=$a
  done
  rm -f -- "$dir/Testing/Temporary/LastTest.log"
  step "$@" || rc=$?
  if ((rc != 0)); then "$ROOT/scripts/ctest-digest.sh" "$name" "$dir" >>"$DIGEST"; fi
  return "$rc"
}

# Can clang-14 link a libFuzzer target? (libFuzzer comes from libclang-rt-14-dev.)
have_libfuzzer() {
  command -v clang++-14 >/dev/null || return 1
  local tmp rc=0
  tmp=$(mktemp -d)
  printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
    'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$tmp/f.cpp"
  clang++-14 -fsanitize=fuzzer "$tmp/f.cpp" -o "$tmp/f" >/dev/null 2>&1 || rc=1
  rm -rf -- "$tmp"
  return "$rc"
}

# 1. dependencies: nothing works without them.
step install-deps "$ROOT/scripts/install-deps.sh" || exit 1

# 2-4. builds
build_ok=0 asan_ok=0 tsan_ok=0
step build "$ROOT/scripts/build.sh" && build_ok=1
step build-asan "$ROOT/scripts/build.sh" --asan && asan_ok=1
step build-tsan "$ROOT/scripts/build.sh" --tsan && tsan_ok=1

# 5. PostgreSQL for the integration tests (a fresh cluster every run).
if ((build_ok)); then
  log "postgres: fresh cluster in $PG_DIR on port $PG_PORT"
  "$ROOT/scripts/pg.sh" stop "$PG_DIR" --purge
  pg_started=1
  if "$ROOT/scripts/pg.sh" start "$PG_DIR" "$PG_PORT" >/dev/null; then
    record postgres PASS
  else
    record postgres FAIL
    build_ok=0
  fi
fi
export CPPCDC_TEST_PG_DSN="host=127.0.0.1 port=$PG_PORT dbname=postgres user=postgres"
export CPPCDC_TEST_PG_PORT=$PG_PORT

# MariaDB for the MySQL/MariaDB source's integration tests (a fresh server every run).
if ((build_ok)); then
  log "mariadb: fresh server in $MARIADB_DIR on port $MARIADB_PORT"
  if [[ -d "$MARIADB_DIR" ]]; then "$ROOT/scripts/mariadb.sh" stop "$MARIADB_DIR" --purge; fi
  mariadb_started=1
  if "$ROOT/scripts/mariadb.sh" start "$MARIADB_DIR" "$MARIADB_PORT" >/dev/null; then
    record mariadb PASS
  else
    record mariadb FAIL
    build_ok=0
  fi
fi
export CPPCDC_TEST_MARIADB_PORT=$MARIADB_PORT

# Redis for the "redis" checkpoint backend's integration tests (a fresh server every run).
if ((build_ok)); then
  log "redis: fresh server in $REDIS_DIR on port $REDIS_PORT"
  if [[ -d "$REDIS_DIR" ]]; then "$ROOT/scripts/redis.sh" stop "$REDIS_DIR" --purge; fi
  redis_started=1
  if "$ROOT/scripts/redis.sh" start "$REDIS_DIR" "$REDIS_PORT" >/dev/null; then
    record redis PASS
  else
    record redis FAIL
    build_ok=0
  fi
fi
export CPPCDC_TEST_REDIS_PORT=$REDIS_PORT

# Kafka for the Kafka sink's integration tests (a fresh broker every run). Its JVM takes a
# while to start, so it starts in the background now and is waited for before the
# integration tests.
if ((build_ok)); then
  log "kafka: fresh broker in $KAFKA_DIR on port $KAFKA_PORT (starting in the background)"
  if [[ -d "$KAFKA_DIR" ]]; then "$ROOT/scripts/kafka.sh" stop "$KAFKA_DIR"; fi
  kafka_started=1
  kafka_t0=$SECONDS
  "$ROOT/scripts/kafka.sh" start "$KAFKA_DIR" "$KAFKA_PORT" >/dev/null 2>"$KAFKA_DIR.start.log" &
  kafka_job=$!
  # The real schema registry of the RealRegistry* tests, likewise.
  log "apicurio: fresh registry in $APICURIO_DIR on port $APICURIO_PORT (starting in the background)"
  if [[ -d "$APICURIO_DIR" ]]; then "$ROOT/scripts/apicurio.sh" stop "$APICURIO_DIR"; fi
  apicurio_started=1
  "$ROOT/scripts/apicurio.sh" start "$APICURIO_DIR" "$APICURIO_PORT" >/dev/null \
    2>"$APICURIO_DIR.start.log" &
  apicurio_job=$!
fi

# Waits for the registry's start; exports CPPCDC_TEST_APICURIO_URL when it is up.
await_apicurio() {
  [[ -n "$apicurio_job" ]] || return 0
  local rc=0
  wait "$apicurio_job" || rc=$?
  apicurio_job=
  cat "$APICURIO_DIR.start.log" >&2 || true
  rm -f "$APICURIO_DIR.start.log"
  if ((rc == 0)); then
    record apicurio PASS
    export CPPCDC_TEST_APICURIO_URL=http://127.0.0.1:$APICURIO_PORT
  else
    record apicurio FAIL
  fi
}

# Waits for the broker's start; exports CPPCDC_TEST_KAFKA_BOOTSTRAP when it is up.
await_kafka() {
  [[ -n "$kafka_job" ]] || return 0
  local waited_from=$SECONDS rc=0
  wait "$kafka_job" || rc=$?
  kafka_job=
  cat "$KAFKA_DIR.start.log" >&2 || true
  rm -f "$KAFKA_DIR.start.log"
  if ((rc == 0)); then
    printf '[test] kafka: up %ds after its start was launched; the tests waited %ds for it\n' \
      "$((SECONDS - kafka_t0))" "$((SECONDS - waited_from))"
    record kafka PASS
    export CPPCDC_TEST_KAFKA_BOOTSTRAP=127.0.0.1:$KAFKA_PORT
  else
    record kafka FAIL
  fi
}

# Sanitizer reports: stack traces, and stop at the first error.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/tsan.supp}

# 6. all tests of the normal build
if ((build_ok)); then
  # Unit tests in parallel; integration tests one at a time, so that the crash, fault and
  # restart tests do not compete with each other for the 2 cores and the one server.
  ctest_step ctest-unit ctest --test-dir build -L unit --output-on-failure -j"$JOBS" --timeout "$TEST_TIMEOUT" || true
  await_kafka
  await_apicurio
  ctest_step ctest-integration ctest --test-dir build -L integration --output-on-failure -j1 \
    --timeout "$TEST_TIMEOUT" || true
  matrix_started=1
  CPPCDC_MATRIX_DIGEST=$DIGEST step "pg-core(${MATRIX_MAJORS[*]})" "$ROOT/scripts/pg-matrix.sh" --no-build --port "$MATRIX_PORT" \
    "${MATRIX_MAJORS[@]}" || true
  ctest_step ctest-install ctest --test-dir build -L install --output-on-failure || true
else
  skip ctest "build failed"
fi

# 7. unit tests under ASan + UBSan
if ((asan_ok)); then
  ctest_step ctest-asan-unit ctest --test-dir build-asan -L unit --output-on-failure -j"$JOBS" --timeout "$TEST_TIMEOUT" || true
else
  skip ctest-asan-unit "asan build failed"
fi

# 8. unit tests under ThreadSanitizer (the first report fails its test)
if ((tsan_ok)); then
  ctest_step ctest-tsan-unit ctest --test-dir build-tsan -L unit --output-on-failure -j"$JOBS" --timeout "$TEST_TIMEOUT" || true
else
  skip ctest-tsan-unit "tsan build failed"
fi

# 9. fuzzing
if ! have_libfuzzer; then
  skip fuzz "clang-14 cannot link libFuzzer"
else
  # The duration goes both as the script's SECONDS argument and in the environment.
  export CPPCDC_FUZZ_SECONDS=${CPPCDC_FUZZ_SECONDS:-60}
  step "fuzz(${CPPCDC_FUZZ_SECONDS}s)" bash "$ROOT/scripts/fuzz.sh" "$CPPCDC_FUZZ_SECONDS" || true
fi

exit "$failed"
