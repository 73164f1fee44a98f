#!/usr/bin/env bash
# int8 decoding against fp32 and bf16, the same model in one run (docs/performance.md#int8-decoding):
# test_2016_flickr, beam 5, whole process (model loading included), THREADS threads (default 2),
# ROUNDS rounds (default 3) alternating fp32 / bf16 (where the CPU has native bf16) / int8 / auto /
# fp32 + shortlist / int8 + shortlist (and the `attnmt export --precision int8` file),
# OMP_WAIT_POLICY=PASSIVE. ATTNMT_CPU_ISA (e.g. avx2) caps the instruction set as for attnmt: the
# CPU class below this one, on this CPU; the table names the kernels that ran. Per system: the best round's
# seconds, sentences/s, output words/s, peak RSS (/usr/bin/time), BLEU and chrF (attnmt score, =
# sacreBLEU), the model file's size, and each phase's seconds (translate --profile).
# RESIDENT=1: every command through the resident engine (ATTNMT_RESIDENT=1, started before the first
# round): the whole process is then the front, a fork and the command's own work, without
# LibTorch's loading (docs/architecture.md, "The front and the engine"); peak RSS is not measured.
#   scripts/bench_int8.sh MODEL [SRC REF]     (MODEL: a model file or save dir)
# Writes runs/bench_int8/ (outputs, results.md). The shortlist rows need the model's lexicon
# (attnmt lexicon --model MODEL); they are skipped without one.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: scripts/bench_int8.sh MODEL [SRC REF]}
src=${2:-data/multi30k/test_2016_flickr.de.gz}
ref=${3:-data/multi30k/test_2016_flickr.en.gz}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
bin=${ATTNMT:-build/attnmt}
out=runs/bench_int8
mkdir -p "$out"
export OMP_WAIT_POLICY=PASSIVE
resident=${RESIDENT:-0}
if [ "$resident" = 1 ]; then
  # Its own directory and idle time, so that it is this run's engine and goes away after it.
  export ATTNMT_RESIDENT=1 ATTNMT_RESIDENT_DIR=$PWD/$out/resident ATTNMT_RESIDENT_IDLE=60
  mkdir -p "$ATTNMT_RESIDENT_DIR" && chmod 700 "$ATTNMT_RESIDENT_DIR"
fi
via="" rss_note=""
if [ "$resident" = 1 ]; then via=" through the resident engine (ATTNMT_RESIDENT=1)" rss_note=" (the front)"; fi
[ -f "$model" ] || [ -d "$model" ] || { echo "bench_int8.sh: no model '$model'" >&2; exit 2; }
zcat -f "$src" > "$out/src.txt"
zcat -f "$ref" > "$out/ref.txt"
$bin export "$model" --output "$out/int8.pt" --precision int8 2> "$out/export.log"
model_file=$model
[ -d "$model" ] && model_file=$(ls "$model"/best.pt 2>/dev/null || ls -t "$model"/ckpt.*.pt | head -1)
shortlist=true
$bin translate --model "$model" --shortlist true < /dev/null > /dev/null 2>&1 || shortlist=false

systems=(fp32)
bf16_native=$(grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo && [[ "${ATTNMT_CPU_ISA:-}" =~ ^(|avx512_bf16|amx)$ ]] && echo yes || true)
[ -n "$bf16_native" ] && systems+=(bf16)
systems+=(int8 auto int8_export)
[ "$shortlist" = true ] && systems+=(fp32_shortlist int8_shortlist)
args_of() {
  case $1 in
    fp32) echo "--model $model --precision fp32" ;;
    bf16) echo "--model $model --precision bf16" ;;
    int8) echo "--model $model --precision int8" ;;
    auto) echo "--model $model --precision auto" ;;
    int8_export) echo "--model $out/int8.pt" ;;
    fp32_shortlist) echo "--model $model --precision fp32 --shortlist true" ;;
    int8_shortlist) echo "--model $model --precision int8 --shortlist true" ;;
  esac
}
declare -A best rss inner
for r in $(seq 1 "$rounds"); do
  for s in "${systems[@]}"; do
    # shellcheck disable=SC2046
    /usr/bin/time -f "%e %M" -o "$out/$s.time" $bin translate $(args_of "$s") --threads "$threads" --beam-size 5 \
      --input "$out/src.txt" --output "$out/$s.hyp" --stats "$out/$s.json" --profile 2> "$out/$s.log"
    read -r secs kb < "$out/$s.time"
    t=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["translate_seconds"])' "$out/$s.json")
    if [ -z "${inner[$s]:-}" ] || awk -v a="$t" -v b="${inner[$s]}" 'BEGIN{exit !(a < b)}'; then inner[$s]=$t; fi
    echo "[bench_int8] round $r/$rounds $s: ${secs}s, $((kb / 1024)) MiB$rss_note"
    if [ -z "${best[$s]:-}" ] || awk -v a="$secs" -v b="${best[$s]}" 'BEGIN{exit !(a < b)}'; then best[$s]=$secs; fi
    rss[$s]=$((kb / 1024))
    if [ "$resident" = 1 ]; then rss[$s]="–"; fi  # /usr/bin/time saw the front, not the command
  done
done
lines=$(wc -l < "$out/src.txt")
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512_bf16|avx512_vnni|avx_vnni|amx_bf16|amx_int8)$' | xargs)
{
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags: $flags${ATTNMT_CPU_ISA:+; ATTNMT_CPU_ISA=$ATTNMT_CPU_ISA}"
  echo "model $model_file; threads $threads, beam 5, $lines sentences, best of $rounds round(s), whole process$via"
  echo
  echo "| system | seconds | sentences/s | output words/s | vs fp32 (words/s) | translating s | vs fp32 (translating) | peak RSS MiB | BLEU | chrF | precision, kernel |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
} > "$out/results.md"
declare -A wps
for s in "${systems[@]}"; do
  words=$(wc -w < "$out/$s.hyp")
  wps[$s]=$(awk -v w="$words" -v t="${best[$s]}" 'BEGIN{printf "%.1f", w / t}')
  score=$($bin score --ref "$out/ref.txt" --hyp "$out/$s.hyp" --json)
  bleu=$(echo "$score" | python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["bleu"])')
  chrf=$(echo "$score" | python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["chrf"])')
  ran=$(python3 -c 'import json,sys; j = json.load(open(sys.argv[1])); print(j.get("precision", "?") + ", " + j.get("kernel", "?"))' "$out/$s.json")
  echo "| $s | ${best[$s]} | $(awk -v l="$lines" -v t="${best[$s]}" 'BEGIN{printf "%.1f", l / t}') | ${wps[$s]} |" \
       "$(awk -v a="${wps[$s]}" -v b="${wps[fp32]}" 'BEGIN{printf "%.2fx", a / b}') | ${inner[$s]} |" \
       "$(awk -v a="${inner[$s]}" -v b="${inner[fp32]}" 'BEGIN{printf "%.2fx", b / a}') | ${rss[$s]} | $bleu | $chrf | $ran |" >> "$out/results.md"
done
{
  echo
  echo "model file: $(stat -c %s "$model_file") bytes; int8 export: $(stat -c %s "$out/int8.pt") bytes" \
       "($(awk -v a="$(stat -c %s "$model_file")" -v b="$(stat -c %s "$out/int8.pt")" 'BEGIN{printf "%.2fx", a / b}') smaller)"
} >> "$out/results.md"
{
  echo
  echo "Phases of the translating time (translate --profile, the last round; seconds):"
  echo
  python3 - "$out" "${systems[@]}" <<'PY'
import json, sys
out, systems = sys.argv[1], sys.argv[2:]
names = ["tokenize", "encoder", "attention", "recurrent", "output", "search", "other"]
print("| system | " + " | ".join(names) + " | translating |")
print("|---|" + "---:|" * (len(names) + 1))
for s in systems:
    j = json.load(open(f"{out}/{s}.json"))
    p = j["phases"]
    print(f"| {s} | " + " | ".join("%.3f" % p[n] for n in names) + " | %.3f |" % j["translate_seconds"])
PY
} >> "$out/results.md"
cat "$out/results.md"
