#!/usr/bin/env bash
# SIGKILL at random moments loses nothing: trains a small model on tests/data (a checkpoint every
# 10 updates, 16 MB with Adam's moments, plus best.pt), kills it with SIGKILL KILLS times and
# resumes after each kill; at the end resumes to the last step. Odd kills fall at a random moment
# 1-11 s after the start; even ones, once a checkpoint exists, the moment a checkpoint's temp file
# appears (i.e. while it is being written). Checks that no run failed, that every run after
# the first resumed from a checkpoint (none had to fall back to an older one), and that training
# reaches the end.
#   scripts/kill_test.sh [KILLS] [SEED]        (default 20 kills)
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-20}
RANDOM=${2:-7}
scripts/build.sh --target attnmt >/dev/null
export OMP_WAIT_POLICY=PASSIVE
dir=runs/kill_test
rm -rf "$dir"
mkdir -p "$dir"
data=$PWD/tests/data
cat > "$dir/config.yaml" <<EOF
data:
  train: {src: $data/tiny.de, tgt: $data/tiny.en}
  valid: {src: $data/tiny.de, tgt: $data/tiny.en}
tokenizer: {vocab_size: 400}
model:
  embedding_size: 128
  encoder: {hidden_size: 128, layers: 2}
  decoder: {hidden_size: 128, layers: 2}
train:
  save_dir: $dir/model
  batch_size: 10
  max_steps: 200
  learning_rate: 0.002
  valid_every: 10
  valid_metric: ppl
  report_every: 10
  keep_checkpoints: 2
threads: 2
EOF

resumed=0 during_save=0 stale=0 fallback=0
for ((k = 1; k <= kills; k++)); do
  log=$dir/run$k.log
  args=()
  ls "$dir"/model/ckpt.*.pt >/dev/null 2>&1 && args=(--resume)
  build/attnmt train "$dir/config.yaml" "${args[@]}" >"$log" 2>&1 &
  pid=$!
  if ((k % 2 == 0)) && ((${#args[@]})); then
    # aim at a save: kill as soon as a checkpoint's temp file exists (at most 60 s of waiting)
    end=$((SECONDS + 60))
    until compgen -G "$dir/model/*.tmp.*" >/dev/null || ((SECONDS > end)); do :; done
  else
    sleep "$((1 + RANDOM % 10)).$(printf '%03d' $((RANDOM % 1000)))"
  fi
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  ls "$dir"/model/*.tmp.* >/dev/null 2>&1 && during_save=$((during_save + 1))
  if grep -q "attnmt: error" "$log"; then
    echo "[kill_test] run $k failed before the kill:"; grep "attnmt: error" "$log"; exit 1
  fi
  if ((${#args[@]})) && grep -q "resumed from" "$log"; then resumed=$((resumed + 1)); fi
  grep -q "left by a run stopped while writing it" "$log" && stale=$((stale + 1))
  grep -q "cannot resume from" "$log" && fallback=$((fallback + 1))
  last=$(grep -o "step [0-9]*" "$log" | tail -1 || true)
  echo "[kill_test] kill $k/$kills: ${last:-before the first step}$(ls "$dir"/model/*.tmp.* >/dev/null 2>&1 && echo ', during a save')"
done

final=$dir/final.log
build/attnmt train "$dir/config.yaml" --resume >"$final" 2>&1 || { echo "[kill_test] the final resume failed:"; tail -3 "$final"; exit 1; }
grep -q "finished at step 200" "$final" || { echo "[kill_test] did not reach step 200"; tail -3 "$final"; exit 1; }
grep -q "left by a run stopped while writing it" "$final" && stale=$((stale + 1))
echo "[kill_test] $kills SIGKILLs, $during_save of them while a checkpoint was being written;" \
     "$resumed resumes from a checkpoint, none failed, $fallback fell back to an older checkpoint; $stale leftover temp file(s) cleaned up; finished at step 200"
