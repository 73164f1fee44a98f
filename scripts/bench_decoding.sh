#!/usr/bin/env bash
# Measures what the decoding features buy on Multi30k de->en test_2016_flickr (docs/decoding.md):
# one model, the average of its last 4 checkpoints, ensembles of 2 and 4 seeds, and lexically
# constrained decoding (one reference phrase per sentence on the first 200 sentences).
#   scripts/bench_decoding.sh [CONFIG] [SEEDS]      (default: default.yaml, 4 seeds)
# Trains SEEDS models of CONFIG (train.seed 1..SEEDS, 4 checkpoints kept; VALID_EVERY=N sets
# train.valid_every, else the config's) into runs/bench_decoding/<config>/seed<N> (a finished run
# is reused), then decodes with beam 5 and writes runs/bench_decoding/<config>/results.md.
# Whole-process times; 2 threads.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/multi30k_de_en/default.yaml}
seeds=${2:-4}
bin=build/attnmt
export OMP_WAIT_POLICY=PASSIVE
name=$(basename "$config" .yaml)
root=runs/bench_decoding/$name
mkdir -p "$root/test"
zcat data/multi30k/test_2016_flickr.de.gz > "$root/test/src.de"
zcat data/multi30k/test_2016_flickr.en.gz > "$root/test/ref.en"

for s in $(seq 1 "$seeds"); do
  dir=$root/seed$s
  echo "[bench_decoding] training seed $s -> $dir (a finished run is left as it is)"
  $bin train "$config" --threads 2 --set train.save_dir="$dir" --set train.seed="$s" \
    ${VALID_EVERY:+--set train.valid_every=$VALID_EVERY} --set train.keep_checkpoints=4 $( [ -d "$dir" ] && echo --resume ) > "$dir.log" 2>&1
done

# A number from `attnmt score --json`'s output.
field() { grep -o "\"$1\": *[0-9.]*" | head -1 | sed 's/.*: *//' | xargs printf '%.2f'; }

# translate NAME [translate options...]: decodes the test set, records seconds and scores.
table=$root/results.md
echo "| system | BLEU | chrF | sentences/s |" > "$table"
echo "|---|---|---|---|" >> "$table"
translate() {
  local label=$1; shift
  local out=$root/test/$label.hyp
  local start end
  start=$(date +%s%N)
  $bin translate --threads 2 --beam-size 5 --input "$root/test/src.de" --output "$out" "$@" 2>> "$root/test/$label.log"
  end=$(date +%s%N)
  local secs rate scores
  secs=$(awk -v n=$((end - start)) 'BEGIN{printf "%.2f", n / 1e9}')
  rate=$(awk -v s="$secs" -v l="$(wc -l < "$root/test/src.de")" 'BEGIN{printf "%.0f", l / s}')
  scores=$($bin score --ref "$root/test/ref.en" --hyp "$out" --json)
  echo "| $label | $(field bleu <<< "$scores") | $(field chrf <<< "$scores") | $rate |" >> "$table"
  echo "[bench_decoding] $label: $scores ($secs s)"
}

for s in $(seq 1 "$seeds"); do translate "seed$s" --model "$root/seed$s/best.pt"; done
for n in 2 4; do
  $bin average --last $n "$root/seed1" --output "$root/seed1_avg$n.pt"
  translate "seed1, average of its last $n checkpoints" --model "$root/seed1_avg$n.pt"
done
[ "$seeds" -ge 2 ] && translate "ensemble of 2 (seeds 1-2)" --model "$root/seed1/best.pt" --model "$root/seed2/best.pt"
if [ "$seeds" -ge 4 ]; then
  translate "ensemble of 4 (seeds 1-4)" $(for s in 1 2 3 4; do echo --model "$root/seed$s/best.pt"; done)
  for s in 1 2 3 4; do $bin average --last 4 "$root/seed$s" --output "$root/seed${s}_avg4.pt"; done
  translate "ensemble of 4 averaged models" $(for s in 1 2 3 4; do echo --model "$root/seed${s}_avg4.pt"; done)
fi

# Constraints: the first 200 sentences, each with one reference word pair (chosen by line number,
# trailing punctuation dropped) as its constraint.
head -200 "$root/test/src.de" > "$root/test/src200.de"
head -200 "$root/test/ref.en" > "$root/test/ref200.en"
awk '{ n = NF; if (n < 2) { print $0; next } i = (NR * 7) % (n - 1) + 1; p = $i " " $(i + 1);
       sub(/[.,;:!?"]+$/, "", p); print p }' "$root/test/ref200.en" > "$root/test/constraints200.txt"
for mode in plain constrained; do
  extra=(); [ "$mode" = constrained ] && extra=(--constraints "$root/test/constraints200.txt")
  start=$(date +%s%N)
  $bin translate --threads 2 --beam-size 5 --model "$root/seed1/best.pt" --input "$root/test/src200.de" \
    --output "$root/test/$mode.200.hyp" "${extra[@]}" 2>> "$root/test/$mode.200.log"
  end=$(date +%s%N)
  held=$(paste -d '\t' "$root/test/constraints200.txt" "$root/test/$mode.200.hyp" |
         awk -F '\t' 'index($2, $1) > 0 { h++ } END { printf "%d", h }')
  scores=$($bin score --ref "$root/test/ref200.en" --hyp "$root/test/$mode.200.hyp" --json)
  echo "[bench_decoding] 200 sentences, $mode: $held/200 outputs hold their phrase;" \
       "BLEU $(field bleu <<< "$scores"), chrF $(field chrf <<< "$scores");" \
       "$(awk -v n=$((end - start)) 'BEGIN{printf "%.2f", n / 1e9}') s" | tee -a "$root/constraints.txt"
done
cat "$table"
