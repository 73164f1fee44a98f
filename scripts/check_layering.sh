#!/usr/bin/env bash
# The layering of src/'s folders, stated once (the rank table below), and checked:
#   scripts/check_layering.sh               every include edge between folders goes down the ranks
#                                           (a file may include its own folder and folders of a lower
#                                           rank; anything else is printed with its file and line)
#   scripts/check_layering.sh --table       also prints every edge with its count
#   scripts/check_layering.sh --diagram     prints the ranks as docs/architecture.md draws them
#   scripts/check_layering.sh --docs FILE   FILE's layer diagram is --diagram's, and its folder table
#                                           has one row per folder of src/ and no other
# Exits 1 on any violation (a CTest test runs the first and the last).
set -euo pipefail
cd "$(dirname "$0")/.."

# Lowest first; folders of one rank never include each other.
ranks=(
  "util"
  "runtime config eval align pyformat"
  "data report"
  "spm_plugin attention"
  "model"
  "io decoding"
  "analysis bench train serve convert"
  "cli python api"
)
declare -A rank=()
for r in "${!ranks[@]}"; do for f in ${ranks[$r]}; do rank[$f]=$r; done; done

diagram() {
  local indent="" top=$((${#ranks[@]} - 1))
  for ((r = top; r >= 0; r--)); do
    local names=${ranks[$r]// / · }
    if ((r == top)); then echo "$names"; else echo "${indent}└─▶ $names"; indent="$indent     "; fi
  done
}

if [ "${1:-}" = "--diagram" ]; then diagram; exit 0; fi

status=0
if [ "${1:-}" = "--docs" ]; then
  doc=${2:?usage: --docs FILE}
  # The first fenced block after the "## Layers" heading.
  drawn=$(awk '/^## Layers/{on=1} on && /^```/{n++; if (n == 2) exit; next} on && n == 1' "$doc")
  if [ "$drawn" != "$(diagram)" ]; then
    echo "layering: $doc: the diagram under '## Layers' is not the rank table's; it should read:"
    diagram
    status=1
  fi
  rows=$(grep -oE '^\| `src/[a-z_]+`' "$doc" | sed -E 's/.*src\/([a-z_]+)`/\1/' | sort)
  folders=$(find src -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
  if [ "$rows" != "$folders" ]; then
    echo "layering: $doc: the folder table's rows are not src/'s folders:"
    diff <(echo "$folders") <(echo "$rows") | grep -E '^[<>]' | sed 's/^</  missing a row:/; s/^>/  a row without a folder:/' || true
    status=1
  fi
  for f in $folders; do
    [ -n "${rank[$f]+x}" ] || { echo "layering: src/$f has no rank in scripts/check_layering.sh"; status=1; }
  done
  if ((status == 0)); then echo "layering: $doc agrees with the rank table"; fi
  exit $status
fi

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
