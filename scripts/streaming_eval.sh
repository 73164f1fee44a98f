#!/usr/bin/env bash
# Latency against quality of streaming decoding (attnmt translate --streaming) for one monotonic or
# chunkwise model on Multi30k's test_2016_flickr: average lagging (source subwords) and BLEU/chrF at
# each lookahead, against full-sentence greedy and beam-5 decoding. Prints a Markdown table.
#   scripts/streaming_eval.sh MODEL [LOOKAHEADS]     (default lookaheads: "0 1 2 3")
# ATTNMT=path/to/attnmt (default build/attnmt); THREADS (default 2); SRC/REF (default test_2016_flickr).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: scripts/streaming_eval.sh MODEL [LOOKAHEADS]}
lookaheads=${2:-0 1 2 3}
attnmt=${ATTNMT:-build/attnmt}
threads=${THREADS:-2}
src=${SRC:-data/multi30k/test_2016_flickr.de.gz}
ref=${REF:-data/multi30k/test_2016_flickr.en.gz}
export OMP_WAIT_POLICY=PASSIVE
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zcat -f "$src" > "$work/src"
zcat -f "$ref" > "$work/ref"
scores() {  # BLEU | chrF of a hypothesis file
  "$attnmt" score --ref "$work/ref" --hyp "$1" --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.2f | %.2f" % (d["bleu"], d["chrf"]))'
}
lagging() { python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
echo "| decoding | average lagging (source subwords) | BLEU | chrF | seconds |"
echo "|---|---:|---:|---:|---:|"
for k in $lookaheads; do
  "$attnmt" translate --model "$model" --input "$work/src" --output "$work/hyp.$k" --streaming --lookahead "$k" \
    --threads "$threads" --stats "$work/stats.$k" --progress never 2>/dev/null
  echo "| streaming, lookahead $k | $(lagging "$work/stats.$k" average_lagging) | $(scores "$work/hyp.$k") | $(lagging "$work/stats.$k" seconds) |"
done
for beam in 1 5; do
  "$attnmt" translate --model "$model" --input "$work/src" --output "$work/full.$beam" --beam-size "$beam" \
    --threads "$threads" --stats "$work/full_stats.$beam" --progress never 2>/dev/null
  # full-sentence decoding reads the whole source before writing: AL = the mean source length
  "$attnmt" translate --model "$model" --input "$work/src" --output /dev/null --streaming --lookahead 100000 \
    --threads "$threads" --stats "$work/wait_stats" --progress never 2>/dev/null
  echo "| full sentence, $( ((beam == 1)) && echo greedy || echo "beam $beam") | $(lagging "$work/wait_stats" mean_source_tokens) | $(scores "$work/full.$beam") | $(lagging "$work/full_stats.$beam" translate_seconds) |"
done
