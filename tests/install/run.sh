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
cc -std=c11 -Wall -Werror "$here/consumer/consumer.c" -o "$scratch/pc_shared" \
  $(pkg-config --cflags --libs tarn)
LD_LIBRARY_PATH=$libdir check "$scratch/pc_shared"
cc -std=c11 -Wall -Werror "$here/consumer/consumer.c" -o "$scratch/pc_static" \
  $(pkg-config --cflags tarn) "$libdir/libtarn.a" \
  $(pkg-config --static --libs tarn | sed 's/-ltarn\b//')
check "$scratch/pc_static"

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
