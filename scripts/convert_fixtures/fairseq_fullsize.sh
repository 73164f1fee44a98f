#!/bin/bash
# The full-size fairseq model of docs/convert.md's side-by-side table: `lstm_wiseman_iwslt_de_en`
# (its own widths: 256 embeddings, 256 hidden, 1 layer, unidirectional encoder, input feeding)
# trained BY FAIRSEQ on all 29,000 Multi30k de-en training pairs, through a joint 8k SentencePiece
# BPE trained here on the training text (the peers' recipe, ../shared/peers/scripts/02_data.sh).
# fairseq is set up from its public source as scripts/convert_fixtures/fairseq_fixtures.sh does
# (same archive, sed patches, Cython extensions, shims). Then run the benchmark:
#
#   WORK=/tmp/fsfull scripts/convert_fixtures/fairseq_fullsize.sh
#   FAIRSEQ_PYTHONPATH=/tmp/fsfull/fairseq:scripts/convert_fixtures/fairseq_shims:/tmp/fsfull/sacrebleu \
#   SACREBLEU_PATH=/tmp/fsfull/sacrebleu ATTNMT=build/attnmt scripts/bench_convert_fairseq.sh \
#     /tmp/fsfull/ckpt/checkpoint_last.pt /tmp/fsfull/bin /tmp/fsfull/data/test_2016_flickr.de \
#     /tmp/fsfull/raw/test_2016_flickr.en /tmp/fsfull/spm/spm8k.model
#
# Needs: apt-get install python3-torch python3-omegaconf python3-bitarray cython3 sentencepiece;
# bare mirrors of facebookresearch/fairseq and mjpost/sacrebleu under $MIRRORS. Training: 1 thread,
# seed 1, Adam lr 0.002, clip-norm 1, label-smoothed cross-entropy 0.1, batches <= 4000 tokens,
# MAX_EPOCH epochs (default 6), no validation; a checkpoint every 500 updates and at each epoch's
# end (checkpoint_last.pt), so a run stopped early still leaves a model. Nothing here is committed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
MIRRORS=${MIRRORS:-/work/.mirror}
WORK=${WORK:-/tmp/fairseq_fullsize}
MAX_EPOCH=${MAX_EPOCH:-6}
SRC=$WORK/fairseq
mkdir -p "$WORK"
cd "$WORK"

# shellcheck source=fairseq_source.sh
. "$HERE/fairseq_source.sh"
fairseq_source "$MIRRORS" "$SRC"
if [ ! -d sacrebleu ]; then
  mkdir -p sacrebleu
  # v2.6.0, as the peers pin it; version.py is normally written by setuptools_scm
  git --git-dir="$MIRRORS/mjpost+sacrebleu/repo" archive 2277caccfc7b956671a6a09f1646f62250034157 | tar -x -C sacrebleu
  echo '__version__ = "2.6.0"' > sacrebleu/sacrebleu/version.py
fi
export PYTHONPATH=$SRC:$HERE/fairseq_shims:$WORK/sacrebleu
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
PY=/usr/bin/python3

if [ ! -d bin ]; then
  mkdir -p raw spm data
  for s in train val test_2016_flickr; do for l in de en; do
    gunzip -c "$REPO/data/multi30k/$s.$l.gz" > "raw/$s.$l"
  done; done
  spm_train --input=raw/train.de,raw/train.en --model_prefix=spm/spm8k --vocab_size=8000 \
    --model_type=bpe --character_coverage=1.0 > spm/spm_train.log 2>&1
  for s in train val test_2016_flickr; do for l in de en; do
    spm_encode --model=spm/spm8k.model --output_format=piece < "raw/$s.$l" > "data/$s.$l"
  done; done
  $PY -m fairseq_cli.preprocess --source-lang de --target-lang en --trainpref data/train \
    --validpref data/val --testpref data/test_2016_flickr --workers 1 --destdir bin > prep.log 2>&1
fi

$PY -m fairseq_cli.train bin --task translation --source-lang de --target-lang en --cpu --seed 1 \
  --arch lstm_wiseman_iwslt_de_en --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
  --optimizer adam --lr 0.002 --clip-norm 1.0 --max-tokens 4000 --max-epoch "$MAX_EPOCH" \
  --save-dir ckpt --no-epoch-checkpoints --save-interval-updates 500 --keep-interval-updates 1 \
  --no-save-optimizer-state --disable-validation --num-workers 0 --log-format simple --log-interval 50 \
  > train.log 2>&1
