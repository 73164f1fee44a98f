#!/usr/bin/env bash
# Compares every attention config in configs/multi30k_de_en/ (the zoo of
# scripts/train_attention_zoo.sh, models in runs/multi30k_de_en/<name>) with `attnmt compare`:
# test_2016_flickr (each config's data.test, beam as configured), plus AER on the German-English
# gold alignments in ../shared/data/alignment-gold/, read from there (their licence forbids
# copying them into the project). Writes reports/multi30k_de_en/{results.md,csv,json,index.html}.
#   scripts/compare_multi30k.sh [--train-missing] [NAME ...]   (default: every config but
#                                                               default/quickstart)
# Without --train-missing, a config whose model is not there is an error (train the zoo first).
set -euo pipefail
cd "$(dirname "$0")/.."
gold=../shared/data/alignment-gold
if [ ! -f "$gold/test.de-en.gz" ] || [ ! -f "$gold/deen.talp.gz" ]; then
  echo "compare_multi30k.sh: the gold alignments are not in $gold (test.de-en.gz, deen.talp.gz):" \
       "this script needs the shared/ folder beside the repository" >&2
  exit 2
fi
extra=()
names=()
for a in "$@"; do
  case "$a" in
    --*) extra+=("$a") ;;
    *) names+=("$a") ;;
  esac
done
if ((${#names[@]} == 0)); then
  for f in configs/multi30k_de_en/*.yaml; do
    n=$(basename "$f" .yaml)
    [[ $n == default || $n == quickstart ]] || names+=("$n")
  done
fi
configs=()
for n in "${names[@]}"; do configs+=("configs/multi30k_de_en/$n.yaml"); done
scripts/install_deps.sh
scripts/build.sh --target attnmt
export OMP_WAIT_POLICY=PASSIVE
report=${REPORT_DIR:-reports/multi30k_de_en}
build/attnmt compare "${configs[@]}" "${extra[@]}" \
  --align-gold-src "$gold/test.de-en.gz" --align-gold "$gold/deen.talp.gz" \
  --report "$report" --samples "${SAMPLES:-4}"
echo "[compare] $report/index.html"
