#!/bin/bash
# The fairseq fixtures of tests/data/convert (fairseq_lstm_bi, fairseq_wiseman,
# fairseq_luong_shared) and refused/fairseq_*.pt, made by fairseq itself from its public source on
# Debian's python3-torch 1.13.1 (no PyPI):
#
#   MIRRORS=/work/.mirror PEERS_ROOT=/tmp/peers WORK=/tmp/fs83w scripts/convert_fixtures/fairseq_fixtures.sh
#
# Needs: apt-get install python3-torch python3-omegaconf python3-bitarray cython3 sentencepiece;
# a bare git mirror of facebookresearch/fairseq at $MIRRORS/facebookresearch+fairseq/repo; the
# peers' raw Multi30k ($PEERS_ROOT/data/raw) and sacreBLEU source ($PEERS_ROOT/src/sacrebleu, which
# fairseq imports). What Debian lacks is shimmed (fairseq_shims/: hydra, sklearn.metrics); two
# source patches let fairseq's dataclasses load on Python 3.11 (mutable defaults as
# default_factory); its two Cython extensions are built in place.
# Data: Multi30k de-en through tests/data/convert/spm500.model (spm_encode pieces, as the
# OpenNMT-py fixtures), fairseq-preprocess (separate dictionaries; --joined-dictionary for the
# shared-embeddings model), the first 50 lines of test_2016_flickr as the test subset.
# 1 thread, seed 1, batches of <= 2000 tokens, Adam, no optimizer state saved; lstm_bi: lr 0.003,
# 1200 updates; the others: lr 0.005, 1500 updates. (The fixtures in the tree were made by these
# steps run one by one; the script as a whole has not been run end to end.)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
MIRRORS=${MIRRORS:-/work/.mirror}
PEERS_ROOT=${PEERS_ROOT:-/tmp/peers}
WORK=${WORK:-/tmp/fairseq_fixtures}
FIXTURES=$REPO/tests/data/convert
SRC=$WORK/fairseq
mkdir -p "$WORK"
cd "$WORK"

# shellcheck source=fairseq_source.sh
. "$HERE/fairseq_source.sh"
fairseq_source "$MIRRORS" "$SRC"
export PYTHONPATH=$SRC:$HERE/fairseq_shims:$PEERS_ROOT/src/sacrebleu
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
PY=/usr/bin/python3

if [ ! -d bin_sep ]; then
  mkdir -p data
  for s in train val test_2016_flickr; do for l in de en; do
    spm_encode --model="$FIXTURES/spm500.model" --output_format=piece < "$PEERS_ROOT/data/raw/$s.$l" > "data/$s.$l"
  done; done
  for l in de en; do head -50 "data/test_2016_flickr.$l" > "data/test50.$l"; done
  common=(--source-lang de --target-lang en --trainpref data/train --validpref data/val --testpref data/test50 --workers 1)
  $PY -m fairseq_cli.preprocess "${common[@]}" --destdir bin_sep > prep_sep.log 2>&1
  $PY -m fairseq_cli.preprocess "${common[@]}" --destdir bin_joint --joined-dictionary > prep_joint.log 2>&1
fi

train() {  # NAME DATA LR STEPS ARGS...
  local name=$1 data=$2 lr=$3 steps=$4; shift 4
  [ -f "ckpt_$name/checkpoint_last.pt" ] && return
  $PY -m fairseq_cli.train "$data" --task translation --source-lang de --target-lang en --cpu --seed 1 \
    --optimizer adam --lr "$lr" --clip-norm 1.0 --max-tokens 2000 --max-update "$steps" --dropout 0.1 \
    --save-dir "ckpt_$name" --no-epoch-checkpoints --no-save-optimizer-state --disable-validation \
    --num-workers 0 --log-format simple --log-interval 50 "$@" > "train_$name.log" 2>&1
}
# lstm: bidirectional 2-layer encoder (16 per direction: its 32-wide states reach the 24-wide
# decoder through encoder_hidden_proj / encoder_cell_proj), decoder_out_embed_dim 16 (additional_fc)
train lstm_bi bin_sep 0.003 1200 --arch lstm --encoder-bidirectional --encoder-layers 2 --decoder-layers 2 \
  --encoder-embed-dim 16 --encoder-hidden-size 16 --decoder-embed-dim 16 --decoder-hidden-size 24 --decoder-out-embed-dim 16 &
# lstm_wiseman_iwslt_de_en at width 32 (its defaults otherwise: unidirectional, 1 layer)
train wiseman bin_sep 0.005 1500 --arch lstm_wiseman_iwslt_de_en --encoder-embed-dim 32 --decoder-embed-dim 32 --decoder-out-embed-dim 32 &
# lstm_luong_wmt_en_de at 2 layers x 32, one joint dictionary, --share-all-embeddings (tied output)
train luong_shared bin_joint 0.005 1500 --arch lstm_luong_wmt_en_de --share-all-embeddings --encoder-layers 2 --decoder-layers 2 \
  --encoder-embed-dim 32 --encoder-hidden-size 32 --decoder-embed-dim 32 --decoder-hidden-size 32 --decoder-out-embed-dim 32 &
wait

for name in lstm_bi wiseman luong_shared; do
  data=bin_sep; [ $name = luong_shared ] && data=bin_joint
  $PY "$HERE/fairseq_fixture.py" --data $data --checkpoint "ckpt_$name/checkpoint_last.pt" --out "$FIXTURES/fairseq_$name" \
    --settings "{\"fairseq_commit\": \"$(cat "$SRC/COMMIT")\", \"train\": \"$(grep -m1 -o "'arch': '[a-z_]*'" "train_$name.log" || true)\"}"
  head -50 data/test_2016_flickr.de > "$FIXTURES/fairseq_$name/src.txt"
  head -50 "$PEERS_ROOT/data/raw/test_2016_flickr.de" > "$FIXTURES/fairseq_$name/src.raw.txt"
done
$PY "$HERE/fairseq_fixture.py" --data bin_sep --checkpoint ckpt_wiseman/checkpoint_last.pt --out "$FIXTURES/fairseq_wiseman" \
  --expected expected_options.jsonl --extra "--lenpen 0.6 --unkpen 1 --min-len 3 --max-len-a 0.5 --max-len-b 5"
$PY "$HERE/fairseq_refused.py" "$FIXTURES/fairseq_wiseman/checkpoint.pt" "$FIXTURES/refused"
