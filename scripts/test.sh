#!/usr/bin/env bash
# Builds tarn three ways and runs its tests: a release build (build/, every
# test, and the examples and the store's and .npy files' tests under
# Valgrind's memcheck: ctest -L memcheck), a debug build with
# AddressSanitizer and UndefinedBehaviorSanitizer (build-asan/, every
# test) and a ThreadSanitizer build (build-tsan/, the
# tests labelled "concurrent"); then, when clang is installed, fuzzes with
# libFuzzer (build-fuzz/) the pool's operation sequences for 20 seconds,
# the .npy header reader for 10, the pool under injected storage and
# source faults for 20, and whole .npy files read, opened and saved for 15.
# -Wall -Wextra -Werror everywhere. Installs missing Debian packages first.
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
passed=0

# build DIR CTEST-ARGS... -- CMAKE-ARGS...
run() {
  local dir=$1; shift
  local ctest_args=()
  while [ "$1" != "--" ]; do ctest_args+=("$1"); shift; done
  shift
  echo "== $dir"
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "${ctest_args[@]}") |
    tee "$dir/ctest.log"
  local n
  n=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' \
    "$dir/ctest.log")
  passed=$((passed + n))
}

run build -- -DCMAKE_BUILD_TYPE=Release -DTARN_SANITIZE=
run build-asan -- -DCMAKE_BUILD_TYPE=Debug -DTARN_SANITIZE=address
run build-tsan -L concurrent -- -DCMAKE_BUILD_TYPE=Debug -DTARN_SANITIZE=thread

# libFuzzer needs clang and its runtime: check both with a trivial target.
can_fuzz() {
  command -v clang >/dev/null || return 1
  local dir
  dir=$(mktemp -d)
  printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }\n' \
    >"$dir/t.c"
  clang -fsanitize=fuzzer "$dir/t.c" -o "$dir/t" >/dev/null 2>&1
  local rc=$?
  rm -rf "$dir"
  return $rc
}

fuzz=skipped
if can_fuzz; then
  echo "== build-fuzz"
  CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug \
    -DTARN_SANITIZE=fuzz -DTARN_BENCH=OFF >/dev/null
  cmake --build build-fuzz -j"$jobs"
  mkdir -p build-fuzz/corpus
  # Inputs that once crashed it (tests/fuzz/regressions) seed the corpus;
  # new crash files go to build-fuzz/, not the source tree.
  build-fuzz/tests/fuzz_pool -max_total_time=20 -seed=1 \
    -artifact_prefix=build-fuzz/ build-fuzz/corpus tests/fuzz/regressions 2>&1 |
    tail -n 2
  # The .npy header reader, from numpy's own files, for 10 seconds.
  mkdir -p build-fuzz/corpus-npy
  build-fuzz/tests/fuzz_npy -max_total_time=10 -seed=1 \
    -artifact_prefix=build-fuzz/ build-fuzz/corpus-npy tests/fuzz/npy 2>&1 |
    tail -n 2
  # The pool with failing and short storage I/O and failing sources, for
  # 20 seconds.
  mkdir -p build-fuzz/corpus-pool-faults
  build-fuzz/tests/fuzz_pool_faults -max_total_time=20 -seed=1 \
    -artifact_prefix=build-fuzz/ build-fuzz/corpus-pool-faults \
    tests/fuzz/pool_faults 2>&1 | tail -n 2
  # Whole .npy files through from_file, open_file and to_file, for 15.
  mkdir -p build-fuzz/corpus-npy-files
  build-fuzz/tests/fuzz_npy_file -max_total_time=15 -seed=1 \
    -artifact_prefix=build-fuzz/ build-fuzz/corpus-npy-files \
    tests/fuzz/npy_files 2>&1 | tail -n 2
  passed=$((passed + 1))
  fuzz=ran
fi
echo "release, asan+ubsan, tsan, fuzz ($fuzz): $passed passed, 0 failed"
