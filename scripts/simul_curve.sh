#!/usr/bin/env bash
# The quality-latency curve of one model: test-time wait-k for each K and full-sentence greedy
# decoding, each with BLEU and chrF (attnmt score, sacreBLEU's) and SimulEval's latency in words
# (AL, LAAL, AP, DAL from translate --streaming --stats, with the reference lengths). The
# full-sentence row is `--streaming --wait-k 1000000` (every source word read before the first
# target word), whose output must equal `--beam-size 1`'s (checked). Prints a Markdown table.
#   scripts/simul_curve.sh MODEL SRC REF [KS]     (default KS "1 3 5 7 9"; SRC, REF may be .gz)
# ATTNMT (default build/attnmt), THREADS (default 1), POLICIES (default "replay": the wait-k
# policies, each K run under each; "replay prefix" for both, decoding/streaming.h; "head": the hard
# head's policy of a monotonic, chunkwise or milk model at each of LOOKAHEADS, default "0 1 2", and
# no wait-k).
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/simul_curve.sh MODEL SRC REF [KS]"
model=${1:?$usage}
src=${2:?$usage}
ref=${3:?$usage}
ks=${4:-1 3 5 7 9}
attnmt=${ATTNMT:-build/attnmt}
threads=${THREADS:-1}
policies=${POLICIES:-replay}
export OMP_WAIT_POLICY=PASSIVE
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zcat -f "$src" > "$work/src"
zcat -f "$ref" > "$work/ref"
run() {  # NAME FLAGS...: streaming translation, its stats and its scores
  local name=$1
  shift
  "$attnmt" translate --model "$model" --input "$work/src" --output "$work/$name.hyp" --streaming "$@" \
    --reference "$work/ref" --threads "$threads" --stats "$work/$name.stats" --progress never 2>/dev/null
  "$attnmt" score --ref "$work/ref" --hyp "$work/$name.hyp" --metrics bleu,chrf --json > "$work/$name.score"
  echo "$name" >> "$work/runs"
}
for policy in $policies; do
  if [ "$policy" = head ]; then
    for l in ${LOOKAHEADS:-0 1 2}; do run "hard head, lookahead $l" --lookahead "$l"; done
    continue
  fi
  label=""
  [ "$policies" = replay ] || label=" ($policy)"
  for k in $ks; do run "wait-$k$label" --wait-k "$k" --wait-k-policy "$policy"; done
done
run "full sentence, greedy" --wait-k 1000000
"$attnmt" translate --model "$model" --input "$work/src" --output "$work/greedy.hyp" --beam-size 1 \
  --threads "$threads" --progress never 2>/dev/null
if ! cmp -s "$work/greedy.hyp" "$work/full sentence, greedy.hyp"; then
  echo "simul_curve.sh: --wait-k 1000000 did not write greedy search's output" >&2
  exit 1
fi
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
print("| decoding | BLEU | chrF | AL | LAAL | AP | DAL | seconds |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name in open(os.path.join(work, "runs")).read().splitlines():
    score = json.load(open(os.path.join(work, name + ".score")))
    stats = json.load(open(os.path.join(work, name + ".stats")))
    bleu = score["bleu"]["score"] if isinstance(score["bleu"], dict) else score["bleu"]
    words = stats["latency"]["words"]
    print(f"| {name} | {bleu:.2f} | {score['chrf']:.2f} | {words['AL']:.2f} | {words['LAAL']:.2f} | "
          f"{words['AP']:.3f} | {words['DAL']:.2f} | {stats['seconds']:.1f} |")
PY
