#!/usr/bin/env bash
# Scores a `translate --streaming --simuleval-dir DIR` directory with SimulEval's own
# `--score-only` (run from source, as scripts/simuleval_fixtures/make.sh does) and, given the run's
# --stats file, checks that attnmt's word figures are the ones SimulEval prints (to its 3 places).
#   scripts/simuleval_check.sh DIR [STATS_JSON]        (MIRRORS: where the git mirrors are)
set -euo pipefail
dir=${1:?usage: scripts/simuleval_check.sh DIR [STATS_JSON]}
stats=${2:-}
MIRRORS=${MIRRORS:-/work/.mirror}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/simuleval" "$work/sacrebleu" "$work/stubs/textgrid" "$work/out"
git --git-dir="$MIRRORS/facebookresearch+SimulEval/repo" archive HEAD | tar -x -C "$work/simuleval"
git --git-dir="$MIRRORS/mjpost+sacrebleu/repo" archive v2.6.0 | tar -x -C "$work/sacrebleu"
echo "__version__ = \"2.6.0\"" > "$work/sacrebleu/sacrebleu/version.py"
touch "$work/stubs/textgrid/__init__.py"
cp "$dir/instances.log" "$dir/config.yaml" "$work/out/"  # SimulEval rewrites config.yaml and adds files
PYTHONPATH="$work/simuleval:$work/stubs:$work/sacrebleu" /usr/bin/python3 -m simuleval.cli --score-only \
  --output "$work/out" --latency-metrics AL LAAL AP DAL ATD --quality-metrics BLEU 2>/dev/null | tee "$work/printed"
[ -z "$stats" ] && exit 0
/usr/bin/python3 - "$work/printed" "$stats" <<'PY'
import json, sys
header, values = open(sys.argv[1]).read().strip().split("\n")
printed = dict(zip(header.split(), values.split()[1:]))
ours = json.load(open(sys.argv[2]))["latency"]["words"]
bad = [n for n in ["AL", "LAAL", "AP", "DAL", "ATD"] if abs(round(ours[n], 3) - float(printed[n])) > 1e-9]
for n in ["AL", "LAAL", "AP", "DAL", "ATD"]:
    print(f"{n}: SimulEval {printed[n]}, attnmt {ours[n]:.6f}")
sys.exit(f"differ: {bad}" if bad else 0)
PY
