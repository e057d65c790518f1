# lib.sh: what the tests of the `tarn` command share. Sourced, not run, as
#   . "$(dirname "$0")/lib.sh" "$@"
# It checks that the first argument is an executable and sets `tarn` to its
# absolute path (so a test may change directory), sets `failures` to 0, and
# defines `fail MESSAGE` (counts a failure, goes on) and `finish SUMMARY`
# (exits 1 after the failures, else prints SUMMARY and exits 0).
set -uo pipefail
if [ ! -x "${1:-}" ]; then
  echo "usage: $(basename "$0") TARN (an executable)"
  exit 1
fi
tarn=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "$1"
  exit 0
}
