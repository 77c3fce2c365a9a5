#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (every parser of untrusted bytes) for SECONDS in
# all, split evenly between the targets run (default: CPPCDC_FUZZ_SECONDS, else 60).
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# TARGETs: pgoutput event checkpoint incremental_state copy_text config transform_path
# binlog_event binlog_rows json_binary avro_codec debezium_json cloudevents json_schema
# protobuf_codec glue_frame (default: all).
# Builds them with clang-14 in build-fuzz/ (ccache when installed). Each target starts from its
# working corpus build-fuzz/fuzz-work/TARGET/corpus (kept between runs; what libFuzzer finds
# goes there), tests/fuzz/corpus/TARGET and tests/fuzz/regressions/TARGET; pgoutput also
# from the golden frames. An input that crashes, hangs (over 10 s), leaks or runs out of memory
# is copied into tests/fuzz/regressions/TARGET/ (ctest replays that directory in every run:
# fix the parser, add a unit test, commit the input) and the script fails once every target
# has run. Logs: build-fuzz/fuzz-work/TARGET/fuzz.log.
set -euo pipefail
case "${1:-}" in
  -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
all_targets=(pgoutput event checkpoint incremental_state copy_text config transform_path
  binlog_event binlog_rows json_binary avro_codec debezium_json cloudevents json_schema
  protobuf_codec glue_frame)
seconds=${CPPCDC_FUZZ_SECONDS:-60}
if (($#)) && [[ $1 =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz: SECONDS must be a whole number, not '$seconds' (see --help)" >&2; exit 2; }
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$t' (known: ${all_targets[*]})" >&2; exit 2; }
done
per_target=$((seconds / ${#targets[@]}))
((per_target > 0)) || per_target=1

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
cfg=()
if command -v ccache >/dev/null && [[ -z "${CPPCDC_NO_CCACHE:-}" ]]; then
  cfg+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  # With -g the compiler's working directory goes into the debug info, and ccache would hash
  # it, so a clone elsewhere (CI's) would miss every object; this keeps the hits (the debug
  # info of an object from the cache may then name the other clone's directory).
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
fi

CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCPPCDC_FUZZ=ON -DCPPCDC_TESTS=OFF "${cfg[@]}" >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "${t}_fuzz"); done
cmake --build "$build" --parallel "${CPPCDC_JOBS:-$(nproc)}" "${build_targets[@]}"

unhex() { perl -e 'print pack("H*", $ARGV[0])' "$1"; }

# pgoutput: every golden frame as it is, and its pgoutput payload (after the 25-byte 'w'
# header) on its own.
seed_golden_frames() { # dir
  local n=0 frames line
  for frames in "$root"/tests/golden/postgres/*.frames; do
    [ -e "$frames" ] || continue
    while IFS= read -r line; do
      line=${line%$'\r'}
      [ -z "$line" ] && continue
      [ "${line:0:1}" = "#" ] && continue
      n=$((n + 1))
      unhex "$line" >"$1/$(basename "$frames" .frames)-$n"
      if [ "${line:0:2}" = "77" ] && [ ${#line} -gt 50 ]; then
        unhex "${line:50}" >"$1/$(basename "$frames" .frames)-$n-payload"
      fi
    done <"$frames"
  done
}

failed=()
for t in "${targets[@]}"; do
  work=$build/fuzz-work/$t
  corpus=$work/corpus
  artifacts=$work/artifacts
  regressions=$root/tests/fuzz/regressions/$t
  mkdir -p "$corpus" "$artifacts" "$regressions"
  rm -f -- "$artifacts"/*
  dirs=("$corpus" "$root/tests/fuzz/corpus/$t" "$regressions")
  extra=()
  if [ "$t" = pgoutput ]; then
    mkdir -p "$work/golden"
    seed_golden_frames "$work/golden"
    dirs+=("$work/golden")
    extra+=(-max_len=65536)
  fi
  # libFuzzer is chatty (it prints its recommended dictionary at the end): keep its output in a
  # log and show the summary, or the tail of the log when it found something.
  log_file=$work/fuzz.log
  echo "fuzz: $t for ${per_target}s"
  if "$build/tests/fuzz/${t}_fuzz" "${dirs[@]}" -max_total_time="$per_target" -timeout=10 \
       "${extra[@]}" -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log_file" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log_file" || true
  else
    tail -n 60 "$log_file"
    kept=0
    for f in "$artifacts"/*; do
      [ -f "$f" ] || continue
      cp -- "$f" "$regressions/"
      echo "fuzz: $t: kept $(basename "$f") in tests/fuzz/regressions/$t/" >&2
      kept=1
    done
    ((kept)) || echo "fuzz: $t failed without leaving an input (log: $log_file)" >&2
    failed+=("$t")
  fi
done

if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]}; the inputs are in tests/fuzz/regressions/<target>/ (logs: $build/fuzz-work/<target>/fuzz.log)" >&2
  exit 1
fi
echo "fuzz: no failure in ${#targets[@]} targets, ${per_target}s each"
