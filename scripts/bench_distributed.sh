#!/usr/bin/env bash
# Data-parallel scaling on this machine: training target tokens/s of
# configs/multi30k_de_en/default.yaml (bi-LSTM 2x256, 2x256 input-feeding LSTM decoder, luong_general,
# SPM 8k, batch 64 sentences per process) with 1 process and with `--nproc 2`, 1 thread each,
# and the scaling efficiency = tokens/s(2) / (2 x tokens/s(1)).
# Steady state: the median of the report windows (REPORT updates each) after the first one;
# validation is left out (valid_every beyond the run). Writes runs/bench_distributed/result.json.
#   scripts/bench_distributed.sh [STEPS] [REPORT]      (default 140 updates, windows of 20)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-140}
report=${2:-20}
scripts/install_deps.sh
scripts/build.sh --target attnmt >/dev/null
export OMP_WAIT_POLICY=PASSIVE
command -v python3 >/dev/null || { echo "bench_distributed.sh: python3 is needed for the summary" >&2; exit 2; }
out=runs/bench_distributed
config=configs/multi30k_de_en/default.yaml
mkdir -p "$out"

# One SentencePiece model for every run (trained once, copied in: the runs then only load it).
if [ ! -f "$out/spm/spm.model" ]; then
  build/attnmt train "$config" --set train.save_dir="$out/spm" --set train.max_steps=1 \
    --set train.valid_metric=ppl --set data.test.src= --set data.test.tgt= --threads 1 >"$out/spm.log" 2>&1
fi

run() {  # name, extra args...
  local name=$1; shift
  rm -rf "${out:?}/$name"
  mkdir -p "$out/$name"
  cp "$out"/spm/spm.model "$out"/spm/spm.vocab "$out/$name/"
  echo "[bench] $name: $* ($(date +%H:%M:%S))"
  build/attnmt train "$config" --set train.save_dir="$out/$name" --set train.max_steps="$steps" \
    --set train.report_every="$report" --set train.valid_every=1000000 --set train.valid_metric=ppl \
    --set data.test.src= --set data.test.tgt= --set train.max_minutes=0 --threads 1 "$@" >"$out/$name.log" 2>&1
}
run one_process
run two_processes --nproc 2

python3 - "$out" <<'PY'
import json, os, platform, statistics, sys
sys.path.insert(0, "scripts")
from train_log import read_log
out = sys.argv[1]
def speeds(name):
    train = read_log(f"{out}/{name}/log.jsonl")["train"][1:]  # first window: warm-up
    w = [r["tgt_tokens_per_sec"] for r in train]
    a = [r["allreduce_share"] for r in train if "allreduce_share" in r]
    return {"median": statistics.median(w), "min": min(w), "max": max(w), "windows": len(w),
            "allreduce_share": statistics.median(a) if a else 0.0}
one, two = speeds("one_process"), speeds("two_processes")
eff = two["median"] / (2 * one["median"])
result = {"machine": platform.processor() or platform.machine(), "cores": os.cpu_count(),
          "threads_per_process": 1, "batch_per_process": 64,
          "one_process": one, "two_processes": two, "speedup": two["median"] / one["median"],
          "scaling_efficiency": eff}
json.dump(result, open(f"{out}/result.json", "w"), indent=2)
print("| processes x threads | train tgt tok/s (median, min–max) | speedup | efficiency | time in gradient all-reduce (rank 0) |")
print("|---|---|---|---|---|")
print(f"| 1 x 1 | {one['median']:,.0f} ({one['min']:,.0f}–{one['max']:,.0f}) | 1.00 | 100% | – |")
print(f"| 2 x 1 | {two['median']:,.0f} ({two['min']:,.0f}–{two['max']:,.0f}) | {result['speedup']:.2f} | {eff:.0%} | "
      f"{two['allreduce_share']:.0%} |")
PY
