#!/usr/bin/env bash
# Trains the tests' tiny model (tests/core/program.h's config: tests/data's 30 pairs, hidden size
# 64, luong_general, beam 3, one thread) into SAVE_DIR, for the scripts that need a model to run
# (a few seconds). Quiet; on a failure, the training log and exit 1.
#   scripts/tiny_model.sh SAVE_DIR [MAX_STEPS [--set key=value ...]]   (ATTNMT: the program, default build/attnmt)
set -euo pipefail
save_dir=${1:?usage: tiny_model.sh SAVE_DIR [MAX_STEPS [--set key=value ...]]}
steps=${2:-80}
shift $(($# < 2 ? $# : 2))
data=$(cd "$(dirname "$0")/../tests/data" && pwd)
attnmt=${ATTNMT:-$(dirname "$0")/../build/attnmt}
mkdir -p "$(dirname "$save_dir")"
config="$save_dir.yaml"
cat > "$config" <<YAML
data:
  train: {src: $data/tiny.de, tgt: $data/tiny.en}
  valid: {src: $data/tiny.de, tgt: $data/tiny.en}
tokenizer: {vocab_size: 400, shared: true}
model:
  embedding_size: 64
  encoder: {hidden_size: 64, layers: 1, dropout: 0.0}
  decoder: {hidden_size: 64, layers: 1, dropout: 0.0}
  attention: {type: luong_general}
train: {save_dir: $save_dir, batch_size: 10, max_steps: $steps, learning_rate: 0.01, label_smoothing: 0.0,
        valid_every: 300, report_every: 50}
decode: {beam_size: 3}
threads: 1
YAML
"$attnmt" train "$config" "$@" > "$save_dir.log" 2>&1 || { cat "$save_dir.log" >&2; exit 1; }
