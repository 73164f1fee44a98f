#!/usr/bin/env bash
# Every file that tests an optional part's macro (#ifdef ATTNMT_WITH_DNNL, ...) includes
# build_features.h, which defines it (CMakeLists.txt writes it): without it the file would compile
# as if the part were missing, silently. The macros are those src/build_features.h.in defines; a
# macro that no file tests fails too (it, or this check's pattern, is out of date), so that the
# check cannot pass by matching nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
macros=$(sed -n 's/^#cmakedefine \(ATTNMT_WITH_[A-Z0-9_]*\).*/\1/p' src/build_features.h.in)
if [ -z "$macros" ]; then
  echo "check_build_features.sh: no '#cmakedefine ATTNMT_WITH_...' in src/build_features.h.in"
  exit 1
fi
status=0
for macro in $macros; do
  files=$(grep -rlE "^[[:space:]]*#[[:space:]]*(if|ifdef|ifndef|elif)\\b.*\\b${macro}\\b" src tests --include=*.cpp --include=*.h || true)
  if [ -z "$files" ]; then
    echo "check_build_features.sh: no file tests $macro (src/build_features.h.in defines it)"
    status=1
  fi
  for f in $files; do
    if ! grep -q '^#include "build_features.h"' "$f"; then
      echo "$f: tests $macro without #include \"build_features.h\""
      status=1
    fi
  done
  echo "$macro: tested in $(echo "$files" | wc -w) files"
done
exit $status
