#!/usr/bin/env bash
# Installs what is missing, builds, trains configs/multi30k_de_en/quickstart.yaml (a few minutes
# on 2 cores), translates test_2016_flickr with beam search and prints BLEU / chrF.
# Re-running reuses the build and the trained model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh --target attnmt
export OMP_WAIT_POLICY=PASSIVE
config=configs/multi30k_de_en/quickstart.yaml
save_dir=runs/multi30k_de_en/quickstart
if [ ! -f "$save_dir/best.pt" ]; then
  rm -rf "$save_dir"
  build/attnmt train "$config"
fi
mkdir -p "$save_dir/test"
zcat data/multi30k/test_2016_flickr.de.gz > "$save_dir/test/src.de"
zcat data/multi30k/test_2016_flickr.en.gz > "$save_dir/test/ref.en"
start=$(date +%s%N)
build/attnmt translate --model "$save_dir" --input "$save_dir/test/src.de" --output "$save_dir/test/hyp.en" --beam-size 5
end=$(date +%s%N)
echo "translated $(wc -l < "$save_dir/test/src.de") sentences in $(( (end - start) / 1000000 )) ms (beam 5)"
build/attnmt score --ref "$save_dir/test/ref.en" --hyp "$save_dir/test/hyp.en"
