#!/usr/bin/env bash
# Configures (Release) and builds attnmt into ./build; reuses an existing build.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
cmake -S . -B build -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} >/dev/null
cmake --build build -j"$jobs" "$@"
