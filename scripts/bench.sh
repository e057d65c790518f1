#!/usr/bin/env bash
# tarn's main job: installs missing Debian packages, builds the release
# build in build/ and runs the benchmark suite (`build/tarn bench`).
# Arguments go to `tarn bench`, e.g. scripts/bench.sh alloc --json out.json
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTARN_SANITIZE= >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec build/tarn bench "$@"
