#!/usr/bin/env bash
# The same model, side by side: an OpenNMT-py 2.3 and a Joey NMT 2.3 RNN model, each translated by
# its own toolkit and by attnmt after `attnmt convert` (docs/convert.md, docs/performance.md).
# test_2016_flickr (pre-encoded pieces, as the peers train on them), beam 5, whole process (model
# loading included), THREADS threads (default 2), ROUNDS rounds (default 1) alternating the
# programs (attnmt also in bf16 and int8 on the OpenNMT-py model). Per run: seconds, sentences/s,
# output words/s (of the detokenized output), BLEU; then
# how many lines attnmt writes exactly as the toolkit does, and the ratios of words/s.
#   scripts/bench_convert.sh ONMT_CKPT [JOEY_DIR]    (from ../shared/peers: PEERS_ROOT's runs;
#                                                    without JOEY_DIR, Joey NMT is left out)
# Needs the peers (../shared/peers/README.md: OpenNMT-py and Joey NMT from source on Debian's
# python3-torch) and their data (02_data.sh); ONMT_CKPT from 10_onmt.sh, JOEY_DIR from 20_joey.sh.
# Writes runs/bench_convert/ (outputs, logs, results.md).
set -euo pipefail
cd "$(dirname "$0")/.."
onmt_ckpt=${1:?usage: scripts/bench_convert.sh ONMT_CKPT [JOEY_DIR]}
joey_dir=${2:-}
threads=${THREADS:-2}
rounds=${ROUNDS:-1}
peers=$(cd ../shared/peers 2>/dev/null && pwd) || { echo "bench_convert.sh: no ../shared/peers" >&2; exit 2; }
# shellcheck disable=SC1091
source "$peers/scripts/env.sh"
export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE
bin=${ATTNMT:-build/attnmt}
out=runs/bench_convert
mkdir -p "$out"
src=$PEERS_ROOT/data/spm/test_2016_flickr.de
ref=$PEERS_ROOT/data/raw/test_2016_flickr.en
spm=$PEERS_ROOT/data/spm/spm8k.model
for f in "$onmt_ckpt" ${joey_dir:+"$joey_dir/config.yaml"} "$src" "$ref" "$spm"; do
  [ -e "$f" ] || { echo "bench_convert.sh: '$f' is missing" >&2; exit 2; }
done

$bin convert --from opennmt-py "$onmt_ckpt" --output "$out/onmt.pt" 2> "$out/convert_onmt.log"
if [ -n "$joey_dir" ]; then
  $bin convert --from joeynmt "$joey_dir" --output "$out/joey.pt" 2> "$out/convert_joey.log"
  joey_config=$(readlink -f "$joey_dir/config.yaml")
fi

# run NAME COMMAND...: runs it on the test set (stdin -> NAME.hyp), records its wall time.
declare -A seconds failed
run() {
  local name=$1; shift
  local start end
  start=$(date +%s%N)
  if ! "$@" < "$src" > "$out/$name.hyp" 2> "$out/$name.log"; then
    echo "[bench_convert] $name failed (see $out/$name.log)"
    failed[$name]=1
    return 0
  fi
  end=$(date +%s%N)
  seconds[$name]=$(awk -v a="${seconds[$name]:-0}" -v n=$((end - start)) 'BEGIN{printf "%.3f", a + n / 1e9}')
}
onmt() {
  PYTHONPATH=$ONMT_PYTHONPATH $PY "$PEERS_ROOT/src/OpenNMT-py/onmt/bin/translate.py" -model "$onmt_ckpt" \
    -src /dev/stdin -output /dev/stdout -beam_size 5 -batch_size 64 -batch_type sents -max_length 100 "$@"
}
joey() {
  # Joey NMT reads its config's paths relative to where it ran (PEERS_ROOT), its testing section
  # (beam 5 in the peers' configs) and its model_dir's best checkpoint.
  (cd "$PEERS_ROOT" && PYTHONPATH=$JOEY_PYTHONPATH $PY "$PEERS_ROOT/shims/joey/run_joey.py" translate "$joey_config")
}
attnmt_translate() { $bin translate --threads "$threads" --beam-size 5 "$@"; }

for r in $(seq 1 "$rounds"); do
  echo "[bench_convert] round $r/$rounds"
  run onmt_fp32 onmt
  run attnmt_onmt_fp32 attnmt_translate --model "$out/onmt.pt"
  run onmt_int8 onmt -int8
  run attnmt_onmt_bf16 attnmt_translate --model "$out/onmt.pt" --precision bf16
  run attnmt_onmt_int8 attnmt_translate --model "$out/onmt.pt" --precision int8
  if [ -n "$joey_dir" ]; then
    run joey_fp32 joey
    run attnmt_joey_fp32 attnmt_translate --model "$out/joey.pt"
  fi
done
names="onmt_fp32 attnmt_onmt_fp32 onmt_int8 attnmt_onmt_bf16 attnmt_onmt_int8"
if [ -n "$joey_dir" ]; then names="$names joey_fp32 attnmt_joey_fp32"; fi

lines=$(wc -l < "$src")
table=$out/results.md
{
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags:" \
       "$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512_bf16|avx512_vnni|amx_bf16|amx_int8)$' | xargs)"
  echo "threads $threads, beam 5, $lines sentences, $rounds round(s), whole process"
  echo
  echo "| run | seconds | sentences/s | output words/s | BLEU | lines equal to the toolkit's |"
  echo "|---|---:|---:|---:|---:|---:|"
} > "$table"
declare -A words
for name in $names; do
  if [ -n "${failed[$name]:-}" ]; then echo "| $name | failed | | | | |" >> "$table"; continue; fi
  spm_decode --model="$spm" --input_format=piece < "$out/$name.hyp" > "$out/$name.detok"
  words[$name]=$(wc -w < "$out/$name.detok")
  secs=$(awk -v s="${seconds[$name]}" -v r="$rounds" 'BEGIN{printf "%.2f", s / r}')
  bleu=$(PYTHONPATH=$SACREBLEU_PATH $PY -m sacrebleu "$ref" -i "$out/$name.detok" -m bleu -b 2>/dev/null)
  case $name in
    attnmt_onmt*) base=onmt_fp32 ;;
    attnmt_joey*) base=joey_fp32 ;;
    *) base=$name ;;
  esac
  same=$(paste -d '\t' "$out/$base.hyp" "$out/$name.hyp" | awk -F '\t' '$1 == $2 { n++ } END { printf "%d", n }')
  echo "| $name | $secs | $(awk -v l="$lines" -v s="$secs" 'BEGIN{printf "%.1f", l / s}') |" \
       "$(awk -v w="${words[$name]}" -v s="$secs" 'BEGIN{printf "%.0f", w / s}') | $bleu | $same / $lines |" >> "$table"
done
# words/s of the fastest of the runs named
fastest() { local best="" n; for n in "$@"; do [ -n "${failed[$n]:-}" ] && continue
  if [ -z "$best" ] || awk -v a="${seconds[$n]}" -v b="${seconds[$best]}" -v wa="${words[$n]}" -v wb="${words[$best]}" \
       'BEGIN{exit !(wa / a > wb / b)}'; then best=$n; fi; done; echo "$best"; }
ratio() { [ -z "$1" ] || [ -z "$2" ] || [ -n "${failed[$1]:-}${failed[$2]:-}" ] && { echo "n/a"; return; }; awk -v a="${seconds[$2]}" -v b="${seconds[$1]}" -v wa="${words[$2]}" -v wb="${words[$1]}" \
            'BEGIN{printf "%.2f", (wb / b) / (wa / a)}'; }
{
  echo
  echo "words/s ratios: attnmt/OpenNMT-py fp32 $(ratio attnmt_onmt_fp32 onmt_fp32);" \
       "attnmt bf16 / OpenNMT-py -int8 $(ratio attnmt_onmt_bf16 onmt_int8);" \
       "attnmt int8 / OpenNMT-py fp32 $(ratio attnmt_onmt_int8 onmt_fp32);" \
       "attnmt int8 / OpenNMT-py -int8 $(ratio attnmt_onmt_int8 onmt_int8);" \
       "attnmt int8 / attnmt fp32 $(ratio attnmt_onmt_int8 attnmt_onmt_fp32)"
  a=$(fastest attnmt_onmt_fp32 attnmt_onmt_bf16 attnmt_onmt_int8); o=$(fastest onmt_fp32 onmt_int8)
  echo "fastest: attnmt ($a) / OpenNMT-py ($o) $(ratio "$a" "$o")"
  if [ -n "$joey_dir" ]; then echo "attnmt/Joey NMT fp32 $(ratio attnmt_joey_fp32 joey_fp32)"; fi
} >> "$table"
cat "$table"
