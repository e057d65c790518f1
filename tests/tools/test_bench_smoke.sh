#!/usr/bin/env bash
# The benchmark suites of array, stencil, linalg and files at small sizes
# (and the pool suite's eviction rows),
# run as README's first command runs them: each suite checks tarn's results
# against its C loop or LAPACKE (files: the matrices loaded against the
# one saved, the sums of the loaded and opened ones against its sum, the
# file of 2A+1 against 2 sum(A) + N^2) before
# it measures, and exits non-zero on a difference. N=600 is 2 x 2 tiles of 300 (BENCH.md's tiling rule), so the
# multi-tile paths run too. No figure is judged: goals met or not, the run
# passes; only a failed check, a crash or a missing row fails it.
# Usage: test_bench_smoke.sh TARN
. "$(dirname "$0")/lib.sh" "$@"
json=$(mktemp)
trap 'rm -f "$json"' EXIT

# suite NAME ROW...: runs the suite at N=100 and 600 and expects each ROW
# (a fixed string) in its table.
suite() {
  local name=$1 out status row
  shift
  out=$("$tarn" bench "$name" --sizes 100,600 --samples 3 2>&1)
  status=$?
  [ "$status" -eq 0 ] || fail "$name: exit status $status"$'\n'"$out"
  for row in "$@"; do
    grep -qF -- "$row" <<<"$out" || fail "$name: no row '$row'"
  done
  grep -q '^settings: ' <<<"$out" || fail "$name: no settings line"
  # the goal lines end with their count (since 2026-12-07)
  local judged missed
  judged=$(grep -Ec '   goal [<>]=.* met$' <<<"$out")
  missed=$(grep -Ec '   goal [<>]=.* NOT met$' <<<"$out")
  if [ "$judged" -gt 0 ]; then
    grep -Eq "^  $((judged - missed)) of $judged goals met( \([0-9]+ not measured\))?\$" \
      <<<"$out" || fail "$name: no count of $judged goals in:"$'\n'"$out"
  fi
}

# Bad command lines: status 2 and the option's message, nothing run
# (--sizes took a sign or spaces before a size until 2026-12-05).
for size in " 8" "+8" "1, 2" "8," "0"; do
  out=$("$tarn" bench array --sizes "$size" --samples 3 2>&1)
  status=$?
  [ "$status" -eq 2 ] || fail "--sizes '$size': exit status $status"
  grep -qF -- "--sizes must be" <<<"$out" || fail "--sizes '$size': $out"
done

# A size given twice is refused, naming the option (its rows were
# measured twice, under the same names, until 2026-12-05).
out=$("$tarn" bench array --sizes 16,64,16 --samples 3 2>&1)
status=$?
[ "$status" -eq 2 ] || fail "--sizes 16,64,16: exit status $status, not 2"
grep -qF -- "--sizes gives 16 twice" <<<"$out" || fail "--sizes 16,64,16: $out"

# A filter that matches no row says so (and measures nothing), and prints
# no heading of goals (the eager suite printed its own).
for name in array eager; do
  out=$("$tarn" bench $name --sizes 64 --samples 3 --filter 'no such row' 2>&1) ||
    fail "$name: a filter that matches nothing: exit status $?"
  grep -qF "no benchmark matched --filter 'no such row'" <<<"$out" ||
    fail "$name: a filter that matches nothing: no word of it in: $out"
  grep -q "Goals" <<<"$out" &&
    fail "$name: a filter that matches nothing: a heading of goals in: $out"
done

# A row that matched and failed says why, not that nothing matched (a
# stencil task of two 720 KB tiles under a 1 MiB limit).
out=$("$tarn" bench stencil --sizes 300 --samples 3 --mem-limit 1M \
  --filter 'tarn.*Wrap' 2>&1) && fail "a failing row: exit status 0"
grep -qF "out of memory" <<<"$out" || fail "a failing row: no reason in: $out"
if grep -qF "no benchmark matched" <<<"$out"; then
  fail "a failing row said no row matched: $out"
fi

# The settings line says what the options and the environment made.
out=$(TARN_MAX_UNFINISHED=100 "$tarn" bench array --sizes 64 --samples 3 \
  --filter 'tarn/.*add' --workers 1 --mem-limit 64M 2>&1) ||
  fail "settings: exit status $?"
grep -Eq '^settings: 1 worker, (not )?pinned, memory limit 64 MiB, at most 100 unfinished tasks, idle trim [0-9]+ ms, huge pages (on|off) \(THP [a-z]+\)$' \
  <<<"$out" || fail "settings: no settings line in:"$'\n'"$out"

# After each suite, the share of the CPU time it wanted that a hypervisor
# took (where /proc/stat is there).
if [ -r /proc/stat ]; then
  grep -Eq '^steal: the hypervisor took [0-9]+\.[0-9] % of the CPU time array wanted \(/proc/stat\)' \
    <<<"$out" || fail "steal: no steal line in:"$'\n'"$out"
fi

# And, where the process may run on two processors or more, how far
# apart the first two were before the suite and after it; the JSON file
# keeps both (since 2026-12-07).
if [ "$(nproc)" -ge 2 ]; then
  grep -Eq '^cores: a cache line.s round trip between the first two processors took [0-9]+ ns before array and [0-9]+ after' \
    <<<"$out" || fail "cores: no cores line in:"$'\n'"$out"
  "$tarn" bench array --sizes 16 --samples 3 --filter 'tarn/.*add' \
    --json "$json" >/dev/null 2>&1 || fail "cores: exit status $?"
  tr -d ' \n' <"$json" | grep -Eq '"core_round_trip_ns":\{"array":\[[0-9.]+,[0-9.]+\]\}' ||
    fail "cores: no round trips in the JSON file:"$'\n'"$(cat "$json")"
fi
# On one processor, no line (nothing to measure).
out=$(taskset -c 0 "$tarn" bench array --sizes 16 --samples 3 \
  --filter 'tarn/.*add' 2>&1) || fail "cores, one processor: exit status $?"
grep -q '^cores: ' <<<"$out" && fail "cores, one processor: a line in:"$'\n'"$out"

# And which OpenBLAS kernels ran, chosen by OpenBLAS or by the variable;
# `tarn version` says so too.
out=$(env -u OPENBLAS_CORETYPE "$tarn" bench array --sizes 64 --samples 3 \
  --filter 'tarn/.*add' 2>&1) || fail "blas: exit status $?"
grep -Eq "^blas: OpenBLAS [0-9.]+, [A-Za-z0-9]+ kernels \(OpenBLAS's choice\)$" \
  <<<"$out" || fail "blas: no line of OpenBLAS's choice in:"$'\n'"$out"
out=$(OPENBLAS_CORETYPE=Haswell "$tarn" version 2>&1) ||
  fail "version: exit status $?"
grep -Eq '^blas: OpenBLAS [0-9.]+, Haswell kernels \(set by OPENBLAS_CORETYPE\)$' \
  <<<"$out" || fail "version: no line of the variable's kernels in:"$'\n'"$out"

# A row of the linalg, array or stencil suite samples for 0.1 s at least
# unless --samples says how many: a matrix-vector product or a sum of 64
# takes microseconds, so far more than 5.
samples_of() { # JSON FILE -> the first row's sample count
  grep -o '"samples": *[0-9]*' "$1" | head -n 1 | grep -o '[0-9]*$'
}
for run in "linalg tarn/.*matvec" "array tarn/.*add"; do
  name=${run%% *} filter=${run#* }
  "$tarn" bench "$name" --sizes 64 --filter "$filter" --json "$json" \
    >/dev/null 2>&1 || fail "row time: $name: exit status $?"
  n=$(samples_of "$json")
  [ -n "$n" ] && [ "$n" -gt 5 ] ||
    fail "row time: $name: $n samples without --samples, expected more than 5"
  "$tarn" bench "$name" --sizes 64 --filter "$filter" --samples 3 \
    --json "$json" >/dev/null 2>&1 || fail "row time: $name: exit status $?"
  n=$(samples_of "$json")
  [ "$n" = 3 ] || fail "row time: $name: $n samples with --samples 3"
done

suite array "array/tarn/N=100 (block 100)/add (X + X)" \
  "array/tarn/N=600 (block 300)/transpose (permutedims)" \
  "array/tarn/N=600 (block 300)/reduce (sum)"
suite stencil "stencil/tarn/N=100 (block 100)/neighbors (Wrap)" \
  "stencil/tarn/N=600 (block 300)/multi-expr" \
  "stencil/tarn/N=600 (block 300)/alloc (neighbors Wrap)"
# The tiled peers' rows come in the rounds of their operations (StarPU's
# only where the build found it: pkg-config, as bench/CMakeLists.txt).
peers=("linalg/openmp/N=600 (block 300)/cholesky (")
if pkg-config --exists starpu-1.3 2>/dev/null; then
  peers+=("linalg/starpu/N=600 (block 300)/cholesky ("
    "linalg/starpu/N=100 (block 100)/matmul (A*A) (")
fi
suite linalg "${peers[@]}" "linalg/tarn/N=600 (block 300)/cholesky" \
  "linalg/tarn/N=600 (block 300)/lu" "linalg/tarn/N=600 (block 300)/qr" \
  "linalg/tarn/N=600 (block 300)/matmul (A*A)" \
  "linalg/tarn/N=600 (block 300)/matvec (A*x)" \
  "linalg/tarn/N=600 (block 300)/solve (A\\b via lu)" \
  "linalg/tarn/N=600 (block 300)/syrk (A'*A)" \
  "linalg/tarn/N=600 (block 300)/solve (A\\b with cholesky's L)" \
  "linalg/tarn/N=600 (block 300)/solve (A\\b with lu's factors)" \
  "linalg/tarn/N=600 (block 300)/solve (A\\b with qr's factors)" \
  "linalg/tarn/600x75 (block 75)/lu" "linalg/lapacke/75x600/qr (1 thread)" \
  "linalg/tarn/9600x75 (block 75)/qr"

# Under a memory limit below each matrix (N=600: 2.7 MiB, tiles of 0.7),
# the linalg suite still makes its inputs (in tiles) and runs; a limit
# below what LU pins is refused with what it must hold.
out=$("$tarn" bench linalg --sizes 100,600 --mem-limit 3M --samples 3 \
  --filter 'tarn/N=600.*/(cholesky|lu|qr)$|tarn/N=600.*via lu' 2>&1) ||
  fail "linalg under a limit: exit status $?"$'\n'"$out"
for row in "linalg/tarn/N=600 (block 300)/cholesky" \
  "linalg/tarn/N=600 (block 300)/lu" "linalg/tarn/N=600 (block 300)/qr" \
  "linalg/tarn/N=600 (block 300)/solve (A\\b via lu)"; do
  grep -qF -- "$row" <<<"$out" ||
    fail "linalg under a limit: no row '$row' in:"$'\n'"$out"
done
if out=$("$tarn" bench linalg --sizes 600 --mem-limit 2M --samples 3 \
  --filter 'tarn/N=600.*/lu$' 2>&1); then
  fail "linalg under 2 MiB: LU ran, where an update pins 2.1 MiB"
fi
grep -qF "(2.1 MiB): --mem-limit must hold the larger" <<<"$out" ||
  fail "linalg under 2 MiB: no word of what LU pins in:"$'\n'"$out"
# The same when LU's factors are made for the solves that use them (a
# bare "out of memory" until 2026-12-05).
if out=$("$tarn" bench linalg --sizes 600 --mem-limit 2M --samples 3 \
  --filter "tarn/N=600 .*/solve \(A.b with lu's" 2>&1); then
  fail "linalg solves under 2 MiB: LU's factors were made"
fi
grep -qF "(2.1 MiB): --mem-limit must hold the larger" <<<"$out" ||
  fail "linalg solves under 2 MiB: no word of what LU pins in:"$'\n'"$out"

# The tall and narrow shape, 16 N x N/8 (N=264: 4224 x 33, 128 tiles of
# 33 x 33, each three 4 KiB pages: a tile column of 1.5 MiB), under a
# limit below the tile column LU pins: tarn's LU row is a note, the
# others run (the suite failed on it until 2026-12-05).
out=$("$tarn" bench linalg --sizes 264 --mem-limit 1M --samples 3 \
  --filter '4224x33' 2>&1) || fail "tall LU under 1 MiB: exit status $?"$'\n'"$out"
grep -q "^linalg/tarn/4224x33 (block 33)/lu  *skipped: lu pins its panel's tile column" \
  <<<"$out" || fail "tall LU under 1 MiB: no note in:"$'\n'"$out"
for row in "linalg/lapacke/4224x33/lu (1 thread)" "linalg/tarn/4224x33 (block 33)/qr"; do
  grep -qF -- "$row" <<<"$out" || fail "tall LU under 1 MiB: no row '$row' in:"$'\n'"$out"
done

suite files "files/tarn/N=100 (block 100)/save (.npy)" \
  "files/tarn/N=600 (block 300)/load (.npy)" \
  "files/tarn/N=600 (block 300)/load (.npy, C order)" \
  "files/plain/N=600/write + fdatasync" \
  "files/tarn/N=600 (block 300)/sum under a limit (load + sum)" \
  "files/tarn/N=600 (block 300)/sum under a limit (open + sum)" \
  "files/plain/N=600/sum (read, 4 MiB buffer)" \
  "files/tarn/N=600 (block 300)/2A+1 to a file under a limit (compute + save)" \
  "files/tarn/N=600 (block 300)/2A+1 to a file under a limit (create + commit)"

# The pool suite's eviction rows, one per policy, check the bytes each pin
# read back and end with their goal line.
out=$("$tarn" bench pool --filter 'evict small' --samples 3 2>&1) ||
  fail "pool: exit status $?"$'\n'"$out"
for row in "pool/tarn/evict small (clock)" "pool/tarn/evict small (largest)" \
  "evict small: largest / clock (per eviction)"; do
  grep -qF -- "$row" <<<"$out" || fail "pool: no row '$row' in:"$'\n'"$out"
done

# One of them filtered out: no goal from its figure (it gave one).
out=$("$tarn" bench pool --filter 'evict small .largest' --samples 3 2>&1) ||
  fail "pool, one row: exit status $?"$'\n'"$out"
grep -qF "pool/tarn/evict small (clock)" <<<"$out" &&
  fail "pool, one row: the clock row ran"
grep -qF "largest / clock" <<<"$out" &&
  fail "pool, one row: a goal of a row filtered out in:"$'\n'"$out"

# time_to_load's floor alone (a filter for it matched nothing).
out=$("$tarn" bench time_to_load --filter 'empty process' --samples 3 2>&1) ||
  fail "time_to_load, the floor: exit status $?"$'\n'"$out"
grep -qF "time_to_load/true/empty process" <<<"$out" ||
  fail "time_to_load, the floor: no row in:"$'\n'"$out"

# ooc at a size of one tile: its default limit holds the three tiles a
# task pins (2/3 of the data did not from N = 210 on: out of memory).
out=$("$tarn" bench ooc --sizes 300 --samples 3 --filter 'tarn/.*limit' 2>&1) ||
  fail "ooc at N=300: exit status $?"$'\n'"$out"
for op in cholesky "matmul (A*B)"; do
  grep -qF "ooc/tarn/N=300 (block 300)/$op (limit 3 MiB)" <<<"$out" ||
    fail "ooc at N=300: no $op row under 3 MiB in:"$'\n'"$out"
done

# A closed standard output: /dev/null takes descriptor 1, not the JSON
# file, which got the table until 2026-12-05.
row='tarn/N=16.*/add'
"$tarn" bench array --sizes 16 --samples 3 --filter "$row" --json "$json" \
  >&- 2>/dev/null || fail "stdout closed: exit status $?"
[ "$(head -c 1 "$json")" = "{" ] ||
  fail "stdout closed: the JSON file begins: $(head -n 2 "$json")"

# Output that cannot be written (a full disk): status 1 and a message on
# stderr (status 0 until 2026-12-05).
if [ -w /dev/full ]; then
  out=$("$tarn" bench array --sizes 16 --samples 3 --filter "$row" 2>&1 >/dev/full)
  status=$?
  [ "$status" -eq 1 ] || fail "bench >/dev/full: exit status $status, not 1"
  grep -q "^tarn: write error: " <<<"$out" || fail "bench >/dev/full: no message in: $out"
fi

# interrupted WHAT GLOB ARGS...: runs `tarn bench ARGS` with a fresh spill
# directory, in a process group of its own as a terminal's foreground job
# (set -m: a script's background job ignores SIGINT), and sends it Ctrl-C
# once GLOB (a path under the spill directory) exists; it must die of the
# signal (status 130) and leave the spill directory empty.
interrupted() {
  local what=$1 glob=$2 spill pid status seen=0 left
  shift 2
  spill=$(mktemp -d)
  set -m
  TARN_SPILL_DIR=$spill "$tarn" bench "$@" >/dev/null 2>&1 &
  pid=$!
  set +m
  for _ in $(seq 600); do
    compgen -G "$spill/$glob" >/dev/null && seen=1 && break
    sleep 0.05
  done
  [ "$seen" -eq 1 ] || fail "$what: no $glob in the spill directory"
  kill -INT -- -"$pid"
  wait "$pid"
  status=$?
  [ "$status" -eq 130 ] || fail "$what: exit status $status, not 130"
  left=$(ls -A "$spill")
  [ -z "$left" ] || fail "$what: left in the spill directory: $left"
  rm -rf "$spill"
}

# Ctrl-C during the files suite removes its directory of .npy files (left
# behind until 2026-12-05: 129 MiB at N=2048).
interrupted "files interrupted" "tarn-bench-files-*/a.npy" \
  files --sizes 512 --samples 200
# StarPU's home is made in the spill directory (in /tmp until 2026-12-05),
# and goes with an interrupt too.
if pkg-config --exists starpu-1.3 2>/dev/null; then
  interrupted "starpu interrupted" "tarn-bench-starpu-*" \
    linalg --sizes 600 --samples 1000 --filter 'starpu.*cholesky'
fi

finish "array, stencil, linalg, files, ooc, time_to_load and pool's eviction rows ran and checked their results"
