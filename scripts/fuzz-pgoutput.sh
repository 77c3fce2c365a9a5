#!/usr/bin/env bash
# Fuzzes the pgoutput decoder (and the COPY text rows of the blocking snapshot) for SECONDS
# (default 60) with libFuzzer.
#   scripts/fuzz-pgoutput.sh [SECONDS]
# Builds tests/fuzz/pgoutput_fuzz with clang-14 in build-fuzz, seeds a corpus from the golden
# frames (one binary file per frame line) and tests/fuzz/regressions/pgoutput, then runs.
# Crashers are written to build-fuzz/pgoutput-artifacts/; copy them into
# tests/fuzz/regressions/pgoutput/ once fixed.
set -euo pipefail
case "${1:-}" in
  -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz-pgoutput: SECONDS must be a whole number, not '$seconds' (see --help)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz

CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCPPCDC_FUZZ=ON -DCPPCDC_TESTS=OFF >/dev/null
cmake --build "$build" --target pgoutput_fuzz

unhex() { perl -e 'print pack("H*", $ARGV[0])' "$1"; }

corpus=$build/pgoutput-corpus
artifacts=$build/pgoutput-artifacts
mkdir -p "$corpus" "$artifacts"
n=0
for frames in "$root"/tests/golden/postgres/*.frames; do
  [ -e "$frames" ] || continue
  while IFS= read -r line; do
    line=${line%$'\r'}
    [ -z "$line" ] && continue
    [ "${line:0:1}" = "#" ] && continue
    n=$((n + 1))
    # the frame as is, and its pgoutput payload (after the 25-byte 'w' header) on its own
    unhex "$line" >"$corpus/$(basename "$frames" .frames)-$n"
    if [ "${line:0:2}" = "77" ] && [ ${#line} -gt 50 ]; then
      unhex "${line:50}" >"$corpus/$(basename "$frames" .frames)-$n-payload"
    fi
  done <"$frames"
done
for f in "$root"/tests/fuzz/regressions/pgoutput/*; do
  [ "$(basename "$f")" = README ] && continue
  [ -f "$f" ] && cp "$f" "$corpus/regression-$(basename "$f")"
done

# libFuzzer is chatty (it prints its recommended dictionary at the end): keep its output in a
# log and show the summary, or the tail of the log when it found something.
log_file="$build/fuzz-pgoutput.log"
if "$build/tests/fuzz/pgoutput_fuzz" "$corpus" -max_total_time="$seconds" -max_len=65536 \
     -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log_file" 2>&1; then
  grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log_file" || true
  echo "fuzz: no crash in ${seconds}s (log: $log_file)"
else
  tail -n 60 "$log_file"
  echo "fuzz: FAILED; the crashing input is in $artifacts (log: $log_file)" >&2
  exit 1
fi
