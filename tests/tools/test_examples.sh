#!/usr/bin/env bash
# The example programs' command lines and output, as a user runs them:
# --help and -h print the usage on stdout (status 0), extra arguments are
# refused with it (status 2), output that cannot be written fails the
# program (status 1), a closed stdout is no file's descriptor, and
# out_of_core refuses a limit below three tiles in whole pages and removes
# its temporary directory when a call fails. Small sizes: seconds.
# Usage: test_examples.sh MATRICES (the matrices example; the others are
# beside it)
. "$(dirname "$0")/lib.sh" "$@"
examples=$(dirname "$tarn")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# --help and -h: the usage on stdout, status 0 (the usage on stderr and
# status 2 until 2026-12-05); also with stdout closed (/dev/null takes
# descriptor 1: no write error).
for name in gaussian heat least_squares matrices out_of_core tasks; do
  for help in --help -h; do
    out=$("$examples/$name" $help 2>/dev/null)
    status=$?
    [ "$status" -eq 0 ] || fail "$name $help: exit status $status, not 0"
    grep -q "^usage: $name " <<<"$out" || fail "$name $help: no usage on stdout: $out"
  done
  err=$("$examples/$name" --help 2>&1 >&-)
  status=$?
  [ "$status" -eq 0 ] && [ -z "$err" ] ||
    fail "$name --help, stdout closed: exit status $status: $err"
done

# Extra arguments: the usage on stderr, status 2 (ignored until
# 2026-12-05).
for cmd in "matrices 10 10 5 extra junk" "tasks 8 100 1" \
  "out_of_core 64 32 1 $scratch/kept extra"; do
  out=$("$examples"/$cmd 2>&1)
  status=$?
  [ "$status" -eq 2 ] || fail "$cmd: exit status $status, not 2"
  grep -q "^usage: " <<<"$out" || fail "$cmd: no usage in: $out"
done

# Output that cannot be written (a full disk): status 1 and a message.
if [ -w /dev/full ]; then
  out=$("$examples/matrices" 10 10 5 2>&1 >/dev/full)
  status=$?
  [ "$status" -eq 1 ] || fail "matrices >/dev/full: exit status $status, not 1"
  grep -q "^matrices: write error: " <<<"$out" ||
    fail "matrices >/dev/full: no message in: $out"
fi

# tasks compares its peak with what its buffers take, both in whole pages
# as the pool counts them ("peak 0.1 MiB of 0.0 MiB made" for chunks of
# one double until 2026-12-05).
out=$("$examples/tasks" 100 1 2>&1) || fail "tasks 100 1: exit status $?: $out"
figures=$(sed -n 's/.*peak \([0-9.]*\) MiB of the \([0-9.]*\) MiB made.*/\1 \2/p' <<<"$out")
[ "$(wc -l <<<"$figures")" -eq 2 ] && awk '{ if (!($2 > 0 && $1 <= $2)) exit 1 }' <<<"$figures" ||
  fail "tasks 100 1: no peak within what was made in: $out"

# Three tiles of 209 x 209 doubles are 1048344 bytes, under 1 MiB, but
# 86 pages of 4 KiB each, over it: refused (status 2), not failed out of
# memory (status 1) after the run began.
out=$(TMPDIR=$scratch "$examples/out_of_core" 418 209 1 2>&1)
status=$?
[ "$status" -eq 2 ] || fail "out_of_core 418 209 1: exit status $status, not 2: $out"
grep -qF "must hold the three tiles a task pins" <<<"$out" ||
  fail "out_of_core 418 209 1: no reason in: $out"

# A call that fails (r.npy, 512 KiB, past a file size limit of 64 KiB):
# status 1, and the temporary directory is gone (it was left with its
# files until 2026-12-05).
mkdir "$scratch/tmp"
out=$(
  trap '' XFSZ
  ulimit -f 64
  TMPDIR=$scratch/tmp TARN_SPILL_DIR=$scratch/tmp \
    exec "$examples/out_of_core" 256 64 1 2>&1
)
status=$?
[ "$status" -eq 1 ] || fail "out_of_core past a file size limit: exit status $status, not 1: $out"
left=$(ls -A "$scratch/tmp")
[ -z "$left" ] || fail "out_of_core past a file size limit: left $left"

finish "the examples' command lines, output and temporary files are as they must be"
