#!/usr/bin/env bash
# Line coverage of the library by the tests: builds tarn with gcc's
# --coverage into build-cov/ (debug, no sanitizer, no benchmarks), runs
# every test there, and prints each source file's share of lines run.
# With --lines FILE (a path under src/, e.g. src/rt/rt.c) it also prints
# that file's lines no test ran. Not part of scripts/test.sh: a developer's
# tool for finding untested paths (error paths above all).
set -euo pipefail
cd "$(dirname "$0")/.."
show=""
if [ "${1:-}" = "--lines" ]; then
  show=${2:?"--lines needs a file under src/"}
fi
scripts/install-deps.sh
dir=build-cov
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DTARN_SANITIZE= \
  -DTARN_BENCH=OFF -DCMAKE_C_FLAGS="--coverage" \
  -DCMAKE_EXE_LINKER_FLAGS="--coverage" \
  -DCMAKE_SHARED_LINKER_FLAGS="--coverage" >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
find "$dir" -name '*.gcda' -delete
# test_install builds an outside program against the installed library,
# which the coverage flags do not reach: leave it out.
(cd "$dir" && ctest -j"$(nproc)" -E test_install >/dev/null) ||
  echo "coverage: some tests failed (run scripts/test.sh)" >&2
objs="$dir/CMakeFiles/tarn_objects.dir/src"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-28s %8s %7s\n' file lines run
for src in src/*/*.c; do
  rel=${src#src/}
  [ -f "$objs/$rel.gcda" ] || { printf '%-28s %8s %7s\n' "$src" - "0%"; continue; }
  (cd "$out" && gcov -o "$OLDPWD/$objs/$rel.gcda" "$OLDPWD/$src" \
    >"$out/summary" 2>/dev/null) || true
  line=$(grep -A1 "File '.*$src'" "$out/summary" | tail -n 1 || true)
  pct=$(sed -n "s/Lines executed:\([0-9.]*\)% of \([0-9]*\)/\1% \2/p" \
    <<<"$line")
  printf '%-28s %8s %7s\n' "$src" "${pct#* }" "${pct% *}"
  if [ "$src" = "$show" ]; then
    cp "$out/$(basename "$src").gcov" "$out/shown.gcov"
  fi
done
if [ -n "$show" ]; then
  [ -f "$out/shown.gcov" ] || { echo "coverage: no data for $show" >&2; exit 1; }
  echo
  echo "lines of $show no test ran:"
  grep -E '^ +#####:' "$out/shown.gcov" | sed 's/^ *#####: *//'
fi
