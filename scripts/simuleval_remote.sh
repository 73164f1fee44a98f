#!/usr/bin/env bash
# SimulEval's own evaluator drives `attnmt serve` through its remote protocol (serve's POST /reset,
# PUT /input, GET /output; docs/serving.md), and what it logs is set against `translate --streaming`
# with the same policy: the same translation and the same word delays line for line, and the same
# scores. SimulEval runs from its public source, as scripts/simuleval_check.sh runs it.
#   scripts/simuleval_remote.sh MODEL SRC REF [SERVE_ARGS...]
#     e.g. scripts/simuleval_remote.sh runs/multi30k_de_en/uni_wait3 test.de test.en --set decode.wait_k=3
#   MIRRORS: where the git mirrors are (default /work/.mirror); OUT: keep the two runs' directories there
set -euo pipefail
model=${1:?usage: scripts/simuleval_remote.sh MODEL SRC REF [SERVE_ARGS...]}
src=${2:?usage: scripts/simuleval_remote.sh MODEL SRC REF [SERVE_ARGS...]}
ref=${3:?usage: scripts/simuleval_remote.sh MODEL SRC REF [SERVE_ARGS...]}
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
attnmt=${ATTNMT:-$root/build/attnmt}
MIRRORS=${MIRRORS:-/work/.mirror}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/simuleval" "$work/sacrebleu" "$work/stubs/textgrid"
git --git-dir="$MIRRORS/facebookresearch+SimulEval/repo" archive HEAD | tar -x -C "$work/simuleval"
git --git-dir="$MIRRORS/mjpost+sacrebleu/repo" archive v2.6.0 | tar -x -C "$work/sacrebleu"
echo "__version__ = \"2.6.0\"" > "$work/sacrebleu/sacrebleu/version.py"
touch "$work/stubs/textgrid/__init__.py"
source "$root/scripts/serve_wait.sh"

export OMP_WAIT_POLICY=PASSIVE
"$attnmt" serve --model "m=$model" --port 0 --threads 1 "$@" > "$work/serve.log" 2>&1 &
pid=$!
port=$(serve_wait "$work/serve.log" "$pid")
grep -o "SimulEval's remote protocol.*" "$work/serve.log"
start=$(date +%s.%N)
PYTHONPATH="$work/simuleval:$work/stubs:$work/sacrebleu" /usr/bin/python3 -m simuleval.cli --remote-eval \
  --remote-address 127.0.0.1 --remote-port "$port" --source "$src" --target "$ref" --output "$work/remote" \
  --source-type text --target-type text --latency-metrics AL LAAL AP DAL ATD --quality-metrics BLEU \
  --no-progress-bar > "$work/remote.out" 2>&1 || { cat "$work/remote.out" >&2; exit 1; }
end=$(date +%s.%N)
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=
# The same policy offline: the serve arguments that set decode keys, given to translate.
"$attnmt" translate --model "$model" --input "$src" --output "$work/offline.txt" --streaming --threads 1 \
  --reference "$ref" --simuleval-dir "$work/offline" "$@" 2> "$work/translate.log"
PYTHONPATH="$work/simuleval:$work/stubs:$work/sacrebleu" /usr/bin/python3 -m simuleval.cli --score-only \
  --output "$work/offline" --latency-metrics AL LAAL AP DAL ATD --quality-metrics BLEU > "$work/offline.out" 2>&1
/usr/bin/python3 - "$work" "$start" "$end" <<'PY'
import json, sys
work, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
remote = [json.loads(l) for l in open(f"{work}/remote/instances.log")]
offline = [json.loads(l) for l in open(f"{work}/offline/instances.log")]
assert len(remote) == len(offline), (len(remote), len(offline))
same = sum(r["prediction"] == o["prediction"] for r, o in zip(remote, offline))
delays = sum(r["delays"] == o["delays"] for r, o in zip(remote, offline))
words = sum(len(r["delays"]) for r in remote)
print(f"{len(remote)} sentences, {words} words, {end - start:.1f} s through the protocol")
print(f"translations as translate --streaming writes them: {same}/{len(remote)}; "
      f"word delays as its --simuleval-dir: {delays}/{len(remote)}")
def table(path):  # scores.tsv: a header and a row; the printed table: the same with an index column
    header, values = open(path).read().strip().split("\n")[-2:]
    header, values = header.split(), values.split()
    return dict(zip(header, values[len(values) - len(header):]))
for name, path in [("SimulEval --remote-eval", f"{work}/remote/scores.tsv"), ("translate --simuleval-dir", f"{work}/offline.out")]:
    try:
        scores = table(path)
    except Exception:
        continue
    print(name + ": " + ", ".join(f"{k} {v}" for k, v in scores.items()))
sys.exit(0 if same == delays == len(remote) else "the protocol's output differs from translate --streaming's")
PY
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp -r "$work/remote" "$work/offline" "$OUT/"; fi
