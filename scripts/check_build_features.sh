#!/usr/bin/env bash
# Every file that tests an optional part's macro (#ifdef ATTNMT_WITH_DNNL, ...) includes
# build_features.h, which defines it (CMakeLists.txt writes it): without it the file would compile
# as if the part were missing, silently.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for f in $(grep -rlE '^[[:space:]]*#[[:space:]]*(if|ifdef|ifndef|elif)\b.*ATTNMT_WITH_(DNNL|HTTP)' src tests --include=*.cpp --include=*.h); do
  if ! grep -q '^#include "build_features.h"' "$f"; then
    echo "$f: tests ATTNMT_WITH_* without #include \"build_features.h\""
    status=1
  fi
done
exit $status
