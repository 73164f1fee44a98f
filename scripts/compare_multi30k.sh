#!/usr/bin/env bash
# Compares attention configs on Multi30k with `attnmt compare`: test_2016_flickr (each config's
# data.test, beam as configured), plus, for German -> English, AER on the gold alignments in
# ../shared/data/alignment-gold/, read from there (their licence forbids copying them here).
#   scripts/compare_multi30k.sh [--pair de_en|en_de] [--seeds N|LIST] [--budget zoo|small]
#                               [--train-missing] [--threads N] [NAME ...]
# --pair      configs/multi30k_<pair>/ (default de_en)
# --budget    zoo: each config as written, models in its train.save_dir (the zoo of
#             scripts/train_attention_zoo.sh); small: the quick start's size and budget (1-layer
#             LSTMs of 256, 4000 pieces, 906 updates = 2 epochs; a few minutes a run on 2 cores),
#             models in runs/seeds_small/<pair>/<name>/seed<N>
# --seeds     train and measure each config with every seed (mean +- sd, p-values on the first seed)
# NAME        configs to compare (default: with --seeds, the mission variants bahdanau luong_dot
#             luong_general luong_concat local_m local_p forced_forward monotonic; without, every
#             config of the pair but default/quickstart and the recipe's best*)
# Writes reports/multi30k_<pair>[_seeds_<budget>]/{results.md,csv,json,index.html}. Without
# --train-missing, a config whose model is not there is an error. ATTNMT=path runs that binary
# instead of building build/attnmt.
set -euo pipefail
cd "$(dirname "$0")/.."
pair=de_en budget=zoo seeds=""
extra=()
names=()
while (($#)); do
  case "$1" in
    --pair) pair=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --threads) extra+=(--threads "$2"); shift 2 ;;
    --*) extra+=("$1"); shift ;;
    *) names+=("$1"); shift ;;
  esac
done
case "$pair" in de_en | en_de) ;; *) echo "compare_multi30k.sh: --pair must be de_en or en_de, not '$pair'" >&2; exit 2 ;; esac
case "$budget" in zoo | small) ;; *) echo "compare_multi30k.sh: --budget must be zoo or small, not '$budget'" >&2; exit 2 ;; esac
dir=configs/multi30k_$pair
if ((${#names[@]} == 0)); then
  if [ -n "$seeds" ]; then
    names=(bahdanau luong_dot luong_general luong_concat local_m local_p forced_forward monotonic)
  else
    for f in "$dir"/*.yaml; do
      n=$(basename "$f" .yaml)
      [[ $n == default || $n == quickstart || $n == best || $n == best_* ]] || names+=("$n")
    done
  fi
fi
configs=()
for n in "${names[@]}"; do
  [ -f "$dir/$n.yaml" ] || { echo "compare_multi30k.sh: no config '$dir/$n.yaml'" >&2; exit 2; }
  configs+=("$dir/$n.yaml")
done
report=reports/multi30k_$pair
[ -n "$seeds" ] && extra+=(--seeds "$seeds") && report+=_seeds_$budget
if [ "$budget" = small ]; then
  extra+=(--save-root "runs/seeds_small/$pair" --set tokenizer.vocab_size=4000 model.encoder.layers=1
          model.decoder.layers=1 model.encoder.dropout=0.2 model.decoder.dropout=0.2 data.max_length=60
          train.max_steps=906 train.valid_every=453 train.keep_checkpoints=1)
  [ -n "$seeds" ] || report+=_small
fi
gold=../shared/data/alignment-gold
if [ "$pair" = de_en ]; then
  if [ ! -f "$gold/test.de-en.gz" ] || [ ! -f "$gold/deen.talp.gz" ]; then
    echo "compare_multi30k.sh: the gold alignments are not in $gold (test.de-en.gz, deen.talp.gz):" \
         "this script needs the shared/ folder beside the repository" >&2
    exit 2
  fi
  extra+=(--align-gold-src "$gold/test.de-en.gz" --align-gold "$gold/deen.talp.gz")
fi
if [ -z "${ATTNMT:-}" ]; then
  scripts/install_deps.sh
  scripts/build.sh --target attnmt
  ATTNMT=build/attnmt
fi
export OMP_WAIT_POLICY=PASSIVE
report=${REPORT_DIR:-$report}
"$ATTNMT" compare "${configs[@]}" "${extra[@]}" --report "$report" --samples "${SAMPLES:-4}"
echo "[compare] $report/index.html"
