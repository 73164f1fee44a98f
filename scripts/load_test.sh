#!/usr/bin/env bash
# Load test of `attnmt serve` on the loopback interface: 1, 8, 32 and 128 concurrent clients, each
# sending one sentence per request (the model's decode settings), sentences of mixed lengths: 1 to
# 60 words, uniformly drawn (seeded), cut from the running text of test_2016_flickr. Per level,
# DURATION seconds of plain requests (wrk, Debian's `wrk`, with a Lua script), then DURATION
# seconds of streamed ones (POST /v1/translate with "stream": true, scripts/load_stream.py). Prints,
# per level, sentences/s and the p50/p95/p99 latency, and the server's throughput as a share of
# `attnmt translate`'s batch throughput on the same model and input in the same run; the p50 at 1
# client is set against translating one sentence alone (`translate --batch-size 1` with one worker,
# on one thread and on THREADS threads, the faster of the two: its search seconds per sentence,
# model loading excluded); the server's mean batch size (from /metrics: sentences per search batch
# under static batching, per decoder step under continuous batching); and for the streamed
# requests the time to the first word (p50/p99) and to the whole answer (p50). Two servers run
# side by side, one per batching (`--batching static` and `continuous`), and each level measures
# them in turn, so that the two rows of a level come from the same run.
#   scripts/load_test.sh [MODEL] [DURATION]   (default: runs/multi30k_de_en/quickstart, 20 s)
# Bounded: each level runs DURATION seconds; the server binds 127.0.0.1 only and is stopped with
# SIGTERM at the end (BATCHING=static or continuous measures one of them only; LEVELS="8 32" some
# levels only). Threads: THREADS (default 2) for the server and for translate alike; the
# server batches up to MAX_BATCH sentences (default: serve's, 8 on a CPU) and waits at most
# MAX_WAIT_MS (default 5) for more.
# SENTENCES (default 500) mixed-length sentences are made.
# Exit 1 when a level had errors (non-2xx answers, connections refused, dropped or timed out, a
# stream without its done event) or the server did not exit 0 at SIGTERM; the rates and latencies
# are reported, not failed on.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-runs/multi30k_de_en/quickstart}
duration=${2:-20}
threads=${THREADS:-2}
input=data/multi30k/test_2016_flickr.de.gz
if [ ! -e "$model" ]; then
  echo "load_test.sh: no model at '$model' (train one: scripts/quickstart.sh, or give its path)" >&2
  exit 2
fi
command -v wrk >/dev/null || { echo "load_test.sh: wrk is not installed (Debian: apt-get install wrk)" >&2; exit 2; }
if [ -z "${ATTNMT:-}" ]; then
  scripts/install_deps.sh
  scripts/build.sh --target attnmt
  ATTNMT=build/attnmt
fi
export OMP_WAIT_POLICY=PASSIVE
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
# Mixed lengths: the test set's words as one running text, cut into sentences of 1-60 words.
zcat -f "$input" | python3 scripts/mixed_lengths.py "${SENTENCES:-500}" > "$work/input.txt"

# batch throughput, and one sentence at a time
"$ATTNMT" translate --model "$model" --input "$work/input.txt" --output "$work/batch.txt" --threads "$threads" \
  --stats "$work/batch.json" 2>/dev/null
for t in 1 "$threads"; do
  "$ATTNMT" translate --model "$model" --input "$work/input.txt" --output "$work/single.txt" --threads "$t" \
    --batch-size 1 --set decode.workers=1 --stats "$work/single$t.json" 2>/dev/null
done
read -r batch_rate alone_ms alone_1 alone_t < <(python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))
ms = [1000 * s["translate_seconds"] / s["sentences"] for s in (json.load(open(f)) for f in sys.argv[2:])]
print(b["sentences"] / b["translate_seconds"], min(ms), *ms)' \
  "$work/batch.json" "$work/single1.json" "$work/single$threads.json")

cat > "$work/one_sentence.lua" <<LUA
local lines = {}
for line in io.lines("$work/input.txt") do lines[#lines + 1] = line end
local counter = 0
local function quote(s) return '"' .. s:gsub('\\\\', '\\\\\\\\'):gsub('"', '\\\\"') .. '"' end
request = function()
  counter = counter + 1
  local body = '{"text": [' .. quote(lines[(counter % #lines) + 1]) .. ']}'
  return wrk.format("POST", "/v1/translate", {["Content-Type"] = "application/json"}, body)
end
done = function(summary, latency, requests)
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format("RESULT %d %.3f %.3f %.3f %.3f %d\n", summary.requests, summary.duration / 1e6,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000, errors))
end
LUA

modes=${BATCHING:-static continuous}
source scripts/serve_wait.sh
declare -A ports servers
for mode in $modes; do
  "$ATTNMT" serve --model "$model" --port 0 --threads "$threads" ${MAX_BATCH:+--max-batch-sentences "$MAX_BATCH"} \
    --max-wait-ms "${MAX_WAIT_MS:-5}" --batching "$mode" --max-queue 4096 > "$work/serve-$mode.log" 2>&1 &
  servers[$mode]=$!
  ports[$mode]=$(serve_wait "$work/serve-$mode.log" "${servers[$mode]}")
done
server="${servers[*]}"

cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "# $(date -u +%Y-%m-%d) on $cpu ($(nproc) cores), $threads threads, model $model, beam as its config, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# ${SENTENCES:-500} sentences of 1-60 words (mean $(awk '{n += NF} END {printf "%.1f", n / NR}' "$work/input.txt")); ${duration} s per level plain, then ${duration} s streamed"
printf "batch throughput (attnmt translate): %.1f sentences/s; one sentence alone: %.1f ms (1 thread %.1f, %s threads %.1f)\n" \
  "$batch_rate" "$alone_ms" "$alone_1" "$threads" "$alone_t"
echo "| clients | batching | sentences/s | share of batch | p50 ms | p95 ms | p99 ms | p50 / alone | mean batch | streamed/s | first word p50 ms | first word p99 ms | streamed p50 ms | errors |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
# The mean batch: static, sentences per search batch; continuous, sentences per decoder step.
batch_sums() {
  curl -s "http://127.0.0.1:$port/metrics" | awk -v mode="$mode" '
    mode == "static" && /^attnmt_batch_sentences_(sum|count) / {printf "%s ", $2}
    mode == "continuous" && /^attnmt_running_step_sentences_total / {sum = $2}
    mode == "continuous" && /^attnmt_running_steps_total / {count = $2}
    END {if (mode == "continuous") printf "%s %s ", sum, count}'
}
failed=0
for clients in ${LEVELS:-1 8 32 128}; do
 for mode in $modes; do
  port=${ports[$mode]}
  wrk_threads=$(( clients < 2 ? 1 : 2 ))
  read -r sum0 count0 <<< "$(batch_sums)"
  out=$(wrk -t"$wrk_threads" -c"$clients" -d"${duration}s" --timeout 30s -s "$work/one_sentence.lua" \
        "http://127.0.0.1:$port" 2>&1 | grep '^RESULT')
  read -r _ requests seconds p50 p95 p99 errors <<< "$out"
  read -r sum1 count1 <<< "$(batch_sums)"
  streamed=$(python3 scripts/load_stream.py "$port" "$work/input.txt" "$clients" "$duration" | grep '^RESULT')
  read -r _ s_requests s_seconds first50 first99 whole50 _ s_errors <<< "$streamed"
  python3 -c '
import sys
c, mode, n, s, p50, p95, p99, e, batch, alone, sums, sn, ss, f50, f99, w50, se = sys.argv[1:]
s0, c0, s1, c1 = map(float, sums.split())
rate = float(n) / float(s)
mean = (s1 - s0) / max(c1 - c0, 1)
print(f"| {c} | {mode} | {rate:.1f} | {100 * rate / float(batch):.0f}% | {float(p50):.1f} | {float(p95):.1f} | {float(p99):.1f} | "
      f"{float(p50) / float(alone):.2f}x | {mean:.1f} | {float(sn) / float(ss):.1f} | {float(f50):.1f} | {float(f99):.1f} | "
      f"{float(w50):.1f} | {e} + {se} |")' \
    "$clients" "$mode" "$requests" "$seconds" "$p50" "$p95" "$p99" "$errors" "$batch_rate" "$alone_ms" "$sum0 $count0 $sum1 $count1" \
    "$s_requests" "$s_seconds" "$first50" "$first99" "$whole50" "$s_errors"
  if [ -z "$errors" ] || [ "$errors" != 0 ] || [ -z "$s_errors" ] || [ "$s_errors" != 0 ]; then
    echo "load_test.sh: FAILED: ${errors:-no result from wrk} plain and ${s_errors:-no result} streamed errors at $clients clients ($mode)" >&2
    failed=1
  fi
 done
done
for mode in $modes; do
  kill -TERM "${servers[$mode]}"
  rc=0
  wait "${servers[$mode]}" || rc=$?
  echo "server ($mode batching) exited $rc"
  if [ "$rc" -ne 0 ]; then failed=1; fi
done
exit $failed
