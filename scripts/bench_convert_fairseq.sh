#!/usr/bin/env bash
# A fairseq LSTM model side by side: translated by fairseq-interactive (fairseq's own program for
# text on stdin) and by attnmt after `attnmt convert --from fairseq` (fp32, and its fastest:
# --precision auto), test_2016_flickr pre-encoded pieces, beam 5, whole process (model loading
# included), THREADS threads (default 2). Per run: seconds, sentences/s, output words/s (spm_decode),
# BLEU; then how many lines attnmt writes exactly as fairseq does.
#   scripts/bench_convert_fairseq.sh CHECKPOINT DATA_BIN SRC_PIECES REF_RAW SPM_MODEL
# Needs fairseq from source (scripts/convert_fixtures/fairseq_fixtures.sh sets it up): FAIRSEQ_PYTHONPATH
# (its source, fairseq_shims, sacreBLEU's source). Writes runs/bench_convert_fairseq/.
set -euo pipefail
cd "$(dirname "$0")/.."
ckpt=${1:?usage: CHECKPOINT DATA_BIN SRC_PIECES REF_RAW SPM_MODEL} data=$2 src=$3 ref=$4 spm=$5
threads=${THREADS:-2}
export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE
bin=${ATTNMT:-build/attnmt}
out=runs/bench_convert_fairseq
mkdir -p "$out"
$bin convert --from fairseq "$ckpt" --data-dir "$data" --output "$out/model.pt" 2> "$out/convert.log"

declare -A seconds
run() {  # NAME COMMAND...: stdin = the source, stdout -> NAME.out
  local name=$1; shift
  local start end
  start=$(date +%s%N)
  "$@" < "$src" > "$out/$name.out" 2> "$out/$name.log"
  end=$(date +%s%N)
  seconds[$name]=$(awk -v n=$((end - start)) 'BEGIN{printf "%.3f", n / 1e9}')
}
fairseq_interactive() {
  PYTHONPATH=$FAIRSEQ_PYTHONPATH /usr/bin/python3 -m fairseq_cli.interactive "$data" --path "$ckpt" --cpu \
    --source-lang de --target-lang en --beam 5 --batch-size 64 --buffer-size 64 --required-batch-size-multiple 1 \
    | grep '^H-' | sort -t- -k2,2n -s | cut -f3
}
run fairseq fairseq_interactive
run attnmt_fp32 $bin translate --model "$out/model.pt" --threads "$threads" --beam-size 5 --precision fp32
run attnmt_fast $bin translate --model "$out/model.pt" --threads "$threads" --beam-size 5 --precision auto

lines=$(wc -l < "$src")
{
  echo "| program | seconds | sentences/s | words/s | BLEU | lines as fairseq writes them |"
  echo "|---|---:|---:|---:|---:|---:|"
  for name in fairseq attnmt_fp32 attnmt_fast; do
    spm_decode --model="$spm" < "$out/$name.out" > "$out/$name.txt"
    words=$(wc -w < "$out/$name.txt")
    bleu=$(PYTHONPATH=${SACREBLEU_PATH:-} /usr/bin/python3 -m sacrebleu "$ref" -i "$out/$name.txt" -b 2>/dev/null || echo "-")
    same=$(paste -d '\t' "$out/fairseq.out" "$out/$name.out" | awk -F'\t' '$1 == $2' | wc -l)
    awk -v n="$name" -v s="${seconds[$name]}" -v l="$lines" -v w="$words" -v b="$bleu" -v m="$same" \
      'BEGIN{printf "| %s | %.2f | %.1f | %.0f | %s | %d/%d |\n", n, s, l / s, w / s, b, m, l}'
  done
  echo
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $threads threads, $(date -u +%F)"
} | tee "$out/results.md"
