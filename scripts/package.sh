#!/usr/bin/env bash
# Build the Debian packages of cppcdc with CPack (docs/packaging.md).
#
# Usage: scripts/package.sh [--build-dir DIR] [--output DIR] [--build-only]
#   --build-dir   the Release build (default build-pkg/ in the repository); kept, so a rerun
#                 only rebuilds what changed
#   --output      where the packages go (default DIR/packages of the build); the .deb files
#                 of an earlier run there are replaced
#   --build-only  configure and build, no packages (tests/install/install_test.sh installs
#                 this build with `cmake --install --prefix`, so CI builds Release once)
#
# Produces cppcdc_<version>-1_<arch>.deb (the binary in /usr/bin, the systemd unit
# cppcdc@.service, the man page, an example configuration; postinst adds the system user
# cppcdc) and cppcdc-dev_<version>-1_<arch>.deb (static libraries, headers, the CMake package
# and cppcdc.pc). The build is Release with prefix /usr and Debian's hardening flags
# (dpkg-buildflags, hardening=+all) and the project's default options (every build option
# but CPPCDC_TESTS, which is OFF, reset to its default on each run: no fault points, warnings
# not errors); the binary's Depends come from dpkg-shlibdeps. Needs
# cmake, ninja, dpkg-dev and file (scripts/install-deps.sh installs them), not root.
# Install with: dpkg -i cppcdc_*.deb   (apt-get install ./cppcdc_*.deb also pulls in Depends)
# Jobs: CPPCDC_JOBS (default nproc). ccache is used when installed (CPPCDC_NO_CCACHE=1: not).
set -euo pipefail

log() { printf '[package] %s\n' "$*"; }
die() { printf '[package] ERROR: %s\n' "$*" >&2; exit 1; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build-pkg
OUT=""
build_only=0
while (($#)); do
  a=$1
  shift
  case "$a" in
    --build-dir) (($#)) || die "--build-dir needs a directory"; BUILD=$1; shift ;;
    --output) (($#)) || die "--output needs a directory"; OUT=$1; shift ;;
    --build-only) build_only=1 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$a' (see --help)" ;;
  esac
done
OUT=${OUT:-$BUILD/packages}
JOBS=${CPPCDC_JOBS:-$(nproc)}

tools=(cmake ninja dpkg-buildflags)
((build_only)) || tools+=(cpack dpkg-shlibdeps dpkg-deb file)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || die "$tool not found; run scripts/install-deps.sh"
done

# Debian's compiler and linker hardening (stack protector, _FORTIFY_SOURCE, format checks,
# full RELRO); the build type's -O3 follows and wins over -O2. No -g (the binary is stripped)
# and no -ffile-prefix-map (it names the checkout, so ccache could not share objects between
# clones).
buildflag() {
  DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1" |
    tr ' ' '\n' | { grep -vE '^(-g|-ffile-prefix-map=.*)?$' || true; } | paste -sd ' ' -
}
cxxflags="$(buildflag CPPFLAGS) $(buildflag CXXFLAGS)"
ldflags=$(buildflag LDFLAGS)

# The build options go back to their defaults (-U drops the cache entry, option() makes it
# again), whatever an earlier configure of this directory set.
cfg=(-G Ninja -U CPPCDC_WERROR -U CPPCDC_FAULT_POINTS -U CPPCDC_SANITIZE -U CPPCDC_TSAN
     -U CPPCDC_FUZZ -DCMAKE_BUILD_TYPE=Release -DCPPCDC_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr
     "-DCMAKE_CXX_FLAGS=$cxxflags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags"
     # cpack installs what `--target cppcdc` built; the examples, tools and benchmarks that
     # `all` would build are not packaged.
     -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON)
if command -v ccache >/dev/null && [[ -z "${CPPCDC_NO_CCACHE:-}" ]]; then
  cfg+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
fi
if [[ -f "$BUILD/CMakeCache.txt" ]] &&
  ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD/CMakeCache.txt"; then
  log "$BUILD was configured with another generator; removing it"
  rm -rf -- "$BUILD"
fi

log "configure $BUILD (Release, prefix /usr, flags: $cxxflags; $ldflags)"
cmake -S "$ROOT" -B "$BUILD" "${cfg[@]}" >/dev/null
log "build cppcdc and its libraries"
cmake --build "$BUILD" --parallel "$JOBS" --target cppcdc
if ((build_only)); then
  log "built in $BUILD (no packages: --build-only)"
  exit 0
fi

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f -- "$OUT"/cppcdc_*.deb "$OUT"/cppcdc-dev_*.deb
log "cpack -G DEB -> $OUT"
cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$OUT/_cpack" >"$OUT/cpack.log" 2>&1 ||
  { cat "$OUT/cpack.log" >&2; die "cpack failed (log: $OUT/cpack.log)"; }
mv -- "$OUT"/_cpack/*.deb "$OUT"/
rm -rf -- "$OUT/_cpack"

shopt -s nullglob
debs=("$OUT"/cppcdc_*.deb "$OUT"/cppcdc-dev_*.deb)
((${#debs[@]} == 2)) || die "expected cppcdc and cppcdc-dev packages in $OUT, found: ${debs[*]}"
for deb in "${debs[@]}"; do
  fields=$(dpkg-deb -f "$deb" Package Version Architecture Depends | paste -sd ' ' -)
  log "$(basename "$deb"): $fields"
done
if command -v lintian >/dev/null; then
  log "lintian:"
  lintian --no-tag-display-limit "${debs[@]}" || true
fi
printf '%s\n' "${debs[@]}"
