#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --test
scripts/build.sh
export OMP_WAIT_POLICY=PASSIVE
# --no-tests=error: a build that registered no test fails rather than passes.
cd build && ctest --output-on-failure --no-tests=error -j"${JOBS:-$(nproc)}" "$@"
