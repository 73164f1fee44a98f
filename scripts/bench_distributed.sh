#!/usr/bin/env bash
# Data-parallel scaling on this machine: training target tokens/s of
# configs/multi30k_de_en/default.yaml (bi-LSTM 2x256, 2x256 input-feeding LSTM decoder, luong_general,
# SPM 8k, batch 64 sentences per process) with 1 process and with `--nproc 2`, 1 thread each,
# and the scaling efficiency = tokens/s(2) / (2 x tokens/s(1)).
# Steady state: the median of the report windows (REPORT updates each) after the first one;
# validation is left out (valid_every beyond the run). Writes runs/bench_distributed/result.json.
#   scripts/bench_distributed.sh [--hosts] [STEPS] [REPORT]      (default 140 updates, windows of 20)
# --hosts: the 2 processes are 2 hosts instead, network namespaces joined by a veth pair
# (10.231.8.1 / .2, the host name on 127.0.1.1 as on a stock Debian host) started with
# docs/training.md's torchrun-variable commands, the link shaped by `tc qdisc ... tbf` to 1 and
# to 10 Gbit/s, one run each with fp32 gradients and one with distributed.compress fp16 (root and
# `ip netns` needed; the namespaces are removed on exit).
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=0
if [ "${1:-}" = "--hosts" ]; then hosts=1; shift; fi
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
if ((hosts == 0)); then
  run two_processes --nproc 2
else
  ns=(attnmt-bench-a attnmt-bench-b)
  cleanup() {
    for n in "${ns[@]}"; do
      { ip netns pids "$n" 2>/dev/null || true; } | xargs -r kill -9 2>/dev/null || true
      ip netns del "$n" 2>/dev/null || true
      rm -rf "/etc/netns/$n"
    done
  }
  trap cleanup EXIT
  cleanup
  ip netns add "${ns[0]}"
  ip netns add "${ns[1]}"
  ip link add veth-a netns "${ns[0]}" type veth peer name veth-b netns "${ns[1]}"
  ip -n "${ns[0]}" addr add 10.231.8.1/24 dev veth-a
  ip -n "${ns[1]}" addr add 10.231.8.2/24 dev veth-b
  for i in 0 1; do
    ip -n "${ns[$i]}" link set lo up
    mkdir -p "/etc/netns/${ns[$i]}"
    printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$(hostname)" >"/etc/netns/${ns[$i]}/hosts"
  done
  ip -n "${ns[0]}" link set veth-a up
  ip -n "${ns[1]}" link set veth-b up
  for rate in 1gbit 10gbit; do
    # tbf needs a bucket of at least rate / HZ bytes to reach its rate
    burst=$([ "$rate" = 1gbit ] && echo 1mb || echo 8mb)
    ip netns exec "${ns[0]}" tc qdisc replace dev veth-a root tbf rate "$rate" burst "$burst" latency 20ms
    ip netns exec "${ns[1]}" tc qdisc replace dev veth-b root tbf rate "$rate" burst "$burst" latency 20ms
    for compress in none fp16; do
      name=two_hosts_$rate$([ "$compress" = none ] || echo "_$compress")
      rm -rf "${out:?}/$name"
      mkdir -p "$out/$name"
      cp "$out"/spm/spm.model "$out"/spm/spm.vocab "$out/$name/"
      echo "[bench] $name: 2 hosts, link $rate, distributed.compress $compress ($(date +%H:%M:%S))"
      for r in 1 0; do
        ip netns exec "${ns[$r]}" env -u GLOO_SOCKET_IFNAME RANK=$r WORLD_SIZE=2 MASTER_ADDR=10.231.8.1 MASTER_PORT=29500 \
          build/attnmt train "$config" --distributed --set train.save_dir="$out/$name" --set train.max_steps="$steps" \
          --set train.report_every="$report" --set train.valid_every=1000000 --set train.valid_metric=ppl \
          --set distributed.compress=$compress \
          --set data.test.src= --set data.test.tgt= --set train.max_minutes=0 --threads 1 >"$out/$name.$r.log" 2>&1 &
      done
      wait
    done
  done
fi

python3 - "$out" "$hosts" <<'PY'
import json, os, platform, statistics, sys
sys.path.insert(0, "scripts")
from train_log import read_log
out, hosts = sys.argv[1], sys.argv[2] == "1"
def speeds(name):
    train = read_log(f"{out}/{name}/log.jsonl")["train"][1:]  # first window: warm-up
    w = [r["tgt_tokens_per_sec"] for r in train]
    a = [r["allreduce_share"] for r in train if "allreduce_share" in r]
    return {"median": statistics.median(w), "min": min(w), "max": max(w), "windows": len(w),
            "allreduce_share": statistics.median(a) if a else 0.0}
one = speeds("one_process")
runs = [("2 hosts x 1, 1 Gbit/s", "two_hosts_1gbit"), ("2 hosts x 1, 1 Gbit/s, fp16", "two_hosts_1gbit_fp16"),
        ("2 hosts x 1, 10 Gbit/s", "two_hosts_10gbit"), ("2 hosts x 1, 10 Gbit/s, fp16", "two_hosts_10gbit_fp16")] if hosts \
    else [("2 x 1", "two_processes")]
# The gradient volume per update: every parameter's fp32 gradient, which a ring all-reduce sends
# (and receives) 2(N-1)/N times per rank.
params = read_log(f"{out}/one_process/log.jsonl")["start"][0]["parameters"]
volume = 4 * params * 2 * (2 - 1) / 2
result = {"machine": platform.processor() or platform.machine(), "cores": os.cpu_count(),
          "threads_per_process": 1, "batch_per_process": 64, "one_process": one,
          "gradient_bytes_per_update_per_rank": volume}
print("| processes x threads | train tgt tok/s (median, min–max) | speedup | efficiency | time in gradient all-reduce (rank 0) |")
print("|---|---|---|---|---|")
print(f"| 1 x 1 | {one['median']:,.0f} ({one['min']:,.0f}–{one['max']:,.0f}) | 1.00 | 100% | – |")
for label, name in runs:
    two = speeds(name)
    two["speedup"] = two["median"] / one["median"]
    two["scaling_efficiency"] = two["median"] / (2 * one["median"])
    result[name] = two
    print(f"| {label} | {two['median']:,.0f} ({two['min']:,.0f}–{two['max']:,.0f}) | {two['speedup']:.2f} | "
          f"{two['scaling_efficiency']:.0%} | {two['allreduce_share']:.0%} |")
print(f"gradient volume: {params:,} fp32 parameters, {volume / 1e6:.1f} MB sent and received per rank per update; "
      f"at 1 Gbit/s that is >= {volume * 8 / 1e9:.2f} s, at 10 Gbit/s >= {volume * 8 / 1e10:.3f} s")
json.dump(result, open(f"{out}/result.json", "w"), indent=2)
PY
