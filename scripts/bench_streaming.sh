#!/usr/bin/env bash
# Streaming's cost against full-sentence greedy decoding of the same model, A/B alternating in one
# run (the machine is shared: compare within a run only). Per round: greedy (--beam-size 1, batched as
# by default, then a sentence at a time as streaming decodes), then `--streaming --wait-k K` for each K
# (K = h: the hard head's policy, lookahead 0); with REENCODE=1 each streaming run is followed by the
# same run with --reencode (every prefix encoded again, the written tokens replayed: the path of
# bidirectional models), whose output must be identical; with PREFIX=1 each wait-k run is followed by
# the same K under --wait-k-policy prefix (the decoder kept across reads: another output). The translating seconds each --stats reports
# (model loading excluded), and each round's ratio. Prints a Markdown table with the median of the rounds.
#   scripts/bench_streaming.sh MODEL SRC [ROUNDS [KS]]     (default: 3 rounds, KS "1 3 1000")
# ATTNMT (default build/attnmt), THREADS (default 1), REENCODE (default 0), PREFIX (default 0).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: scripts/bench_streaming.sh MODEL SRC [ROUNDS [KS]]}
src=${2:?usage: scripts/bench_streaming.sh MODEL SRC [ROUNDS [KS]]}
rounds=${3:-3}
ks=${4:-1 3 1000}
attnmt=${ATTNMT:-build/attnmt}
threads=${THREADS:-1}
reencode=""
[ "${REENCODE:-0}" = 1 ] && reencode=1
prefix=""
[ "${PREFIX:-0}" = 1 ] && prefix=1
export OMP_WAIT_POLICY=PASSIVE
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zcat -f "$src" > "$work/src"
# full-sentence --stats say translate_seconds, streaming's seconds
seconds() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("translate_seconds", d.get("seconds")))' "$1"; }
for r in $(seq 1 "$rounds"); do
  "$attnmt" translate --model "$model" --input "$work/src" --output "$work/greedy" --beam-size 1 \
    --threads "$threads" --workers 1 --stats "$work/greedy.json" --progress never 2>/dev/null
  g=$(seconds "$work/greedy.json")
  echo "greedy $r $g" >> "$work/times"
  "$attnmt" translate --model "$model" --input "$work/src" --output "$work/greedy1" --beam-size 1 --batch-size 1 \
    --threads "$threads" --workers 1 --stats "$work/greedy1.json" --progress never 2>/dev/null
  s=$(seconds "$work/greedy1.json")
  echo "greedy1 $r $s $(python3 -c "print($s / $g)")" >> "$work/times"
  for k in $ks; do
    policy=(--wait-k "$k")
    [ "$k" = h ] && policy=(--lookahead 0)
    variants=("" ${reencode:+--reencode})
    [ -n "$prefix" ] && [ "$k" != h ] && variants+=(--wait-k-policy=prefix)
    for variant in "${variants[@]}"; do
      "$attnmt" translate --model "$model" --input "$work/src" --output "$work/wait$k$variant" --streaming "${policy[@]}" \
        $variant --threads "$threads" --workers 1 --stats "$work/wait$k.json" --progress never 2>/dev/null
      s=$(seconds "$work/wait$k.json")
      echo "wait$k$variant $r $s $(python3 -c "print($s / $g)")" >> "$work/times"
    done
    if [ -n "$reencode" ] && ! cmp -s "$work/wait$k" "$work/wait$k--reencode"; then
      echo "bench_streaming.sh: policy $k: --reencode wrote another output" >&2
      exit 1
    fi
  done
done
python3 - "$work/times" "$ks" "$reencode" "$prefix" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
greedy = [float(r[2]) for r in rows if r[0] == "greedy"]
print("| decoding | seconds (median) | x greedy (median of the rounds' ratios) |")
print("|---|---:|---:|")
print(f"| full sentence, greedy | {statistics.median(greedy):.2f} | 1.00 |")
def policy(k):
    return "head, lookahead 0" if k == "h" else f"wait-{k}"
names = [("greedy1", "full sentence, greedy, batch size 1")]
for k in sys.argv[2].split():
    names.append((f"wait{k}", f"streaming, {policy(k)}"))
    if sys.argv[3]:
        names.append((f"wait{k}--reencode", f"streaming, {policy(k)}, --reencode"))
    if sys.argv[4] and k != "h":
        names.append((f"wait{k}--wait-k-policy=prefix", f"streaming, {policy(k)}, policy prefix"))
for name, label in names:
    mine = [r for r in rows if r[0] == name]
    print(f"| {label} | {statistics.median(float(r[2]) for r in mine):.2f} | "
          f"{statistics.median(float(r[3]) for r in mine):.2f} |")
PY
