#!/usr/bin/env bash
# `tarn bench compare` as a user runs it: writes small result files into a
# scratch directory and checks the table, the ratios, the verdicts, the exit
# status (0, 1 on a regression with --fail-on-regression or a bad file, 2 for
# a bad command line) and the picture. Usage: test_compare.sh TARN
. "$(dirname "$0")/lib.sh" "$@"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch" || exit 1

# run ARGS...: runs `tarn bench compare ARGS` with stdout and stderr in
# $out, its status in $status.
run() {
  out=$("$tarn" bench compare "$@" 2>&1)
  status=$?
}

# expect_status WANT WHAT
expect_status() {
  [ "$status" -eq "$1" ] || fail "$2: exit status $status, expected $1"
}

# expect_line REGEX WHAT: some line of $out matches the extended REGEX.
expect_line() {
  grep -Eq -- "$1" <<<"$out" || fail "$2: no line matches '$1' in:
$out"
}

# expect_no_line REGEX WHAT
expect_no_line() {
  if grep -Eq -- "$1" <<<"$out"; then fail "$2: a line matches '$1' in:
$out"; fi
}

cat >base.json <<'JSON'
{"machine": {"cpu": "Test CPU A", "cores": 2, "date": "2024-05-01T10:00:00Z"},
 "results": [
  {"name": "array/same", "median_s": 0.001, "min_s": 0.0009, "max_s": 0.0011,
   "samples": 5, "extra": {"gflops": 1.5}},
  {"name": "linalg/slower", "median_s": 0.002, "min_s": 0.0019, "max_s": 0.0021},
  {"name": "stencil/faster", "median_s": 0.003, "min_s": 0.0029, "max_s": 0.0031},
  {"name": "rt/noisy", "median_s": 0.010, "min_s": 0.008, "max_s": 0.020},
  {"name": "alloc/gone", "median_s": 1.5e-9},
  {"name": "odd 'name' \"with\" \\ & <chars>", "median_s": 2.5}
 ]}
JSON
cat >new.json <<'JSON'
{"machine": {"cpu": "Test CPU B", "cores": 2, "date": "2024-05-02T10:00:00Z"},
 "results": [
  {"name": "array/same", "median_s": 0.001, "min_s": 0.00095, "max_s": 0.00105},
  {"name": "linalg/slower", "median_s": 0.004, "min_s": 0.0039, "max_s": 0.0041},
  {"name": "stencil/faster", "median_s": 0.002, "min_s": 0.0019, "max_s": 0.0021},
  {"name": "rt/noisy", "median_s": 0.014, "min_s": 0.009, "max_s": 0.030},
  {"name": "load/fresh", "median_s": 0.0042},
  {"name": "array/same", "median_s": 0.5},
  {"name": "odd 'name' \"with\" \\ & <chars>", "median_s": 2.4}
 ]}
JSON
# Only faster or equal: an improvement and no regression.
cat >better.json <<'JSON'
{"machine": {"cpu": "Test CPU A", "cores": 2, "date": "2024-05-03T10:00:00Z"},
 "results": [
  {"name": "array/same", "median_s": 0.001, "min_s": 0.0009, "max_s": 0.0011},
  {"name": "linalg/slower", "median_s": 0.001, "min_s": 0.00095, "max_s": 0.00105},
  {"name": "stencil/faster", "median_s": 0.003, "min_s": 0.0029, "max_s": 0.0031},
  {"name": "rt/noisy", "median_s": 0.010, "min_s": 0.008, "max_s": 0.020},
  {"name": "alloc/gone", "median_s": 1.5e-9},
  {"name": "odd 'name' \"with\" \\ & <chars>", "median_s": 2.5}
 ]}
JSON

# The table: rows, times with their spread, ratios, verdicts.
run base.json new.json --svg "$scratch/picture.svg"
expect_status 0 "a regression without --fail-on-regression"
expect_line '^name +base +new +base / new$' "table header"
expect_line '^array/same +1\.00 ms \[0\.900\.\.1\.10\] +1\.00 ms \[0\.950\.\.1\.05\] +1\.00 \[0\.857\.\.1\.16\]$' \
  "unchanged row"
expect_line '^linalg/slower +2\.00 ms \[1\.90\.\.2\.10\] +4\.00 ms \[3\.90\.\.4\.10\] +0\.500 \[0\.463\.\.0\.538\] +REGRESSION$' \
  "regression row"
expect_line '^stencil/faster +3\.00 ms .* +1\.50 \[1\.38\.\.1\.63\] +improvement$' \
  "improvement row"
expect_line '^rt/noisy +10\.0 ms \[8\.00\.\.20\.0\] +14\.0 ms .* +0\.714 .* +slower, within noise$' \
  "noisy row"
expect_line '^alloc/gone +1\.50 ns +- +- +only in base$' "only in base"
expect_line '^load/fresh +- +4\.20 ms +- +only in new$' "only in new"
expect_line "^odd 'name' \"with\" \\\\ & <chars> +2\.50 s +2\.40 s +1\.04$" \
  "a name with quotes"
expect_line '^threshold 25 %: 1 regression, 1 improvement, 1 within noise, 2 unchanged, 1 only in base, 1 only in new$' \
  "summary"
expect_line '^  linalg/slower: 2\.00x slower \(2\.00 ms -> 4\.00 ms\)$' \
  "regressions list"
expect_line '^  stencil/faster: 1\.50x faster \(3\.00 ms -> 2\.00 ms\)$' \
  "improvements list"
expect_line '^  rt/noisy: 1\.40x slower' "within noise list"
expect_line '^base: base\.json \(Test CPU A, 2 cores, 2024-05-01T10:00:00Z\)$' \
  "base machine"
expect_line '^new: +new\.json \(Test CPU B, 2 cores, 2024-05-02T10:00:00Z\)$' \
  "new machine"
expect_line 'machines differ \(cpu\)' "different machines flagged"
expect_line 'warning: new\.json: "array/same" appears again' \
  "duplicate name warned"

# --fail-on-regression gates; --threshold changes the verdict.
run base.json new.json --fail-on-regression --svg "$scratch/picture.svg"
expect_status 1 "--fail-on-regression with a regression"
expect_line '1 regression beyond 25 %' "--fail-on-regression message"
run --threshold 150 --fail-on-regression base.json new.json --svg x.svg
expect_status 0 "--threshold 150: a 2x slowdown is within it"
expect_no_line 'REGRESSION' "--threshold 150: no regression"
expect_line '^threshold 150 %: 0 regressions, 0 improvements' \
  "--threshold 150 summary"
run --threshold=10% base.json better.json --fail-on-regression --svg x.svg
expect_status 0 "an improvement only, --threshold=10%"
expect_line '^linalg/slower .* +2\.00 \[1\.81\.\.2\.21\] +improvement$' \
  "improvement only: row"
expect_line '^threshold 10 %: 0 regressions, 1 improvement,' \
  "improvement only: summary"
expect_no_line 'machines differ' "same machine: no note"
expect_no_line 'pages differ' "no page settings: no note"

# machine_file FILE MACHINE: a result file of one benchmark whose
# "machine" object has the members MACHINE (JSON text) besides cpu and
# cores.
machine_file() {
  printf '{"machine": {"cpu": "Test CPU A", "cores": 2, %s},
 "results": [{"name": "array/same", "median_s": 0.001}]}\n' "$2" >"$1"
}

# Files that record the page settings: shown, and a difference noted.
for hp in 1 0; do
  machine_file "pages$hp.json" "\"date\": \"2024-05-04T10:00:00Z\",
    \"thp\": \"madvise\", \"huge_pages\": $hp"
done
run pages1.json pages0.json --svg x.svg
expect_status 0 "page settings differ"
expect_line '^base: pages1\.json \(Test CPU A, 2 cores, 2024-05-04T10:00:00Z, huge pages on, THP madvise\)$' \
  "base page settings"
expect_line '^new: +pages0\.json \(.*, huge pages off, THP madvise\)$' \
  "new page settings"
expect_line "note: the pages differ \\(tarn's huge pages\\)" "huge pages differ flagged"
expect_no_line 'machines differ' "page settings alone: same machine"
run pages1.json pages1.json --svg x.svg
expect_no_line 'pages differ' "same page settings: no note"

# Files that record OpenBLAS's kernels: shown, and a difference noted.
for core in Haswell SkylakeX; do
  machine_file "blas-$core.json" "\"blas_core\": \"$core\",
    \"blas_core_forced\": 1"
done
run blas-Haswell.json blas-SkylakeX.json --svg x.svg
expect_status 0 "BLAS kernels differ"
expect_line '^base: blas-Haswell\.json \(Test CPU A, 2 cores, unknown date, BLAS Haswell\)$' \
  "base BLAS kernels"
expect_line "^note: OpenBLAS's kernels differ \\(Haswell -> SkylakeX\\): the ratios compare the kernels as well as the code$" \
  "BLAS kernels differ flagged"
expect_no_line 'machines differ' "BLAS kernels alone: same machine"
run blas-Haswell.json blas-Haswell.json --svg x.svg
expect_no_line "kernels differ" "same BLAS kernels: no note"
run blas-Haswell.json pages1.json --svg x.svg
expect_no_line "kernels differ" "BLAS kernels in one file only: no note"

# Files that record tarn's runtime settings (what --workers, --mem-limit
# and the TARN_ variables made them): a difference is noted, by name.
for w in 2 1; do
  machine_file "settings$w.json" "\"workers\": $w, \"pin_workers\": 1,
    \"mem_limit\": $((w * 1048576)), \"max_unfinished\": 0,
    \"idle_trim_ms\": 20"
done
run settings2.json settings1.json --svg x.svg
expect_status 0 "settings differ"
expect_line "^note: tarn's settings differ \\(workers 2 -> 1, mem_limit 2097152 -> 1048576\\): the ratios compare the settings as well as the code$" \
  "settings differ flagged"
expect_no_line 'machines differ' "settings alone: same machine"
run settings2.json settings2.json --svg x.svg
expect_no_line "settings differ" "same settings: no note"
run settings2.json pages1.json --svg x.svg
expect_no_line "settings differ" "settings in one file only: no note"

# Files that record the CPU time a hypervisor took during each suite
# (machine.steal): suites at 5 % or more are noted, from either file.
machine_file steal-busy.json '"steal": {"alloc": 0.012, "linalg": 0.314, "rt": 0.05}'
machine_file steal-quiet.json '"steal": {"alloc": 0.0, "linalg": 0.049}'
run steal-quiet.json steal-busy.json --svg x.svg
expect_status 0 "steal recorded"
expect_line '^note: a hypervisor took CPU time while suites ran \(base: none notable; new: linalg 31 %, rt 5 %\): ' \
  "steal noted for the new file's suites"
run steal-busy.json steal-quiet.json --svg x.svg
expect_line '\(base: linalg 31 %, rt 5 %; new: none notable\)' \
  "steal noted for the base file's suites"
run steal-quiet.json steal-quiet.json --svg x.svg
expect_no_line 'hypervisor' "little steal: no note"
run steal-busy.json pages1.json --svg x.svg
expect_line '\(base: linalg 31 %, rt 5 %; new: none notable\)' \
  "steal in one file only: noted"

# A calibrated benchmark (extra "ops": the operations of a sample, chosen
# anew in each run) compares per operation: 2 us/op before, 1 us/op after.
cat >calibrated-base.json <<'JSON'
{"results": [{"name": "alloc/calibrated", "median_s": 0.002,
  "min_s": 0.0019, "max_s": 0.0021, "extra": {"ops": 1000}},
 {"name": "rt/tasks", "median_s": 0.03, "extra": {"tasks": 3000}},
 {"name": "rt/regions", "median_s": 0.03, "extra": {"regions": 3000}}]}
JSON
cat >calibrated-new.json <<'JSON'
{"results": [{"name": "alloc/calibrated", "median_s": 0.004,
  "min_s": 0.0038, "max_s": 0.0042, "extra": {"ops": 4000}},
 {"name": "rt/tasks", "median_s": 0.03, "extra": {"tasks": 1000}},
 {"name": "rt/regions", "median_s": 0.09, "extra": {"regions": 9000}}]}
JSON
run calibrated-base.json calibrated-new.json --fail-on-regression --svg x.svg
expect_status 1 "per operation: the per-task regression fails"
expect_line '^alloc/calibrated +2\.00 us/op \[1\.90\.\.2\.10\] +1\.00 us/op \[0\.950\.\.1\.05\] +2\.00 \[1\.81\.\.2\.21\] +improvement$' \
  "per operation: ops"
expect_line '^rt/tasks +10\.0 us/task +30\.0 us/task +0\.333 +REGRESSION$' \
  "per task: tasks"
expect_line '^rt/regions +10\.0 us/region +10\.0 us/region +1\.00$' \
  "per region: regions (compared raw, it was a 3x regression)"

# Bad files: status 1 and a message naming the file.
printf '{"results": [\n  {"name": "x", "median_s": 1,}\n]}\n' >broken.json
run base.json broken.json
expect_status 1 "malformed JSON"
expect_line '^tarn bench compare: broken\.json: not valid JSON: line 2, column [0-9]+: ' \
  "malformed JSON message"
printf '{"results": [{"name": "x", "median_s": "fast"}]}\n' >shape.json
run shape.json base.json
expect_status 1 "median_s not a number"
expect_line '^tarn bench compare: shape\.json: results\[0\] \("x"\): "median_s" is not a number' \
  "shape message"
printf '{"machine": {}}\n' >noresults.json
run base.json noresults.json
expect_status 1 "no results array"
expect_line 'noresults\.json: not a result file' "no results message"
run base.json missing.json
expect_status 1 "missing file"
expect_line '^tarn bench compare: missing\.json: cannot open' "missing message"

# Bad command lines: status 2.
for args in "" "base.json" "base.json new.json third.json" \
  "--bogus base.json new.json" "--threshold" \
  "--threshold abc base.json new.json" "--threshold -5 base.json new.json" \
  "base.json new.json --svg"; do
  # shellcheck disable=SC2086
  run $args
  expect_status 2 "bad command line '$args'"
  expect_line "Run 'tarn bench compare --help'" "hint for '$args'"
done

run --help
expect_status 0 "--help"
expect_line '^usage: tarn bench compare BASE\.json NEW\.json' "--help text"
expect_line '--fail-on-regression' "--help lists --fail-on-regression"

# The picture: an SVG file where gnuplot is installed (default name: NEW's
# with .json replaced by -compare.svg); one line and the table's exit
# status where it is not.
if command -v gnuplot >/dev/null; then
  grep -q '<svg' picture.svg 2>/dev/null ||
    fail "--svg picture.svg: no SVG written"
  grep -q 'linalg/slower' picture.svg || fail "the SVG has no row names"
  run base.json new.json
  expect_line '^picture: new-compare\.svg$' "default picture name"
  grep -q '<svg' new-compare.svg 2>/dev/null ||
    fail "no SVG at the default name new-compare.svg"
  # One benchmark, not slower: no label left of 1 (gnuplot 5.4 crashed on
  # an empty labels plot).
  printf '{"results": [{"name": "one", "median_s": 1}]}\n' >one.json
  run one.json one.json --svg one.svg
  expect_line '^picture: one\.svg$' "a picture of one benchmark"
  grep -q '<svg' one.svg 2>/dev/null || fail "no SVG of one benchmark"
  # A % in a name: a tic label is a format for gnuplot (it failed the
  # picture, "Bad format character", and left half an SVG).
  printf '{"results": [{"name": "files (50%%)", "median_s": 1}]}\n' >pct.json
  run pct.json pct.json --svg pct.svg
  expect_line '^picture: pct\.svg$' "a name with a %: the picture"
  grep -q 'files (50%)' pct.svg 2>/dev/null ||
    fail "a name with a %: not in the SVG"
  run base.json new.json --svg "$scratch/no/such/dir/x.svg"
  expect_status 0 "a picture that cannot be written: the table's status"
  expect_line '^no picture: gnuplot failed to draw .*/no/such/dir/x\.svg$' \
    "a picture that cannot be written: one line"
  expect_no_line '<svg' "a picture that cannot be written: no SVG on the terminal"
else
  echo "skipped: the SVG checks (gnuplot is not installed)"
fi
out=$(PATH=/nonexistent "$tarn" bench compare base.json new.json \
  --fail-on-regression --svg none.svg 2>&1)
status=$?
expect_status 1 "without gnuplot, still the table's exit status"
expect_line '^no picture: gnuplot is not installed \(apt-get install gnuplot-nox\)$' \
  "without gnuplot: one line"
[ -e none.svg ] && fail "without gnuplot: none.svg exists"

# Result files written by `tarn bench --json` record the settings the
# suites ran under, from the options and the environment, and compare
# names those that differ.
TARN_MAX_UNFINISHED=7 "$tarn" bench array --sizes 64 --samples 3 \
  --filter 'tarn/.*add' --workers 1 --mem-limit 64M --json one-worker.json \
  >/dev/null 2>&1 || fail "bench --json with settings: exit status $?"
TARN_MAX_UNFINISHED= env -u TARN_MEM_LIMIT "$tarn" bench array --sizes 64 \
  --samples 3 --filter 'tarn/.*add' --workers 2 --json two-workers.json \
  >/dev/null 2>&1 || fail "bench --json: exit status $?"
run one-worker.json two-workers.json --svg x.svg
expect_status 0 "written files"
expect_line "^note: tarn's settings differ \\(workers 1 -> 2, mem_limit 67108864 -> 0, max_unfinished 7 -> 0\\)" \
  "written files: settings differ flagged"
expect_line '^array/tarn/N=64 \(block 64\)/add \(X \+ X\) ' "written files: the row"
# Where /proc/stat is there, they record the share of CPU time a hypervisor
# took while the suite ran, between 0 and 1.
if [ -r /proc/stat ]; then
  tr -d ' \n' <one-worker.json |
    grep -Eq '"steal":\{"array":(0\.[0-9]+|1\.0|[0-9]\.[0-9]+e-[0-9]+)\}' ||
    fail "written files: no machine.steal.array between 0 and 1 in:
$(cat one-worker.json)"
fi

# Written files record the goal lines the run printed ("goals": suite,
# name, value, unit, at_most, limit, met; since 2026-12-07).
"$tarn" bench array --sizes 256 --samples 3 \
  --filter 'tarn/.*add|openmp/.*add' --json goals.json >/dev/null 2>&1 ||
  fail "bench array --json: exit status $?"
flat=$(tr -d ' \n' <goals.json)
grep -Eq '"goals":\[\{"suite":"array","name":"N=256add:[^"]+","value":[-0-9.e+]+,"unit":"x","at_most":false,"limit":[-0-9.e+]+,"met":(true|false)\}' \
  <<<"$flat" || fail "written files: no goals of the array suite in:
$(cat goals.json)"

# Where both files have goals, compare counts those met in each and lists
# those met in one and missed in the other (same suite and name, measured
# in both); not measured in one, or of another suite, is no change.
# goals FILE ENTRY...: a result file of one row whose goals are the
# ENTRYs, each "suite|name|value|unit|at_most|limit|met".
goals() {
  local file=$1 sep="" entry suite name value unit at_most limit met
  shift
  {
    printf '{"machine": {"cpu": "A", "cores": 2},\n'
    printf ' "results": [{"name": "linalg/x", "median_s": 0.001}],\n'
    printf ' "goals": ['
    for entry in "$@"; do
      IFS='|' read -r suite name value unit at_most limit met <<<"$entry"
      printf '%s\n  {"suite": "%s", "name": "%s", "value": %s, "unit": "%s", "at_most": %s, "limit": %s, "met": %s}' \
        "$sep" "$suite" "$name" "$value" "$unit" "$at_most" "$limit" "$met"
      sep=,
    done
    printf ']}\n'
  } >"$file"
}
getrs="linalg|N=256 getrs: tarn / best lapacke"
matmul="linalg|N=1024 matmul: best lapacke / tarn"
qr="linalg|N=256 qr: tarn / best lapacke"
matvec="linalg|N=256 matvec: tarn / best lapacke"
goals gbase.json "$getrs|1.13|x|true|1.1|false" "$matmul|1.02|x|false|1|true" \
  "$qr|0.7|x|true|1.1|true" "alloc|one thread|9.1| ns|true|25|true" \
  "$matvec|null|x|true|1.1|null"
goals gnew.json "$getrs|1.06|x|true|1.1|true" "$matmul|0.98|x|false|1|false" \
  "$qr|0.75|x|true|1.1|true" "stencil|one thread|30| ns|true|25|false" \
  "$matvec|1.5|x|true|1.1|false"
run gbase.json gnew.json --svg g.svg
expect_status 0 "goals"
expect_line '^goals: 3 of 4 met in base, 2 of 5 in new$' "goals: the counts"
expect_line '^  linalg: N=256 getrs: tarn / best lapacke  1\.13x -> 1\.06x  \(goal <= 1\.1x\)$' \
  "goals: one now met"
expect_line '^  linalg: N=1024 matmul: best lapacke / tarn  1\.02x -> 0\.98x  \(goal >= 1x\)$' \
  "goals: one now missed"
[ "$(grep -c '^  [a-z]*: ' <<<"$out")" -eq 2 ] ||
  fail "goals: not exactly two changes listed in:
$out"
run base.json new.json --svg x.svg
expect_no_line '^goals:' "files without goals: no goals line"

# A table that cannot be written (a full disk): status 1 and a message on
# stderr (status 1 and no word until 2026-12-05), the help too.
if [ -w /dev/full ]; then
  for args in "base.json new.json" "--help"; do
    out=$("$tarn" bench compare $args 2>&1 >/dev/full)
    status=$?
    expect_status 1 "compare $args >/dev/full"
    expect_line '^tarn: write error: ' "compare $args >/dev/full"
  done
fi

finish "ok: tarn bench compare"
