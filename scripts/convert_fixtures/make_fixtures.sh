#!/usr/bin/env bash
# Regenerate tests/data/convert/: tiny real OpenNMT-py 2.3 / 3.x and Joey NMT 2.3 RNN checkpoints
# and the toolkits' own translations + scores of the first 50 lines of Multi30k test_2016_flickr,
# the fixtures of `attnmt convert` (tests/data/convert/README.md describes them).
#
#   scripts/convert_fixtures/make_fixtures.sh [FIXTURE...]     (default: all, in order)
#
# FIXTURE: onmt_brnn_lstm_general onmt_rnn_gru_mlp onmt_brnn_lstm_dot_bridge onmt3 (= the two
# onmt3_brnn_lstm_general* fixtures, made from onmt_brnn_lstm_general) joey_lstm_bahdanau_bridge
# joey_gru_luong_last joey_lstm_luong_zero. "prep" alone only (re)builds the shared spm500 data.
#
# Needs the peers (../shared/peers/README.md): OpenNMT-py 2.3.0 and Joey NMT 2.3 from source on
# Debian's python3-torch 1.13.1, their data (scripts/02_data.sh: data/raw), PEERS_ROOT set as for
# them, and the OpenNMT-py 3.5.1 tree (extracted here from the OpenNMT-py mirror, see below);
# onmt_brnn_lstm_general's REST answers (onmt_rest.py) need Debian's python3-flask and python3-waitress.
# Training and decoding run with 1 thread and fixed seeds (deterministic on the same machine/
# library versions; another BLAS or CPU may give other float rounding, hence other models).
# Work files: $PEERS_ROOT/convert_fixtures; output: tests/data/convert (OUT).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
peers=$(cd "$REPO/../shared/peers" 2>/dev/null && pwd) || { echo "make_fixtures.sh: no ../shared/peers" >&2; exit 2; }
: "${PEERS_ROOT:?set PEERS_ROOT as for the peers (../shared/peers/README.md)}"
# shellcheck disable=SC1091
source "$peers/scripts/env.sh"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
OUT=${OUT:-$REPO/tests/data/convert}
W=$PEERS_ROOT/convert_fixtures   # fixed: the configs' relative paths assume it (../data/raw)
# training updates (batch 64 sentences): each config's train_steps (OpenNMT-py) / updates (Joey);
# STEPS=N overrides them all (e.g. for a quick trial run)
NTEST=50                      # first NTEST lines of test_2016_flickr
CFG=$HERE/configs
ONMT3_COMMIT=3f0c5f7c24c0a26e7165e054cd8000e18b931799   # OpenNMT-py tag v3.5.1
ONMT3=$SRC/OpenNMT-py-3.5.1
mkdir -p "$W" "$OUT"
log() { echo "[make_fixtures $(date +%T)] $*" >&2; }

prep() {
  # one joint SentencePiece BPE model, 500 pieces, on the raw Multi30k train (de+en); pieces
  if [ ! -f "$W/spm500/spm500.model" ]; then
    log "spm500"
    mkdir -p "$W/spm500" "$W/pieces"
    spm_train --input="$PEERS_ROOT/data/raw/train.de,$PEERS_ROOT/data/raw/train.en" \
      --model_prefix="$W/spm500/spm500" --vocab_size=500 --model_type=bpe --character_coverage=1.0 \
      > "$W/spm500/spm_train.log" 2>&1
    for s in train val test_2016_flickr; do for l in de en; do
      spm_encode --model="$W/spm500/spm500.model" --output_format=piece \
        < "$PEERS_ROOT/data/raw/$s.$l" > "$W/pieces/$s.$l"
    done; done
  fi
  cp "$W/spm500/spm500.model" "$OUT/spm500.model"
  cp "$W/spm500/spm500.vocab" "$OUT/spm500.vocab"
}

# fixture_inputs DIR pieces|raw: src.txt (the model's input lines) and src.raw.txt
fixture_inputs() {
  head -n $NTEST "$PEERS_ROOT/data/raw/test_2016_flickr.de" > "$1/src.raw.txt"
  if [ "$2" = pieces ]; then head -n $NTEST "$W/pieces/test_2016_flickr.de" > "$1/src.txt"
  else cp "$1/src.raw.txt" "$1/src.txt"; fi
}

onmt_fixture() {  # NAME [onmt_fixture.py options]
  local name=$1; shift
  local wd=$W/$name fx=$OUT/$name STEPS=${STEPS:-$(sed -n 's/^train_steps: *//p' "$CFG/$name.yaml")}
  log "$name: train (OpenNMT-py 2.3, $STEPS steps)"
  rm -rf "$wd" "$fx"; mkdir -p "$wd" "$fx"
  sed -e "s/^train_steps: .*/train_steps: $STEPS/" -e "s/^save_checkpoint_steps: .*/save_checkpoint_steps: $STEPS/" \
    "$CFG/$name.yaml" > "$wd/config.yaml"
  ( cd "$W" && PYTHONPATH=$ONMT_PYTHONPATH $PY "$SRC/OpenNMT-py/onmt/bin/build_vocab.py" \
      -config "$name/config.yaml" -n_sample -1 -num_threads 1 > "$name/build_vocab.log" 2>&1
    PYTHONPATH=$ONMT_PYTHONPATH /usr/bin/time -v -o "$name/train.time" $PY "$SRC/OpenNMT-py/onmt/bin/train.py" \
      -config "$name/config.yaml" > "$name/train.log" 2>&1 )
  # release: OpenNMT-py's own onmt/bin/release_model.py (checkpoint["optim"] = None, torch.save)
  PYTHONPATH=$ONMT_PYTHONPATH $PY "$SRC/OpenNMT-py/onmt/bin/release_model.py" \
    -m "$wd/model_step_$STEPS.pt" -o "$fx/model.pt"
  fixture_inputs "$fx" pieces
  log "$name: decode"
  PYTHONPATH=$ONMT_PYTHONPATH $PY "$HERE/onmt_fixture.py" "$fx" "$@" 2> "$wd/fixture.log"
  cp "$wd/config.yaml" "$fx/train_config.yaml"
  grep -E "Step $STEPS/|Saving checkpoint" "$wd/train.log" | tail -2 >&2
}

onmt3_fixtures() {
  local f1=$OUT/onmt_brnn_lstm_general fx4=$OUT/onmt3_brnn_lstm_general fx5=$OUT/onmt3_brnn_lstm_general_safetensors
  [ -f "$f1/model.pt" ] || { echo "make_fixtures.sh: onmt3 needs onmt_brnn_lstm_general first" >&2; exit 2; }
  if [ ! -f "$ONMT3/onmt/__init__.py" ]; then
    log "extract OpenNMT-py 3.5.1 into $ONMT3"
    bash "$peers/scripts/extract_tree.sh" "$MIRRORS/OpenNMT+OpenNMT-py/repo" $ONMT3_COMMIT "$ONMT3" 2>/dev/null
  fi
  log "onmt3: re-save fixture 1 with OpenNMT-py 3.5.1's saver"
  rm -rf "$fx4" "$fx5" "$W/onmt3"; mkdir -p "$fx4" "$fx5" "$W/onmt3"
  local pp=$HERE/onmt3_shims:$ONMT3:$SRC/torchtext-0.5.0
  ( cd "$W" && PYTHONPATH=$pp $PY "$HERE/onmt_to_v3.py" -v2model "$f1/model.pt" \
      -config "$CFG/onmt3_brnn_lstm_general.yaml" -step "${STEPS:-$(sed -n 's/^train_steps: *//p' "$CFG/onmt_brnn_lstm_general.yaml")}" -out_pt "$fx4/model.pt" \
      -out_st_dir "$fx5" -notes "$W/onmt3/notes.json" 2> "$W/onmt3/convert.log" )
  for fx in "$fx4" "$fx5"; do
    cp "$f1/src.txt" "$f1/src.raw.txt" "$f1/expected.jsonl" "$fx/"
    log "$(basename "$fx"): translate with OpenNMT-py 3.5.1, compare with fixture 1"
    PYTHONPATH=$HERE/onmt3_shims:$ONMT3 $PY "$HERE/onmt3_check.py" "$fx" "$f1" "$W/onmt3/notes.json" \
      2> "$W/onmt3/check_$(basename "$fx").log"
    log "$(basename "$fx"): translate with all of OpenNMT-py 3.5.1's defaults (onmt3_defaults.py)"
    PYTHONPATH=$HERE/onmt3_shims:$ONMT3 $PY "$HERE/onmt3_defaults.py" "$fx" 2>> "$W/onmt3/check_$(basename "$fx").log"
  done
}

joey_fixture() {  # NAME raw|pieces [joey_fixture.py options]
  local name=$1 input=$2; shift 2
  local wd=$W/$name fx=$OUT/$name STEPS=${STEPS:-$(sed -n 's/^ *updates: *//p' "$CFG/$name.yaml")}
  log "$name: train (Joey NMT 2.3, $STEPS updates)"
  rm -rf "$wd" "$fx"; mkdir -p "$wd" "$fx"
  sed -e "s/^\(\s*updates:\).*/\1 $STEPS/" -e "s/^\(\s*validation_freq:\).*/\1 $STEPS/" \
    "$CFG/$name.yaml" > "$wd/config.yaml"
  if [ "$input" = raw ]; then
    # joint vocab for tied embeddings: the spm500 pieces in id order, one per line (the format of
    # Joey's own scripts/build_vocab.py output for sentencepiece: spm's vocab file without scores)
    cut -f1 "$W/spm500/spm500.vocab" > "$wd/vocab.txt"
  fi
  ( cd "$W" && PYTHONPATH=$JOEY_PYTHONPATH /usr/bin/time -v -o "$name/train.time" \
      $PY "$PEERS_ROOT/shims/joey/run_joey.py" train "$name/config.yaml" --skip-test > "$name/train.log" 2>&1 )
  local spm=()
  [ "$input" = raw ] && spm=(--spm "$W/spm500/spm500.model")
  PYTHONPATH=$JOEY_PYTHONPATH $PY "$HERE/joey_release.py" "$wd/model" "$STEPS" "$fx" "${spm[@]}" >&2
  fixture_inputs "$fx" "$input"
  log "$name: decode"
  PYTHONPATH=$JOEY_PYTHONPATH $PY "$HERE/joey_fixture.py" "$fx" "$@" 2> "$wd/fixture.log"
  cp "$wd/config.yaml" "$fx/train_config.yaml"
  grep -E "Best validation result|Checkpoint saved" "$wd/train.log" | tail -2 >&2
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(onmt_brnn_lstm_general onmt_rnn_gru_mlp onmt_brnn_lstm_dot_bridge onmt3
                                     joey_lstm_bahdanau_bridge joey_gru_luong_last joey_lstm_luong_zero)
prep
for t in "${targets[@]}"; do
  case $t in
    prep) ;;
    onmt_brnn_lstm_general) onmt_fixture $t --cli-greedy --sampling-check
      log "$t: OpenNMT-py's REST server (onmt_rest.py)"
      PYTHONPATH=$ONMT_PYTHONPATH $PY "$HERE/onmt_rest.py" "$OUT/$t" 1 3 ;;
    onmt_rnn_gru_mlp) onmt_fixture $t ;;
    onmt_brnn_lstm_dot_bridge) onmt_fixture $t ;;
    onmt3) onmt3_fixtures ;;
    joey_lstm_bahdanau_bridge) joey_fixture $t raw --cli-greedy ;;
    joey_gru_luong_last) joey_fixture $t pieces ;;
    joey_lstm_luong_zero) joey_fixture $t pieces ;;
    *) echo "make_fixtures.sh: unknown fixture '$t'" >&2; exit 2 ;;
  esac
done
log "sizes:"; (cd "$OUT" && du -b -- */* *.model 2>/dev/null | sort -k2) >&2
log "done"
