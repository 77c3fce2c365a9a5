#!/usr/bin/env bash
# A short account of the tests that failed in one ctest run, for the end of a long log: the
# name of each failed test and the first lines of each of its googletest failures (or the
# last lines of its output when it failed another way: a crash, a timeout, a script).
#
# Usage: scripts/ctest-digest.sh LABEL BUILD_DIR
#   LABEL      printed before every line (the step that ran ctest, e.g. "ctest-integration")
#   BUILD_DIR  the ctest build directory; its Testing/Temporary/LastTest.log is read
# Prints nothing when the log has no failed test, or when there is no log. Always exits 0.
set -uo pipefail

label=${1:?LABEL}
log=${2:?BUILD_DIR}/Testing/Temporary/LastTest.log
[[ -f "$log" ]] || exit 0

# LastTest.log keeps each test's block whole: "N/M Testing: NAME", its output between two
# dashed lines, then "Test Passed." or "Test Failed." (or a timeout/exception line).
awk -v label="$label" '
  function flush(   i, n, shown) {
    if (name == "" || !failed) return
    printf "[%s] FAILED %s (%s)\n", label, name, took
    shown = 0
    for (i = 1; i <= nlines && shown < 24; i++) {
      if (lines[i] ~ /: Failure$/ || lines[i] ~ /^\[  FAILED  \]/) {
        for (n = i; n <= nlines && n < i + 8 && shown < 24; n++) {
          printf "[%s]   %s\n", label, substr(lines[n], 1, 300); shown++
        }
        i = n - 1
      }
    }
    if (shown == 0) {  # no googletest failure lines: the end of the output says more
      for (i = (nlines > 12 ? nlines - 11 : 1); i <= nlines; i++)
        printf "[%s]   %s\n", label, substr(lines[i], 1, 300)
    }
  }
  /^[0-9]+\/[0-9]+ Testing: / { flush(); name = $3; failed = 0; nlines = 0; in_out = 0; next }
  /^Output:$/ { in_out = 1; getline; next }  # the dashed line after it
  /^<end of output>$/ { in_out = 0; next }
  in_out { lines[++nlines] = $0; next }
  /^Test time = / { took = $4 " s"; next }
  /^Test Failed\./ { failed = 1 }
  END { flush() }
' "$log"
exit 0
