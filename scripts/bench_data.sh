#!/usr/bin/env bash
# Real-size data: start-up, memory and speed of training on 1M-10M sentence pairs.
#
# Makes its own corpus: Multi30k's training pairs repeated, each copy made distinct by a number
# at the end of both sides ("... . 17"), so lengths stay Multi30k's. For each size: a first run
# (SentencePiece on its sample, tokenizing into the token cache) and a resumed run (the cache
# memory-mapped), each STEPS updates of a small model; then the same model on Multi30k itself.
# Reports the time to the first update (the trainer's "first update done" line), the peak RSS
# (getrusage of the process) and the steady target tokens/s (the report lines after the first).
#
#   scripts/bench_data.sh [--sizes "1000000 3000000 10000000"] [--steps 300] [--threads 2] [--out DIR]
#
# Measure on a quiet machine: the table says which CPU it ran on.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES="1000000 3000000 10000000"
STEPS=300
THREADS=2
OUT=runs/bench_data
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sizes) SIZES="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "bench_data.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
ATTNMT=${ATTNMT:-build/attnmt}
[[ -x "$ATTNMT" ]] || { echo "bench_data.sh: no '$ATTNMT' (build first: scripts/build.sh)" >&2; exit 2; }
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE

# The small model of every run (the quick-start budget's sizes).
SMALL=(model.encoder.layers=1 model.decoder.layers=1 train.report_every=50 train.valid_every=100000
       train.keep_checkpoints=1 data.max_length=60 threads="$THREADS")

make_corpus() {  # N -> $OUT/corpus_N.{de,en}
  local n=$1 base="$OUT/corpus_$1"
  [[ -s "$base.en" ]] && return
  python3 - "$n" "$base" <<'EOF'
import gzip, sys
n, base = int(sys.argv[1]), sys.argv[2]
de = gzip.open("data/multi30k/train.de.gz", "rt", encoding="utf-8").read().splitlines()
en = gzip.open("data/multi30k/train.en.gz", "rt", encoding="utf-8").read().splitlines()
with open(base + ".de.tmp", "w", encoding="utf-8") as fd, open(base + ".en.tmp", "w", encoding="utf-8") as fe:
    for start in range(0, n, len(de)):
        k = start // len(de)
        m = min(len(de), n - start)
        fd.write("".join(f"{de[i]} {k}\n" for i in range(m)))
        fe.write("".join(f"{en[i]} {k}\n" for i in range(m)))
import os
os.rename(base + ".de.tmp", base + ".de")
os.rename(base + ".en.tmp", base + ".en")
EOF
}

# run LOG ARGS...: attnmt train, its peak RSS (MB) into LOG.rss
run() {
  local log=$1; shift
  python3 - "$log" "$ATTNMT" "$@" <<'EOF'
import resource, subprocess, sys
log, cmd = sys.argv[1], sys.argv[2:]
with open(log, "w") as out:
    rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
open(log + ".rss", "w").write("%.0f\n" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))
sys.exit(rc)
EOF
}

# summary LOG: start-up seconds, peak RSS MB, mean tok/s of the report lines after the first
summary() {
  local log=$1
  local startup tok
  startup=$(grep -o 'first update done [0-9.]*s' "$log" | grep -o '[0-9.]*' | head -1)
  tok=$(grep -o '[0-9]* tgt tok/s' "$log" | awk 'NR>1 {s+=$1; n++} END {if (n) printf "%.0f", s/n; else print "-"}')
  printf '%s\t%s\t%s' "${startup:--}" "$(cat "$log.rss")" "$tok"
}

TABLE="$OUT/results.tsv"
printf 'corpus\trun\tstartup_s\tpeak_rss_mb\ttgt_tok_s\n' > "$TABLE"
for n in $SIZES; do
  make_corpus "$n"
  dir="$OUT/run_$n"
  rm -rf "$dir"
  set_data=(data.train.src="$OUT/corpus_$n.de" data.train.tgt="$OUT/corpus_$n.en" train.save_dir="$dir")
  echo "== $n pairs: first run" >&2
  run "$OUT/first_$n.log" train configs/multi30k_de_en/bahdanau.yaml --set "${SMALL[@]}" "${set_data[@]}" \
    train.max_steps="$STEPS"
  printf '%s\tfirst\t%s\n' "$n" "$(summary "$OUT/first_$n.log")" >> "$TABLE"
  echo "== $n pairs: resumed run" >&2
  run "$OUT/second_$n.log" train configs/multi30k_de_en/bahdanau.yaml --resume --set "${SMALL[@]}" "${set_data[@]}" \
    train.max_steps=$((2 * STEPS))
  printf '%s\tresumed\t%s\n' "$n" "$(summary "$OUT/second_$n.log")" >> "$TABLE"
done
echo "== Multi30k (29,000 pairs)" >&2
rm -rf "$OUT/run_multi30k"
run "$OUT/multi30k.log" train configs/multi30k_de_en/bahdanau.yaml --set "${SMALL[@]}" train.save_dir="$OUT/run_multi30k" \
  train.max_steps="$STEPS"
printf 'multi30k\tfirst\t%s\n' "$(summary "$OUT/multi30k.log")" >> "$TABLE"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; $THREADS threads"
column -t -s $'\t' "$TABLE"
