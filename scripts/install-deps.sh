#!/usr/bin/env bash
# Installs the Debian packages tarn needs to build, test and benchmark, when
# any is missing. Needs root (apt-get); run by scripts/test.sh and
# scripts/bench.sh. Exits 0 when everything is present.
set -euo pipefail

packages=(
  cmake make gcc pkg-config clang-format   # build and format check
  g++                                      # the headers checked from C++
  libxxhash-dev libzstd-dev                # spill store checksums, compression
  libcmocka-dev                            # tests
  libopenblas-dev liblapacke-dev           # linalg tile kernels
  libjansson-dev                           # benchmark JSON
  gnuplot-nox                              # bench compare's picture
  libmimalloc-dev libjemalloc-dev          # allocator peers
  libstarpu-dev                            # task runtime peer
  python3-numpy                            # .npy files checked against numpy
  valgrind                                 # the memcheck tests
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "tarn needs these Debian packages: ${missing[*]}" >&2
  echo "Install them as root, then run this again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
