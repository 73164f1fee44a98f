#!/usr/bin/env bash
# Checks the include edges between the folders of src/ against the layering (no exceptions)
#   cli / python / api -> analysis / train / bench / serve / convert -> decoding / io -> model -> attention -> runtime / util
# (with config, data, eval, align, report, pyformat as base libraries below the model's code). A file may
# include its own folder and folders of a lower rank; anything else is a forbidden edge, printed
# with its file and line, and the script exits 1. `--table` also prints every edge with its count.
#   scripts/check_layering.sh [--table]
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A rank=(
  [util]=0
  [runtime]=1 [config]=1 [eval]=1 [align]=1 [parallel]=1 [pyformat]=1
  [data]=2 [report]=2
  [spm_plugin]=3 [attention]=3
  [model]=4
  [io]=5 [decoding]=5
  [analysis]=6 [bench]=6 [train]=6 [serve]=6 [convert]=6
  [cli]=7 [python]=7 [api]=7
)

status=0
declare -A edges=()
while IFS=: read -r file line text; do
  from=${file#src/}; from=${from%%/*}
  to=${text#*\"}; to=${to%%/*}
  [ "$from" = "$to" ] && continue
  if [ -z "${rank[$from]+x}" ] || [ -z "${rank[$to]+x}" ]; then
    echo "layering: $file:$line: folder '$from' or '$to' has no rank in scripts/check_layering.sh"
    status=1
    continue
  fi
  edges["$from->$to"]=$(( ${edges["$from->$to"]:-0} + 1 ))
  if (( rank[$to] >= rank[$from] )); then
    echo "layering: $file:$line: $from/ may not include $to/ ($text)"
    status=1
  fi
done < <(grep -rnE '^#include "[a-z_]+/' src --include='*.h' --include='*.cpp')

if [ "${1:-}" = "--table" ]; then
  for e in "${!edges[@]}"; do echo "$e ${edges[$e]}"; done | sort
fi
if ((status == 0)); then echo "layering: ok (${#edges[@]} folder edges)"; fi
exit $status
