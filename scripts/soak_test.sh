#!/usr/bin/env bash
# Soak test of `attnmt serve` on 127.0.0.1: mixed traffic for a bounded time (scripts/soak_traffic.py:
# good requests of varied length, beam, n-best and attention; bad ones that must be 4xx; clients that
# cut their request, leave before the answer, read half of it, or send a byte at a time), one
# Markdown row per interval (answered, status codes, p50/p99 of the good requests, the server's RSS,
# open fds and threads, sentences dropped for clients that left), then SIGTERM: the server must
# exit 0 having answered every request it accepted. Exit 1 on an error, a 5xx or a leak (no
# unexpected status, fds and threads flat, RSS flat from halfway on in runs of 6 rows or more);
# latency and RSS are reported, not failed on (CTest's 2-minute run shares the cores with the
# other tests).
#   scripts/soak_test.sh [--minutes M] [--interval S] [--model MODEL] [--clients N] [--json FILE]
# Defaults: 3 minutes, a row a minute, 4 good clients, and a tiny model trained here from
# tests/data in a few seconds (MODEL: a model file or save dir instead, e.g. the quick start's).
# The server runs with an API key (the traffic sends it; some bad requests do not), THREADS
# threads (default 2). ATTNMT: the attnmt binary (default build/attnmt, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=3 interval=60 model="" clients=4 json=""
while (($#)); do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) echo "soak_test.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done
command -v python3 >/dev/null || { echo "soak_test.sh: python3 is not installed" >&2; exit 2; }
if [ -z "${ATTNMT:-}" ]; then
  [ -x build/attnmt ] || scripts/build.sh --target attnmt
  ATTNMT=build/attnmt
fi
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill -KILL "$server"; fi
  rm -rf "$work"
}
trap cleanup EXIT
export OMP_WAIT_POLICY=PASSIVE

if [ -z "$model" ]; then
  ATTNMT=$ATTNMT scripts/tiny_model.sh "$work/model" 80
  model=$work/model
fi
input=tests/data/tiny.de

key=soak-$RANDOM$RANDOM
"$ATTNMT" serve --model "soak=$model" --port 0 --threads "${THREADS:-2}" --api-key "$key" > "$work/serve.log" 2>&1 &
server=$!
port=""
for _ in $(seq 600); do
  port=$(sed -n 's|.*on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/serve.log" | head -1)
  [ -n "$port" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.log"; echo "soak_test.sh: the server did not start" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "soak_test.sh: the server did not listen within 60 s" >&2; exit 1; }
echo "soak: $minutes min against $model on 127.0.0.1:$port (pid $server), $clients good clients, rows every ${interval}s"
status=0
python3 scripts/soak_traffic.py --port "$port" --pid "$server" --input "$input" --minutes "$minutes" \
  --interval "$interval" --clients "$clients" --api-key "$key" ${json:+--json "$json"} || status=1

# SIGTERM: the server answers what it accepted, says so, and exits 0.
kill -TERM "$server"
rc=0
wait "$server" || rc=$?
server=""
stopped=$(grep -o 'stopped: [0-9]* request(s) accepted, [0-9]* answered' "$work/serve.log" || true)
echo "soak: server exit status $rc; $stopped"
if [ "$rc" -ne 0 ] || [ -z "$stopped" ]; then status=1; tail -20 "$work/serve.log"; fi
read -r accepted answered < <(echo "$stopped" | sed 's/[^0-9 ]//g' | awk '{print $1, $2}')
if [ "${accepted:-x}" != "${answered:-y}" ]; then echo "soak: FAILED: accepted != answered"; status=1; fi
if grep -qiE "terminate called|Segmentation|AddressSanitizer|a handler failed" "$work/serve.log"; then
  echo "soak: FAILED: the server's log says:"; grep -iE "terminate called|Segmentation|AddressSanitizer|a handler failed" "$work/serve.log" | head -5
  status=1
fi
exit $status
