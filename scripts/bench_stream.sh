#!/usr/bin/env bash
# Streamed answers of `attnmt serve` (POST /v1/translate with "stream": true, docs/serving.md):
# the time to the first word against the whole answer, streamed and not streamed, one client and
# one sentence per request, A/B alternating; and the time of POST /v1/alternatives
# (scripts/bench_stream.py). Starts a server on 127.0.0.1 with THREADS threads (default 2) and one
# worker, and stops it at the end. The first word is also set against what the model needs before
# it at the least, the encoder's time and one decoder step's: their means per sentence from
# `attnmt translate --profile` on the same sentences, one at a time (batch size 1, one worker),
# at each beam size.
#   scripts/bench_stream.sh MODEL [INPUT [SENTENCES [BEAM ...]]]
#   (INPUT default data/multi30k/test_2016_flickr.de.gz; SENTENCES default 100; beams default 1 5)
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench_stream.sh MODEL [INPUT [SENTENCES [BEAM ...]]]}
input=${2:-data/multi30k/test_2016_flickr.de.gz}
sentences=${3:-100}
shift $(($# < 3 ? $# : 3))
threads=${THREADS:-2}
port=${PORT:-5078}
attnmt=${ATTNMT:-build/attnmt}
export OMP_WAIT_POLICY=PASSIVE
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$work"' EXIT
zcat -f "$input" | awk -v n="$sentences" 'NF && kept < n {print; kept++}' > "$work/input.txt"
beams=("$@")
[ ${#beams[@]} -gt 0 ] || beams=(1 5)
floor=""
for beam in "${beams[@]}"; do
  "$attnmt" translate --model "$model" --input "$work/input.txt" --output "$work/floor.txt" --threads "$threads" \
    --workers 1 --batch-size 1 --beam-size "$beam" --profile --stats "$work/floor.json" 2>/dev/null
  floor+="$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
p = j["phases"]
encoder = 1000 * p["encoder"] / j["encoder_calls"]
step = 1000 * sum(p[k] for k in ("attention", "recurrent", "output", "search")) / j["decoder_steps"]
print(f"{sys.argv[2]}:{encoder:.4f}:{step:.4f}", end=" ")' "$work/floor.json" "$beam")"
done
"$attnmt" serve --model "$model" --port "$port" --threads "$threads" --workers 1 > "$work/serve.log" 2>&1 &
server=$!
source scripts/serve_wait.sh
port=$(serve_wait "$work/serve.log" "$server")
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "# $(date -u +%Y-%m-%d) on $cpu ($(nproc) cores), $threads threads, one worker, model $model, load average $(cut -d' ' -f1-3 /proc/loadavg)"
FLOOR="$floor" python3 scripts/bench_stream.py "$port" "$work/input.txt" "$sentences" "${beams[@]}"
kill -TERM $server
wait $server
server=
