#!/usr/bin/env bash
# Makes tests/data/simuleval/: recorded delays (instances.log, config.yaml) scored by SimulEval's own
# scorers (expected.json: every metric per instance and per corpus, unrounded) and by its CLI
# (score_only.txt: what `simuleval --score-only` prints, rounded to 3 places).
# Needs a bare mirror of facebookresearch/SimulEval and of mjpost/sacrebleu (its quality scorer
# imports sacreBLEU) under $MIRRORS/<owner>+<name>/repo, and Debian's python3-pandas, -tornado,
# -yaml, -tqdm, -requests, -soundfile. textgrid (used by its speech scorers only) is stubbed.
#   scripts/simuleval_fixtures/make.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
MIRRORS=${MIRRORS:-/work/.mirror}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/simuleval" "$work/sacrebleu" "$work/stubs/textgrid"
git --git-dir="$MIRRORS/facebookresearch+SimulEval/repo" archive HEAD | tar -x -C "$work/simuleval"
git --git-dir="$MIRRORS/mjpost+sacrebleu/repo" archive v2.6.0 | tar -x -C "$work/sacrebleu"
echo "__version__ = \"2.6.0\"" > "$work/sacrebleu/sacrebleu/version.py"  # written by setuptools-scm on install
touch "$work/stubs/textgrid/__init__.py"
commit=$(git --git-dir="$MIRRORS/facebookresearch+SimulEval/repo" rev-parse HEAD)
out=tests/data/simuleval
export PYTHONPATH="$work/simuleval:$work/stubs:$work/sacrebleu"
/usr/bin/python3 scripts/simuleval_fixtures/latency.py --write-log "$out"
/usr/bin/python3 -m simuleval.cli --score-only --output "$out" --latency-metrics AL LAAL AP DAL ATD \
  --quality-metrics BLEU 2>/dev/null > "$out/score_only.txt"
/usr/bin/python3 scripts/simuleval_fixtures/latency.py --score "$out" --commit "$commit"
rm -f "$out/metrics.tsv"
echo "wrote $out (SimulEval $commit)"
