#!/usr/bin/env bash
# A small end-to-end demonstration of `attnmt compare` (minutes, not hours): three variants of
# configs/multi30k_de_en/quickstart.yaml that differ only in attention (luong_general, bahdanau
# with its decoder style, local_p), each trained for STEPS updates (default 300) with
# --train-missing, compared on test_2016_flickr with AER on the German-English gold alignments in
# ../shared/data/alignment-gold/ (read from there). Configs, models and the report go to
# runs/compare_demo/.
#   scripts/compare_demo.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300}
gold=../shared/data/alignment-gold
[ -f "$gold/deen.talp.gz" ] || { echo "compare_demo.sh: no gold alignments in $gold" >&2; exit 2; }
scripts/install_deps.sh
scripts/build.sh --target attnmt
export OMP_WAIT_POLICY=PASSIVE
dir=runs/compare_demo
mkdir -p "$dir/configs"
q=configs/multi30k_de_en/quickstart.yaml
variant() {  # NAME ATTENTION_BLOCK DECODER_STYLE
  sed -e "s|attention: {type: luong_general}|attention: $2|" -e "s|style: luong,|style: $3,|" \
      -e "s|save_dir: runs/multi30k_de_en/quickstart|save_dir: $dir/$1|" "$q" > "$dir/configs/$1.yaml"
}
variant luong_general "{type: luong_general}" luong
variant bahdanau "{type: bahdanau}" bahdanau
variant local_p "{type: local_p, window: 10, score: general}" luong
build/attnmt compare "$dir"/configs/{luong_general,bahdanau,local_p}.yaml --train-missing \
  --set train.max_steps="$steps" train.valid_every=$((steps / 3)) \
  --align-gold-src "$gold/test.de-en.gz" --align-gold "$gold/deen.talp.gz" \
  --report "$dir/report" --samples "${SAMPLES:-4}"
