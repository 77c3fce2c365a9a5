#!/usr/bin/env bash
# Fuzzes the pgoutput decoder (and the CopyBoth frames and COPY text rows) alone for SECONDS
# (default 60): scripts/fuzz.sh SECONDS pgoutput, kept for existing callers.
#   scripts/fuzz-pgoutput.sh [SECONDS]
set -euo pipefail
case "${1:-}" in
  -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz-pgoutput: SECONDS must be a whole number, not '$seconds' (see --help)" >&2; exit 2; }
exec "$(dirname "$0")/fuzz.sh" "$seconds" pgoutput
