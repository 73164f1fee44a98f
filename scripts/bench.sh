#!/usr/bin/env bash
# The speed benchmark (issue #5): training and decoding speed, peak memory and the share of the
# machine's matrix-product ceiling, for configs/bench/rnn256.yaml (the default architecture),
# rnn256_bf16.yaml (the same with train.precision: bf16) and rnn512.yaml, at 1 thread and at all
# cores. `attnmt bench` does the measuring (src/bench/bench.h says how); this script builds,
# trains each config's decoding model once (its train.max_steps; kept in runs/bench/<name> and
# reused), then runs the benchmark. Prints the table and writes runs/bench/bench.json and
# runs/bench/table.md.
#   scripts/bench.sh [CONFIG ...] [-- extra 'attnmt bench' options, e.g. --repeats 5]
set -euo pipefail
cd "$(dirname "$0")/.."
configs=(); extra=()
while (($#)); do
  if [ "$1" = "--" ]; then shift; extra=("$@"); break; fi
  configs+=("$1"); shift
done
((${#configs[@]})) || configs=(configs/bench/rnn256.yaml configs/bench/rnn256_bf16.yaml configs/bench/rnn512.yaml)
scripts/install_deps.sh
scripts/build.sh --target attnmt >/dev/null
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
mkdir -p runs/bench
for c in "${configs[@]}"; do
  dir=$(sed -n 's/^  save_dir: *\([^ #]*\).*/\1/p' "$c")
  if ! ls "$dir"/*.pt >/dev/null 2>&1; then
    echo "[bench.sh] training the decoding model of $c into $dir (log: $dir.log)"
    build/attnmt train "$c" > "$dir.log" 2>&1
  fi
  # decode.shortlist: a model trained before the config turned it on has no lexicon yet.
  if grep -Eq '^  shortlist: *true' "$c" && [ ! -f "$dir/lexicon.bin" ]; then
    build/attnmt lexicon --model "$dir"
  fi
done
build/attnmt bench "${configs[@]}" --output runs/bench/bench.json --table runs/bench/table.md \
  --work-dir runs/bench/work "${extra[@]}"
