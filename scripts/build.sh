#!/usr/bin/env bash
# Configure and build cppcdc with CMake and Ninja.
#
# Usage: scripts/build.sh [--asan | --tsan] [--target NAME] [-DVAR=VALUE ...]
#   (default)  build/       default build type (RelWithDebInfo), warnings are errors, fault
#                           points compiled in (the crash tests need them)
#   --asan     build-asan/  Debug with AddressSanitizer + UndefinedBehaviorSanitizer
#   --tsan     build-tsan/  RelWithDebInfo with ThreadSanitizer
#              (with --asan or --tsan and no --target, only what ctest -L unit runs there is
#              built: unit tests, conformance suites of backends and sinks, fuzz replays)
#   --target   build only that target (e.g. cppcdc for the binary alone); may be repeated
# Extra -D options are passed to the CMake configure step. Parallel jobs: nproc
# (override with CPPCDC_JOBS). ccache is used when it is installed (CPPCDC_NO_CCACHE=1: not).
set -euo pipefail

log() { printf '[build] %s\n' "$*"; }
die() { printf '[build] ERROR: %s\n' "$*" >&2; exit 1; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

asan=0
tsan=0
extra=()
targets=()
while (($#)); do
  a=$1
  shift
  case "$a" in
    --asan) asan=1 ;;
    --tsan) tsan=1 ;;
    --target) (($#)) || die "--target needs a name"; targets+=(--target "$1"); shift ;;
    -D*) extra+=("$a") ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done

command -v cmake >/dev/null || die "cmake not found; run scripts/install-deps.sh"
command -v ninja >/dev/null || die "ninja not found; run scripts/install-deps.sh"

((asan + tsan < 2)) || die "--asan and --tsan cannot be combined"
if ((asan)); then
  BUILD_DIR=$ROOT/build-asan
  cfg=(-DCPPCDC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
elif ((tsan)); then
  BUILD_DIR=$ROOT/build-tsan
  cfg=(-DCPPCDC_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
else
  BUILD_DIR=$ROOT/build
  cfg=()
fi
JOBS=${CPPCDC_JOBS:-$(nproc)}
# ccache, when installed, shares compiled objects between build directories and clones
# (paths below the repository root are hashed relative to it).
if command -v ccache >/dev/null && [[ -z "${CPPCDC_NO_CCACHE:-}" ]]; then
  cfg+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
  # With -g the compiler's working directory goes into the debug info, and ccache would hash
  # it, so a clone elsewhere (CI's) would miss every object; this keeps the hits (the debug
  # info of an object from the cache may then name the other clone's directory).
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
fi

# A build directory made with another generator cannot be reused by CMake: start it afresh.
if [[ -f "$BUILD_DIR/CMakeCache.txt" ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD_DIR/CMakeCache.txt"; then
  log "$BUILD_DIR was configured with another generator; removing it"
  rm -rf -- "$BUILD_DIR"
fi

log "configure $BUILD_DIR"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCPPCDC_WERROR=ON -DCPPCDC_FAULT_POINTS=ON "${cfg[@]}" "${extra[@]}"

# The sanitizer builds serve only the unit-labelled tests: by default build their executables
# (the unit test executables, the checkpoint and sink conformance suites, the fuzz replays),
# nothing else.
if ((tsan || asan)) && ((${#targets[@]} == 0)); then
  mapfile -t unit_targets < <(cmake --build "$BUILD_DIR" --target help |
    sed -n 's/^\(cppcdc_unit_[A-Za-z0-9_]*\|cppcdc_conformance\|[a-z_]*_fuzz_replay\):.*/\1/p')
  ((${#unit_targets[@]})) || die "no cppcdc_unit_* targets in $BUILD_DIR"
  for t in "${unit_targets[@]}"; do targets+=(--target "$t"); done
fi

log "build $BUILD_DIR with $JOBS jobs"
cmake --build "$BUILD_DIR" --parallel "$JOBS" "${targets[@]}"
log "ok: $BUILD_DIR"
