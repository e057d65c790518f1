#!/usr/bin/env bash
# Installs the build tree BUILD into a scratch prefix, then builds the
# consumer program against it twice, with pkg-config and with
# find_package(tarn), and runs each build; builds the example programs
# with pkg-config too, and runs one. Usage: run.sh BUILD HERE
set -euo pipefail
build=$1
here=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix
expect="tarn $(grep -Eo 'TARN_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+' \
  "$here/../../include/tarn/version.h" | awk '{print $2}' | paste -sd.) slab ok success"

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name tarn.pc -path '*pkgconfig*')")
libdir=${libdir%/pkgconfig}
for f in include/tarn.h include/tarn/alloc.h include/tarn/status.h; do
  [ -f "$prefix/$f" ] || { echo "missing $f"; exit 1; }
done
ls "$libdir"/libtarn.a "$libdir"/libtarn.so >/dev/null

check() {
  local out
  out=$("$@")
  if [ "$out" != "$expect" ]; then
    echo "$1 printed '$out', expected '$expect'"
    exit 1
  fi
  echo "ok: $1"
}

# pkg-config, shared and static.
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c11 -Wall -Wextra -Wpedantic -Wcast-qual -Wbad-function-cast \
  -Wconversion -Werror "$here/consumer/consumer.c" -o "$scratch/pc_shared" \
  $(pkg-config --cflags --libs tarn)
LD_LIBRARY_PATH=$libdir check "$scratch/pc_shared"
cc -std=c11 -Wall -Werror "$here/consumer/consumer.c" -o "$scratch/pc_static" \
  $(pkg-config --cflags tarn) "$libdir/libtarn.a" \
  $(pkg-config --static --libs tarn | sed 's/-ltarn\b//')
check "$scratch/pc_static"

# The shared library exports the public API alone: each symbol it defines
# is named in an installed header. (GCC 12 gives a function built with
# target_clones default visibility whatever -fvisibility says: libtarn.so
# exported an internal tarn__fill and its resolver.)
unlisted=$(nm -D --defined-only "$libdir/libtarn.so" | awk '{print $3}' |
  while read -r sym; do
    grep -rqwF -- "$sym" "$prefix/include" || echo "$sym"
  done)
[ -z "$unlisted" ] || { echo "libtarn.so exports what no header names: $unlisted"; exit 1; }
echo "ok: the exports"

# C++11, with the warnings a strict C++ project turns on (tarn_submit's
# array was a compound literal, which g++ refuses; its items cast with
# C's casts and 0 as a null pointer).
c++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -Wcast-qual -Wold-style-cast \
  -Wzero-as-null-pointer-constant -Wconversion -Wsign-conversion \
  "$here/consumer/consumer.cpp" -o "$scratch/cxx" $(pkg-config --cflags --libs tarn)
out=$(LD_LIBRARY_PATH=$libdir "$scratch/cxx")
[ "$out" = "tarn from C++: 4" ] || { echo "C++ consumer printed '$out'"; exit 1; }
echo "ok: C++"

# The example programs, as a user who copied examples/ would build them,
# against the installed tree; one of them runs.
for e in matrices tasks least_squares out_of_core heat; do
  cc -std=c11 -Wall -Wextra -Werror "$here/../../examples/$e.c" \
    -o "$scratch/$e" $(pkg-config --cflags --libs tarn) -lm
done
out=$(LD_LIBRARY_PATH=$libdir "$scratch/matrices" 300 200 64 | tail -n 1)
[ "$out" = "matrices: ok" ] || { echo "installed matrices printed '$out'"; exit 1; }
echo "ok: the examples built against the installed tree"

# find_package(tarn).
cmake -S "$here/consumer" -B "$scratch/cm" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$scratch/cm" >/dev/null
check "$scratch/cm/consumer_shared"
check "$scratch/cm/consumer_static"

# Install directories given as absolute paths (as Nix and Guix pass them):
# tarn.pc writes one outside the prefix as it is, one inside relative to
# the prefix (it pasted either after ${prefix}: "${prefix}//abs/lib").
# Only configured: tarn.pc is made then.
abs=$scratch/abs
cmake -S "$here/../.." -B "$abs/build" -DTARN_TESTS=OFF -DTARN_BENCH=OFF \
  -DTARN_EXAMPLES=OFF -DCMAKE_INSTALL_PREFIX="$abs/prefix" \
  -DCMAKE_INSTALL_LIBDIR="$abs/prefix/lib64" \
  -DCMAKE_INSTALL_INCLUDEDIR="$abs/headers/include" >/dev/null
pc_var() { PKG_CONFIG_PATH=$abs/build pkg-config --variable="$1" tarn; }
[ "$(pc_var includedir)" = "$abs/headers/include" ] ||
  { echo "absolute includedir: tarn.pc says '$(pc_var includedir)'"; exit 1; }
case "$(pc_var libdir)" in
  */../../lib64) ;;
  *) echo "absolute libdir in the prefix: tarn.pc says '$(pc_var libdir)'"; exit 1 ;;
esac
echo "ok: absolute install directories in tarn.pc"
