#!/usr/bin/env bash
# Screenshots of `attnmt serve`'s translation page for docs/serving.md and the README: starts a
# server on two tiny models it trains on tests/data's 30 pairs (a few seconds each; global and hard
# monotonic attention) and, if given, a real MODEL; opens each view's shareable link in headless
# Chromium and writes
#   docs/page_translate.png   translations, heatmap, word alignment (MODEL's, else the tiny global one's)
#   docs/page_compare.png     the two tiny models side by side on a sentence they were trained on,
#                             BLEU / chrF against its reference
#   docs/page_streaming.png   the READ/WRITE path of the tiny monotonic model
#   docs/page_error.png       a server error (400) as a message
#   docs/page_phone.png       the translate view in a phone-sized window
#   scripts/page_screenshots.sh [MODEL [SENTENCE]]
# ATTNMT (default build/attnmt) and CHROMIUM name the programs.
set -euo pipefail
cd "$(dirname "$0")/.."
attnmt=${ATTNMT:-build/attnmt}
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -x "$attnmt" ] || { echo "page_screenshots: no $attnmt (build it, or set ATTNMT)" >&2; exit 1; }
[ -n "$browser" ] || { echo "page_screenshots: no chromium (scripts/install_deps.sh --test installs it)" >&2; exit 1; }
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

tiny_model() {  # tiny_model NAME ATTENTION STEPS
  cat > "$work/$1.yaml" <<EOF
data:
  train: {src: $PWD/tests/data/tiny.de, tgt: $PWD/tests/data/tiny.en}
  valid: {src: $PWD/tests/data/tiny.de, tgt: $PWD/tests/data/tiny.en}
tokenizer: {vocab_size: 400, shared: true}
model:
  embedding_size: 64
  encoder: {hidden_size: 64, layers: 1, dropout: 0.0}
  decoder: {hidden_size: 64, layers: 1, dropout: 0.0}
  attention: $2
train: {save_dir: $work/$1, batch_size: 10, max_steps: $3, learning_rate: 0.01, label_smoothing: 0.0, valid_every: 1000}
decode: {beam_size: 3}
threads: 1
EOF
  "$attnmt" train "$work/$1.yaml" > "$work/$1.log" 2>&1 || { cat "$work/$1.log" >&2; exit 1; }
  echo "$work/$1"
}

general=$(tiny_model general "{type: luong_general}" 400)
monotonic=$(tiny_model monotonic "{type: monotonic, score_bias_init: 0.0}" 400)
models=(--model "general=$general" --model "monotonic=$monotonic")
main=general
if [ $# -ge 1 ]; then
  main=$(basename "${1%.pt}")
  models+=(--model "$main=$1")
fi
"$attnmt" serve --port 0 "${models[@]}" > "$work/serve.log" 2>&1 &
server=$!
port=
for _ in $(seq 600); do
  port=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/serve.log" | head -1)
  [ -n "$port" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "page_screenshots: the server did not start" >&2; exit 1; }

urlencode() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
src=$(urlencode "$(sed -n 1p tests/data/tiny.de)")
main_src=$src
[ $# -ge 1 ] && main_src=$(urlencode "${2:-Ein Hund rennt durch den Schnee.}")
src2=$(urlencode "$(sed -n 1,2p tests/data/tiny.de)")
ref2=$(urlencode "$(sed -n 1,2p tests/data/tiny.en)")

shot() {  # shot NAME WIDTH,HEIGHT QUERY
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
    --virtual-time-budget=30000 --window-size="$2" --screenshot="docs/page_$1.png" \
    "http://127.0.0.1:$port/$3" > /dev/null 2>&1
  echo "docs/page_$1.png: $(stat -c %s "docs/page_$1.png") bytes"
}
shot translate 1000,1000 "?text=$main_src&model=$main&nbest=3"
shot compare 1100,1150 "?text=$src2&compare=general,monotonic&ref=$ref2"
shot streaming 1000,1150 "?text=$src&model=monotonic&view=stream"
shot error 1000,420 "?text=$main_src&model=$main&beam=64"
shot phone 390,844 "?text=$main_src&model=$main"
