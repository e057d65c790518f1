#!/usr/bin/env bash
# `tarn demo` as a user runs it: a small system under a limit that makes it
# spill must finish with a right answer (the demo checks it and says "ok")
# and report bytes written to and read from the disk; bad command lines
# and bad TARN_ variables (for `tarn bench` too) exit with status 2 and
# say why; Ctrl-C stops it cleanly with status 130; output that cannot be
# written fails the command (`tarn help` and `version` too), and a closed
# stdout is no file's descriptor. Under a
# pseudo-terminal (script(1), when installed) the status line is drawn
# too.
# Usage: test_demo.sh TARN
. "$(dirname "$0")/lib.sh" "$@"

# mib LABEL OUTPUT: the number of MiB before LABEL in OUTPUT's pool lines.
mib() {
  sed -n "s/.* \([0-9.]*\) MiB $1.*/\1/p" <<<"$2" | head -n 1
}

# Cholesky (the default), then LU under a limit of its panel's tile
# column alone (7 tiles of 80000 bytes, each 20 pages of 4 KiB: 560 KiB;
# the whole matrix 3.7 MiB).
for solver in cholesky lu; do
  limit=1M
  [ "$solver" = lu ] && limit=$((7 * $(getconf PAGESIZE) * ((80000 + $(getconf PAGESIZE) - 1) / $(getconf PAGESIZE))))
  out=$("$tarn" demo --size 700 --tile 100 --mem-limit "$limit" --solver $solver 2>&1)
  status=$?
  echo "$out"
  [ "$status" -eq 0 ] || fail "demo $solver: exit status $status"
  grep -q "^tarn demo: ok$" <<<"$out" || fail "demo $solver: no 'tarn demo: ok'"
  written=$(mib "written" "$out")
  read_back=$(mib "read back" "$out")
  awk -v w="${written:-0}" -v r="${read_back:-0}" 'BEGIN { exit !(w > 0 && r > 0) }' ||
    fail "demo $solver: nothing written or read back (written '$written', read '$read_back')"
done
grep -q "^tarn demo: A x = b by LU" <<<"$out" || fail "demo lu: not by LU: $out"
grep -q "(LU solve)" <<<"$out" || fail "demo lu: no LU phase: $out"

# The smallest system, 1 x 1 (x_true = sin(0) = 0, so b, x and the
# residual are 0), is solved right by both solvers; small systems run
# under the default limit, which is what a task needs when a quarter of
# the matrix is less (it refused them).
for args in "--size 1 --mem-limit 1M" "--size 1" "--size 100" \
  "--size 300 --tile 200"; do
  for solver in cholesky lu; do
    out=$("$tarn" demo $args --solver $solver 2>&1) ||
      fail "demo $args $solver: exit status $?"$'\n'"$out"
    grep -q "^tarn demo: ok$" <<<"$out" || fail "demo $args $solver: $out"
  done
done

if command -v script >/dev/null; then
  out=$(script -qec "$tarn demo --size 400 --tile 100 --mem-limit 1M" /dev/null 2>&1)
  status=$?
  [ "$status" -eq 0 ] || fail "demo on a terminal: exit status $status"$'\n'"$out"
  grep -q "tarn demo: ok" <<<"$out" || fail "demo on a terminal: no 'ok'"
fi

# Ctrl-C half a second into the default run (8192 x 8192 under 128 MiB,
# several seconds), once its first line says it handles it: the running
# tasks end, the rest are cancelled, the demo says so and exits 130 soon
# after, without its report.
log=$(mktemp)
"$tarn" demo >"$log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  grep -q "^tarn demo: A x = b" "$log" && break
  sleep 0.1
done
sleep 0.5
kill -INT "$pid"
signalled=$(date +%s)
wait "$pid"
status=$?
took=$(($(date +%s) - signalled))
out=$(cat "$log")
rm -f "$log"
[ "$status" -eq 130 ] || fail "demo interrupted: exit status $status, not 130"$'\n'"$out"
grep -q "^tarn demo: interrupted after" <<<"$out" ||
  fail "demo interrupted: no 'interrupted after' in: $out"
grep -q "ok$" <<<"$out" && fail "demo interrupted: it reported 'ok'"
[ "$took" -le 60 ] || fail "demo interrupted: it took $took s to stop"

# bad ARGS... REASON: the demo refuses ARGS with status 2 and REASON.
bad() {
  local reason=${*: -1} out status
  out=$("$tarn" demo "${@:1:$#-1}" 2>&1)
  status=$?
  [ "$status" -eq 2 ] || fail "demo ${*:1:$#-1}: exit status $status, not 2"
  grep -qF -- "$reason" <<<"$out" || fail "demo ${*:1:$#-1}: no '$reason' in: $out"
}
bad --size 0 "--size must be"
bad --size 12x "--size must be"
bad --tile -4 "--tile must be"
bad --workers 2000 "--workers must be"
bad --mem-limit 5Q "--mem-limit must be"
bad --size 1024 --tile 512 --mem-limit 1M "must hold the three tiles"
# three tiles of 80000 bytes are 240000 bytes, but 20 pages each (245760)
bad --size 300 --tile 100 --mem-limit 240000 "must hold the three tiles"
bad --size 700 --tile 100 --mem-limit 556K --solver lu "must hold LU's panel"
bad --solver qr "--solver must be cholesky or lu"
bad --frobnicate 1 "unknown option '--frobnicate'"
# the name is checked before the value (both were "an option and its
# value" until 2026-12-05)
bad --bogus "unknown option '--bogus'"
bad foo "unknown option 'foo'"
bad --size "--size needs a value"

# An unusable spill directory: status 1, and the message says where.
out=$(TARN_SPILL_DIR=/nonexistent/tarn-demo-test "$tarn" demo --size 400 --tile 100 2>&1)
status=$?
[ "$status" -eq 1 ] || fail "demo with a missing spill directory: exit status $status"
grep -qF "could not be made in /nonexistent/tarn-demo-test" <<<"$out" ||
  fail "demo with a missing spill directory: no hint in: $out"

# A variable of tarn's that is not valid: status 2, and the message names
# it and its value (bench and demo alike).
for cmd in "demo --size 400 --tile 100" "bench array --sizes 64 --samples 3"; do
  out=$(TARN_WORKERS=zero "$tarn" $cmd 2>&1)
  status=$?
  [ "$status" -eq 2 ] || fail "$cmd with TARN_WORKERS=zero: exit status $status"
  grep -qF 'TARN_WORKERS="zero" in the environment is not valid' <<<"$out" ||
    fail "$cmd with TARN_WORKERS=zero: no message in: $out"
done

out=$("$tarn" demo --help 2>&1)
[ $? -eq 0 ] && grep -q "usage: tarn demo" <<<"$out" || fail "demo --help"

# `tarn version --help` (and -h) is the usage, not a refused argument.
for help in --help -h; do
  out=$("$tarn" version $help 2>/dev/null)
  status=$?
  [ "$status" -eq 0 ] || fail "version $help: exit status $status, not 0"
  grep -q "^usage: tarn version" <<<"$out" || fail "version $help: no usage in: $out"
done

# A closed standard output: /dev/null takes descriptor 1, not the spill
# file. Until 2026-12-05 printf wrote into the spill file (on /dev/shm,
# which is not opened O_DIRECT), and the solve read a checksum error.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  out=$(TARN_SPILL_DIR=/dev/shm "$tarn" demo --size 512 --tile 64 2>&1 >&-)
  status=$?
  [ "$status" -eq 0 ] || fail "demo with stdout closed: exit status $status"$'\n'"$out"
fi

# Output that cannot be written (a full disk): status 1 and a message on
# stderr (status 0, or 1 and no word, until 2026-12-05).
if [ -w /dev/full ]; then
  for cmd in "demo --size 64 --tile 32" "demo --help" "help" "version"; do
    out=$("$tarn" $cmd 2>&1 >/dev/full)
    status=$?
    [ "$status" -eq 1 ] || fail "$cmd >/dev/full: exit status $status, not 1"
    grep -q "^tarn: write error: " <<<"$out" || fail "$cmd >/dev/full: no message in: $out"
  done
fi

finish "tarn demo solved its system under the limit and refused bad command lines"
