#!/usr/bin/env bash
# SIGKILL at random moments loses nothing: the CTest test "SIGKILL at random moments and during
# saves" (tests/e2e/test_kill.cpp) with more kills. It trains a small model (a checkpoint every 10
# updates, with Adam's moments, plus best.pt) once straight through, then again while killing it
# KILLS times with SIGKILL and resuming after each kill: odd kills at a random moment 1-4 s after
# the start, even ones (once a checkpoint exists) the moment a checkpoint's temp file appears, i.e.
# while it is written. It kills only a running, unfinished training (the step budget grows with
# KILLS), fails on any error, failed resume or fall-back to an older checkpoint, and at the end
# compares the killed run's final checkpoint with the straight run's, parameter for parameter.
# CI runs it with 6 kills; this runs it with KILLS (default 20).
#   scripts/kill_test.sh [KILLS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --target attnmt attnmt_e2e_tests >/dev/null
export OMP_WAIT_POLICY=PASSIVE
ATTNMT_KILLS=${1:-20} ATTNMT_KILL_SEED=${2:-7} build/tests/attnmt_e2e_tests "SIGKILL at random moments*"
