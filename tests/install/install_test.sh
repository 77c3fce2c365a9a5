#!/usr/bin/env bash
# What an embedder or packager gets (ctest label install; scripts/test.sh runs it):
#   1. the package build (scripts/package.sh --build-only: Release, the project's default
#      options, so warnings are not errors and there are no fault points) configures and
#      builds the binary and the libraries in build-pkg/ of the source tree. The package test
#      (package_test.sh) builds its packages there too, so CI makes one Release build; the
#      directory is kept, so a rerun is incremental (ccache is used when installed);
#   2. `cmake --install` to a fresh temporary prefix installs the binary, the libraries, the
#      public headers, the CMake package and cppcdc.pc, and none of src/'s private headers;
#   3. neither the installed binary nor the libraries carry a fault point: no point name from
#      src/ and not the CPPCDC_FAULT_POINT variable's name (when REFERENCE_BINARY is given and
#      was built with fault points, the same search must find them there, so the search works);
#   4. examples/ configures and builds out of tree against the prefix (find_package(cppcdc),
#      cppcdc::cppcdc), without a path into the source tree, and the example runs;
#   5. the example compiles and links with `pkg-config --cflags --libs cppcdc` alone.
#
# Usage: install_test.sh SOURCE_DIR WORK_DIR [REFERENCE_BINARY REFERENCE_HAS_FAULT_POINTS]
#   (WORK_DIR: the build's logs)
# Jobs: CPPCDC_JOBS (default 2). CPPCDC_NO_CCACHE=1: no ccache.
set -euo pipefail

log() { printf '[install-test] %s\n' "$*"; }
die() { printf '[install-test] FAIL: %s\n' "$*" >&2; exit 1; }

(($# == 2 || $# == 4)) || die "usage: $0 SOURCE_DIR WORK_DIR [REFERENCE_BINARY ON|OFF]"
SRC=$(cd "$1" && pwd)
WORK=$2
REF_BIN=${3:-}
REF_FAULTS=${4:-OFF}
JOBS=${CPPCDC_JOBS:-2}
BUILD=$SRC/build-pkg

mkdir -p "$WORK"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/cppcdc-install-test.XXXXXX")
trap 'rm -rf -- "$TMP"' EXIT
PREFIX=$TMP/prefix

generator="Unix Makefiles"
command -v ninja >/dev/null && generator=Ninja
gen=(-G "$generator")
launcher=()
if command -v ccache >/dev/null && [[ -z "${CPPCDC_NO_CCACHE:-}" ]]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$SRC}
fi

# 1. the package build: what it installs is what the packages hold. Its options are reset to
# their defaults on every run (package.sh), so the cache shows the defaults.
log "scripts/package.sh --build-only (build in $BUILD, log: $WORK/build.log)"
CPPCDC_JOBS=$JOBS "$SRC/scripts/package.sh" --build-only >"$WORK/build.log" 2>&1 ||
  { tail -n 60 "$WORK/build.log"; die "Release build (log: $WORK/build.log)"; }
grep -qx 'CMAKE_BUILD_TYPE:STRING=Release' "$BUILD/CMakeCache.txt" || die "$BUILD is not Release"
for opt in CPPCDC_WERROR CPPCDC_FAULT_POINTS; do
  grep -qx "$opt:BOOL=OFF" "$BUILD/CMakeCache.txt" || die "$opt is not OFF by default"
done
warnings=$(grep -c 'warning:' "$WORK/build.log" || true)
log "built ($warnings compiler warning lines in $WORK/build.log)"

# 2. install
log "install to $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" 2>&1 ||
  { cat "$WORK/install.log"; die "cmake --install"; }
config=$(find "$PREFIX" -path '*/cmake/cppcdc/cppcdcConfig.cmake' | head -n 1)
pc=$(find "$PREFIX" -name cppcdc.pc | head -n 1)
[[ -x "$PREFIX/bin/cppcdc" ]] || die "bin/cppcdc is not installed"
[[ -f "$PREFIX/include/cppcdc/runtime.hpp" ]] || die "include/cppcdc/runtime.hpp is not installed"
[[ -n "$config" ]] || die "no cmake/cppcdc/cppcdcConfig.cmake installed"
[[ -f "$(dirname "$config")/cppcdcConfigVersion.cmake" ]] || die "no cppcdcConfigVersion.cmake"
[[ -n "$pc" ]] || die "no cppcdc.pc installed"
libs=$(find "$PREFIX" -name 'libcppcdc*.a' | sort)
grep -q 'libcppcdc_core.a$' <<<"$libs" || die "libcppcdc_core.a is not installed"
# Private headers stay private.
stray=$(find "$PREFIX/include" -type f ! -path "$PREFIX/include/cppcdc/*")
[[ -z "$stray" ]] || die "headers installed outside include/cppcdc: $stray"
"$PREFIX/bin/cppcdc" version >/dev/null || die "the installed cppcdc does not run"
log "installed: bin/cppcdc, $(wc -l <<<"$libs") libraries, headers, CMake package, cppcdc.pc"

# 3. no fault points in the release binary and libraries
# The points are the statements CPPCDC_FAULT_POINT("name"); (not the macro's comments).
mapfile -t points < <(grep -rhE '^\s*CPPCDC_FAULT_POINT\("[^"]+"\);' "$SRC/src" |
  sed -E 's/.*\("([^"]+)"\).*/\1/' | sort -u)
((${#points[@]} > 0)) || die "found no CPPCDC_FAULT_POINT(\"...\") in $SRC/src"
needles=("${points[@]}" CPPCDC_FAULT_POINT)
carriers() { # file: prints the needles found in it
  local n
  for n in "${needles[@]}"; do
    if LC_ALL=C grep -aqF -- "$n" "$1"; then printf '%s ' "$n"; fi
  done
}
if [[ -n "$REF_BIN" && "$REF_FAULTS" == ON ]]; then
  [[ -f "$REF_BIN" ]] || die "reference binary $REF_BIN does not exist"
  found=$(carriers "$REF_BIN")
  for n in "${needles[@]}"; do
    [[ " $found" == *" $n "* ]] ||
      die "'$n' is not found in $REF_BIN, built with fault points: the search cannot work"
  done
  log "the search finds all ${#needles[@]} fault point strings in $REF_BIN (built with them)"
fi
for f in "$PREFIX/bin/cppcdc" $libs; do
  found=$(carriers "$f")
  [[ -z "$found" ]] || die "$f carries fault points: $found"
done
log "no fault point in bin/cppcdc or the libraries (${#points[@]} names searched: ${points[*]})"

# 4. examples/ out of tree against the installed package
log "examples/ against $PREFIX with find_package(cppcdc)"
cmake -S "$SRC/examples" -B "$TMP/examples" "${gen[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$TMP/ex-configure.log" 2>&1 ||
  { cat "$TMP/ex-configure.log"; die "examples/ does not configure against $PREFIX"; }
found_dir=$(sed -n 's/^cppcdc_DIR:PATH=//p' "$TMP/examples/CMakeCache.txt")
[[ "$(cd "$found_dir" && pwd -P)" == "$(cd "$(dirname "$config")" && pwd -P)" ]] ||
  die "find_package(cppcdc) found $found_dir, not the package under $PREFIX"
cmake --build "$TMP/examples" --parallel "$JOBS" >"$TMP/ex-build.log" 2>&1 ||
  { cat "$TMP/ex-build.log"; die "examples/ does not build against $PREFIX"; }
reach=$(grep -oE -- "-(I|isystem) *$SRC[^ ]*" "$TMP/examples/compile_commands.json" || true)
[[ -z "$reach" ]] || die "the out-of-tree example build reaches into the source tree: $reach"
run_example() { # binary: without arguments the example prints its usage and exits 2
  local rc=0 out
  out=$("$1" 2>&1) || rc=$?
  ((rc == 2)) && [[ "$out" == *usage:* ]] || die "$1 did not run as expected (exit $rc): $out"
}
run_example "$TMP/examples/example_embedded_consumer"
log "example_embedded_consumer built with find_package(cppcdc) and runs"

# 5. the same example with pkg-config alone
command -v pkg-config >/dev/null || die "pkg-config not found (scripts/install-deps.sh installs it)"
pc_flags=$(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags --libs cppcdc) ||
  die "pkg-config --cflags --libs cppcdc failed"
pc_includedir=$(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --variable=includedir cppcdc)
[[ "$(cd "$pc_includedir" && pwd -P)" == "$(cd "$PREFIX/include" && pwd -P)" ]] ||
  die "cppcdc.pc's includedir $pc_includedir is not $PREFIX/include"
log "pkg-config: $pc_flags"
# shellcheck disable=SC2086  # the flags are words
${CXX:-c++} -std=c++20 -O1 "$SRC/examples/embedded_consumer.cpp" -o "$TMP/pc_example" $pc_flags ||
  die "the example does not build with pkg-config's flags"
run_example "$TMP/pc_example"
log "example built with pkg-config --cflags --libs cppcdc and runs"
log "ok"
