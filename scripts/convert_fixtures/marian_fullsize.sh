#!/bin/bash
# A full-size Marian s2s model for timing (nothing here is committed): marian_s2s's options
# (bidirectional GRU encoder 1 layer, conditional GRU decoder with base depth 2, no layer norm, no
# tying) at --dim-emb 256 --dim-rnn 256, trained BY MARIAN (built by marian_source.sh) on all 29,000
# Multi30k training pairs in spm500 pieces (the data of marian_fixtures.sh) for 1 epoch, at most 20
# minutes (timeout sends SIGTERM: Marian's default --sigterm save-and-exit saves the model), 2 threads;
# then marian-decoder's wall time (whole process, /usr/bin/time) for beam 5 on all 1,000 lines of
# test_2016_flickr.de with --cpu-threads 2 --mini-batch 64:
#
#   MARIAN_DIR=/work/marian OUT=/work/marian/fullsize scripts/convert_fixtures/marian_fullsize.sh
#   TIME_DECODE=0 ... trains only; a second run (model.npz there) only times the decoder.
#
# Needs marian_fixtures.sh's data ($MARIAN_DIR/work/data) and Marian in $MARIAN_DIR/build.
# Writes $OUT/model.npz, vocab.{de,en}.yml, train.log, test.beam5.txt, decode.time.
set -euo pipefail
MARIAN_DIR=${MARIAN_DIR:-/work/marian}
OUT=${OUT:-$MARIAN_DIR/fullsize}
DATA=${DATA:-$MARIAN_DIR/work/data}
BIN=$MARIAN_DIR/build
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT"

if [ ! -f "$OUT/model.npz" ]; then
  cmd=("$BIN/marian" --type s2s --seed 1234 --cpu-threads 2 --optimizer adam --learn-rate 0.003 --mini-batch 64
    --after 1e --save-freq 200u --max-length 100 --disp-freq 50 --enc-type bidirectional --enc-cell gru
    --enc-depth 1 --dec-cell gru --dec-depth 1 --dec-cell-base-depth 2 --dec-cell-high-depth 1
    --dim-emb 256 --dim-rnn 256 --train-sets "$DATA/train.de" "$DATA/train.en"
    --vocabs "$OUT/vocab.de.yml" "$OUT/vocab.en.yml" --model "$OUT/model.npz" --log "$OUT/train.log")
  echo "${cmd[*]}" > "$OUT/train.cmd"
  start=$(date +%s)
  timeout -s TERM 20m "${cmd[@]}" > /dev/null 2>&1 || echo "marian stopped: rc=$? (124 = the 20 min timeout)"
  echo "trained in $(( $(date +%s) - start )) s: $(grep -o 'Ep\. [0-9]* : Up\. [0-9]* .* Cost [0-9.]*' "$OUT/train.log" | tail -1)"
fi

if [ "${TIME_DECODE:-1}" = 1 ]; then
  cmd=("$BIN/marian-decoder" -m "$OUT/model.npz" -v "$OUT/vocab.de.yml" "$OUT/vocab.en.yml"
    --cpu-threads 2 --mini-batch 64 --beam-size 5 -i "$DATA/test_2016_flickr.de" -o "$OUT/test.beam5.txt" --quiet)
  echo "${cmd[*]}" > "$OUT/decode.cmd"
  /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KB max RSS" -o "$OUT/decode.time" "${cmd[@]}"
  echo "decode: $(cat "$OUT/decode.time") ($(wc -l < "$OUT/test.beam5.txt") lines)"
fi
