#!/usr/bin/env bash
# serve's batching without HTTP (tools/bench_batching.cpp): CLIENTS client threads in one process,
# each sending one of the load test's mixed-length sentences (scripts/mixed_lengths.py, 1-60 words)
# as soon as its last is answered, static and continuous batching in turn, ROUNDS rounds of SECONDS
# each; sentences/s and p50/p99 per round (docs/serving.md, "Batching: continuous and static").
#   scripts/bench_batching.sh [MODEL] [CLIENTS] [SECONDS] [ROUNDS]
#   (default: runs/multi30k_de_en/quickstart, 32 clients, 8 s, 3 rounds; THREADS (2), MAX_BATCH
#   (serve's default), SENTENCES (500))
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-runs/multi30k_de_en/quickstart}
if [ ! -e "$model" ]; then
  echo "bench_batching.sh: no model at '$model' (train one: scripts/quickstart.sh, or give its path)" >&2
  exit 2
fi
scripts/install_deps.sh
scripts/build.sh --target bench_batching >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zcat -f data/multi30k/test_2016_flickr.de.gz | python3 scripts/mixed_lengths.py "${SENTENCES:-500}" > "$work/input.txt"
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "# $(date -u +%Y-%m-%d) on $cpu ($(nproc) cores), ${THREADS:-2} threads, model $model, load average $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_WAIT_POLICY=PASSIVE build/bench_batching "$model" "$work/input.txt" "${2:-32}" "${3:-8}" "${4:-3}" "${THREADS:-2}" \
  "${MAX_BATCH:-0}"
