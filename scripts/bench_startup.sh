#!/usr/bin/env bash
# Start-up time of attnmt's commands (docs/architecture.md, "The front and the engine"): whole-process
# seconds, best and median of RUNS runs (default 10), as a Markdown table naming the CPU, and the
# number of shared libraries each program loads (ldd). The front's commands (--version, config,
# score, help) against the engine's `--version`, which is what every command cost before the front
# (every process that loads LibTorch pays it). With a trained MODEL (a model file or save dir),
# translate's rows too: one sentence, and an empty input (model loading and start-up alone); and
# the same with ATTNMT_RESIDENT=1 (cli/resident.h: LibTorch loaded once, each command a fork;
# started before the timed runs), and the same sentence sent to an `attnmt serve` of the model
# started once (curl's whole process).
#   scripts/bench_startup.sh [MODEL]        ATTNMT=path/to/attnmt (default build/attnmt)
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-}
runs=${RUNS:-10}
bin=${ATTNMT:-build/attnmt}
engine=$(dirname "$bin")/attnmt-engine
export OMP_WAIT_POLICY=PASSIVE
[ -x "$bin" ] && [ -x "$engine" ] || { echo "bench_startup.sh: no $bin or $engine (scripts/build.sh --target attnmt)" >&2; exit 2; }
[ -z "$model" ] || [ -e "$model" ] || { echo "bench_startup.sh: no model '$model'" >&2; exit 2; }
text=tests/data/tiny.en

# Seconds of each of $runs runs of "$@" (its output discarded; it must succeed), one a line.
times() {
  for ((i = 0; i < runs; ++i)); do
    local start=$EPOCHREALTIME
    "$@" > /dev/null 2>&1 || { echo "bench_startup.sh: failed: $*" >&2; exit 1; }
    local end=$EPOCHREALTIME
    echo "$start $end" | awk '{ printf "%.4f\n", $2 - $1 }'
  done
}

row() {  # row LABEL COMMAND...: its Markdown row, best and median
  local label=$1
  shift
  times "$@" | sort -n | awk -v label="$label" '{ t[NR] = $1 }
    END { m = NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
          printf "| %s | %.3f | %.3f |\n", label, t[1], m }'
}

source=tests/data/tiny.de
translate_one() { head -1 "$source" | "$bin" translate --model "$model"; }
translate_none() { "$bin" translate --model "$model" < /dev/null; }
serve_one() {
  curl -sf "http://127.0.0.1:$port/v1/translate" -d "{\"text\": [\"$(head -1 "$source")\"]}"
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $runs runs each, OMP_WAIT_POLICY=PASSIVE"
echo
echo "| command | best s | median s |"
echo "|---|---:|---:|"
row '`attnmt --version`' "$bin" --version
row '`attnmt config --keys`' "$bin" config --keys
row "\`attnmt score\` ($(wc -l < "$text") lines)" "$bin" score --ref "$text" --hyp "$text"
row '`attnmt help`' "$bin" help
row '`attnmt help translate`' "$bin" help translate
row '`attnmt-engine --version` (LibTorch loaded: every command before the front)' "$engine" --version
if [ -n "$model" ]; then
  row '`attnmt translate`, one sentence' translate_one
  row '`attnmt translate`, empty input' translate_none
  resident_dir=$(mktemp -d)
  trap 'pkill -f -- "--resident-engine $resident_dir/" || true; rm -rf "$resident_dir"' EXIT
  resident() { ATTNMT_RESIDENT=1 ATTNMT_RESIDENT_DIR=$resident_dir ATTNMT_RESIDENT_IDLE=120 "$@"; }
  resident translate_none > /dev/null  # starts it
  row '`ATTNMT_RESIDENT=1 attnmt translate`, one sentence' resident translate_one
  row '`ATTNMT_RESIDENT=1 attnmt translate`, empty input' resident translate_none
  log=$(mktemp)
  "$bin" serve --model "$model" --port 0 --threads 1 2> "$log" &
  server=$!
  trap 'kill "$server" 2> /dev/null; pkill -f -- "--resident-engine $resident_dir/" || true; rm -rf "$log" "$resident_dir"' EXIT
  port=""
  for ((i = 0; i < 600 && ${#port} == 0; ++i)); do
    sleep 0.1
    port=$(sed -n 's|.*on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)
  done
  [ -n "$port" ] || { echo "bench_startup.sh: attnmt serve did not listen within 60 s: $(cat "$log")" >&2; exit 1; }
  row '`attnmt serve` (started once), one sentence per request (curl)' serve_one
fi
echo
echo "Shared libraries (ldd): attnmt $(ldd "$bin" | wc -l), attnmt-engine $(ldd "$engine" | wc -l)"
