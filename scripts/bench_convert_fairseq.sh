#!/usr/bin/env bash
# A fairseq LSTM model side by side: translated by fairseq-interactive (fairseq's own program for
# text on stdin) and by attnmt after `attnmt convert --from fairseq` (fp32, and its fastest:
# --precision auto), test_2016_flickr pre-encoded pieces, beam 5, whole process (Python start and
# model loading included), THREADS threads (default 2), ROUNDS rounds (default 2) alternating the
# three programs; the table takes each program's fastest round. Per program: seconds,
# sentences/s, output words/s (after spm_decode), BLEU (sacreBLEU), and how many lines it writes
# exactly as fairseq does (pieces, compared line by line).
#   scripts/bench_convert_fairseq.sh CHECKPOINT DATA_BIN SRC_PIECES REF_RAW SPM_MODEL
# Needs fairseq from source (scripts/convert_fixtures/fairseq_fullsize.sh sets it up):
# FAIRSEQ_PYTHONPATH (its source, fairseq_shims, sacreBLEU's source) and SACREBLEU_PATH (sacreBLEU's
# source). ATTNMT: the attnmt binary (default build/attnmt). Writes runs/bench_convert_fairseq/.
set -euo pipefail
cd "$(dirname "$0")/.."
ckpt=${1:?usage: CHECKPOINT DATA_BIN SRC_PIECES REF_RAW SPM_MODEL} data=$2 src=$3 ref=$4 spm=$5
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
: "${FAIRSEQ_PYTHONPATH:?set FAIRSEQ_PYTHONPATH (fairseq source:fairseq_shims:sacrebleu source)}"
export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE
bin=${ATTNMT:-build/attnmt}
out=runs/bench_convert_fairseq
mkdir -p "$out"
if ! $bin convert --from fairseq "$ckpt" --data-dir "$data" --output "$out/model.pt" 2> "$out/convert.log"; then
  cat "$out/convert.log" >&2; exit 1
fi

declare -A seconds
run() {  # NAME COMMAND...: stdin = the source, stdout -> NAME.out; keeps NAME's fastest round
  local name=$1; shift
  local start end s
  start=$(date +%s%N)
  if ! "$@" < "$src" > "$out/$name.out" 2> "$out/$name.log"; then
    echo "$name failed; its log: $out/$name.log" >&2; tail -5 "$out/$name.log" >&2; exit 1
  fi
  end=$(date +%s%N)
  s=$(awk -v n=$((end - start)) 'BEGIN{printf "%.3f", n / 1e9}')
  echo "round $round: $name $s s" >&2
  if [ -z "${seconds[$name]:-}" ] || awk -v a="$s" -v b="${seconds[$name]}" 'BEGIN{exit !(a < b)}'; then
    seconds[$name]=$s
  fi
}
fairseq_interactive() {
  PYTHONPATH=$FAIRSEQ_PYTHONPATH /usr/bin/python3 -m fairseq_cli.interactive "$data" --path "$ckpt" --cpu \
    --source-lang de --target-lang en --beam 5 --batch-size 64 --buffer-size 64 --required-batch-size-multiple 1 \
    | grep '^H-' | sort -t- -k2,2n -s | cut -f3
}
for round in $(seq "$rounds"); do
  run fairseq fairseq_interactive
  run attnmt_fp32 $bin translate --model "$out/model.pt" --threads "$threads" --beam-size 5 --precision fp32
  run attnmt_fast $bin translate --model "$out/model.pt" --threads "$threads" --beam-size 5 --precision auto
done

# fairseq-generate on DATA_BIN's test subset (when it is SRC_PIECES binarized), untimed: are its
# lines fairseq-interactive's?
generate_same=""
if [ -f "$data/test.de-en.de.bin" ]; then
  PYTHONPATH=$FAIRSEQ_PYTHONPATH /usr/bin/python3 -m fairseq_cli.generate "$data" --path "$ckpt" --cpu \
    --source-lang de --target-lang en --gen-subset test --beam 5 --batch-size 64 2> "$out/generate.log" \
    | grep '^H-' | sort -t- -k2,2n -s | cut -f3 > "$out/generate.out" \
    || echo "fairseq-generate failed: $out/generate.log" >&2
  generate_same=$(paste -d '\t' "$out/fairseq.out" "$out/generate.out" | awk -F'\t' '$1 == $2' | wc -l)
fi

lines=$(wc -l < "$src")
{
  echo "| program | seconds | sentences/s | words/s | BLEU | lines as fairseq writes them |"
  echo "|---|---:|---:|---:|---:|---:|"
  for name in fairseq attnmt_fp32 attnmt_fast; do
    spm_decode --model="$spm" < "$out/$name.out" > "$out/$name.txt"
    words=$(wc -w < "$out/$name.txt")
    bleu=$(PYTHONPATH=${SACREBLEU_PATH:-} /usr/bin/python3 -m sacrebleu "$ref" -i "$out/$name.txt" -b 2> "$out/sacrebleu.log") \
      || { echo "sacreBLEU failed (set SACREBLEU_PATH): $(tail -1 "$out/sacrebleu.log")" >&2; exit 1; }
    same=$(paste -d '\t' "$out/fairseq.out" "$out/$name.out" | awk -F'\t' '$1 == $2' | wc -l)
    awk -v n="$name" -v s="${seconds[$name]}" -v l="$lines" -v w="$words" -v b="$bleu" -v m="$same" \
      'BEGIN{printf "| %s | %.2f | %.1f | %.0f | %s | %d/%d |\n", n, s, l / s, w / s, b, m, l}'
  done
  echo
  [ -n "$generate_same" ] && echo "fairseq-generate (beam 5, batches of 64) writes $generate_same/$lines lines as fairseq-interactive does"
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores seen, $threads threads, $rounds rounds (fastest kept), $(date -u +%F)"
  echo "CPU flags (SIMD): $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(sse4_2|avx|avx2|fma|avx512[a-z_0-9]*|avx_vnni|amx[a-z_0-9]*)$' | tr '\n' ' ')"
} | tee "$out/results.md"
