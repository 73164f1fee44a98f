#!/usr/bin/env bash
# Trains every attention variant's config in configs/multi30k_de_en/ (each with the default
# config's budget: train.max_steps) and writes the comparison table to docs/attention_results.md
# (the README's Quality table is its BLEU/chrF columns, copied by hand with the AER of `compare`):
# variant, BLEU and chrF on test_2016_flickr (beam 5, computed by `attnmt train` at the end of
# training from data.test), best valid perplexity, parameters, training target tokens/s (median of
# the run's report lines), steps and wall time. A config whose save dir already holds a finished
# run (a "test" line in log.jsonl) is not trained again, so the script can be stopped and re-run.
# A finished run's log.jsonl is copied to results/zoo_logs/NAME.jsonl (committed), so the table
# outlives runs/: a row comes from runs/ while it trains, else from results/zoo_logs/, else (no log
# at all) it is carried over from the previous docs/attention_results.md with a mark in its note.
#   scripts/train_attention_zoo.sh [NAME ...]     (default: all but default, quickstart, best*)
#   scripts/train_attention_zoo.sh --table     (no training: the table of what is trained)
# The table always has a row for every config, whichever NAMEs a run trains.
# ATTNMT=path/to/attnmt trains with that binary instead of building build/attnmt (e.g. a copy, so
# that rebuilding the tree during the hours the zoo takes does not change the binary under it).
set -euo pipefail
cd "$(dirname "$0")/.."
table_only=0
if [ "${1:-}" = --table ]; then table_only=1; shift; fi
if [ "$table_only" = 0 ] && [ -z "${ATTNMT:-}" ]; then
  scripts/install_deps.sh
  scripts/build.sh --target attnmt
  ATTNMT=build/attnmt
fi
export OMP_WAIT_POLICY=PASSIVE
command -v python3 >/dev/null || { echo "train_attention_zoo.sh: python3 is needed for the table" >&2; exit 2; }

all=()  # the table always lists every config, whichever ones this run trains
for f in configs/multi30k_de_en/*.yaml; do
  n=$(basename "$f" .yaml)
  [[ $n == default || $n == quickstart || $n == best || $n == best_* ]] || all+=("$n")
done
if (($#)); then names=("$@"); else names=("${all[@]}"); fi
finished() { python3 -c 'import sys; sys.path.insert(0, "scripts"); from train_log import finished; sys.exit(0 if finished(sys.argv[1]) else 1)' "$1"; }
keep_log() {  # a finished run's log goes to results/zoo_logs/, where git keeps it
  local log=runs/multi30k_de_en/$1/log.jsonl
  if finished "$log"; then mkdir -p results/zoo_logs && cp "$log" "results/zoo_logs/$1.jsonl"; fi
}
for n in "${names[@]}"; do
  keep_log "$n"
  ((table_only)) && continue
  dir=runs/multi30k_de_en/$n
  if finished "$dir/log.jsonl"; then
    echo "[zoo] $n: already trained"
    continue
  fi
  echo "[zoo] $n: training ($(date +%H:%M))"
  resume=(); ls "$dir"/ckpt.*.pt >/dev/null 2>&1 && resume=(--resume)
  "$ATTNMT" train "configs/multi30k_de_en/$n.yaml" "${resume[@]}" > "runs/zoo_$n.log" 2>&1 ||
    echo "[zoo] $n: training failed, see runs/zoo_$n.log"
  keep_log "$n"
done

python3 - "${all[@]}" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, "scripts")
from train_log import finished as has_test, read_log
notes = {}  # variant -> why its number is what it is
if os.path.exists("configs/multi30k_de_en/zoo_notes.tsv"):
    for line in open("configs/multi30k_de_en/zoo_notes.tsv"):
        if line.strip() and not line.startswith("#"):
            name, _, text = line.rstrip("\n").partition("\t")
            notes[name] = text
mark = "(carried over†)"
previous = {}  # variant -> its row in the table this script wrote last time
if os.path.exists("docs/attention_results.md"):
    for line in open("docs/attention_results.md"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 11 and cells[0] not in ("variant", "---"):
            previous[cells[0]] = cells
rows = []
for name in sys.argv[1:]:
    path = f"runs/multi30k_de_en/{name}/log.jsonl"
    if not has_test(path) and os.path.exists(f"results/zoo_logs/{name}.jsonl"):
        path = f"results/zoo_logs/{name}.jsonl"  # a finished run beats one in progress
    if not os.path.exists(path):
        if name in previous and previous[name][3] != "–":
            c = previous[name]
            c[10] = (c[10].replace(mark, "").strip() + " " + mark).strip()
            num = lambda v: None if v == "–" else float(v.replace(",", ""))
            rows.append({"variant": name, "attention": c[1].strip("`"), "decoder": c[2], "bleu": num(c[3]),
                         "chrf": num(c[4]), "valid_ppl": num(c[5]), "params": int(num(c[6])),
                         "tok_s": num(c[7]), "steps": int(c[8]), "minutes": num(c[9]), "note": c[10]})
        continue
    log = read_log(path)
    start = log["start"][0] if log["start"] else {}
    train, valid, test = log["train"], log["valid"], log["test"]
    best = [r for r in valid if r.get("best")]
    rows.append({
        "variant": name, "attention": start.get("attention", "?"),
        "decoder": start.get("decoder_style", "?"),
        "bleu": test[-1]["test_bleu"] if test else None, "chrf": test[-1]["test_chrf"] if test else None,
        "valid_ppl": best[-1]["valid_ppl"] if best else None,
        "params": start.get("parameters"),
        "tok_s": statistics.median(r["tgt_tokens_per_sec"] for r in train) if train else None,
        "steps": train[-1]["step"] if train else 0,
        "minutes": (valid[-1]["elapsed"] / 60) if valid else None,
        "note": notes.get(name, ""),
    })
fmt = lambda v, f: "–" if v is None else format(v, f)
lines = ["| variant | attention | decoder | BLEU | chrF | valid ppl | parameters | train tgt tok/s | steps | minutes | note |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
for r in sorted(rows, key=lambda r: -(r["bleu"] or -1)):
    lines.append(f"| {r['variant']} | `{r['attention']}` | {r['decoder']} | {fmt(r['bleu'], '.2f')} | "
                 f"{fmt(r['chrf'], '.2f')} | {fmt(r['valid_ppl'], '.2f')} | {fmt(r['params'], ',')} | "
                 f"{fmt(r['tok_s'], '.0f')} | {r['steps']} | {fmt(r['minutes'], '.1f')} | {r['note']} |")
table = "\n".join(lines)
print(table)
summary = (f"{sum(r['bleu'] is not None for r in rows)} of {len(sys.argv) - 1} configs trained to the end "
           "(a row without BLEU is still training). Budget: 3,000 updates each; tokens/s is the median "
           "of the run's report lines on a shared 2-core machine.")
if any(mark in r["note"] for r in rows):
    summary += (" † A row carried over from the previous table: its run's log.jsonl was lost with the "
                "machine that trained it (finished logs are kept in results/zoo_logs/ now).")
with open("docs/attention_results.md", "w") as f:
    f.write("# Attention variants on Multi30k de→en (test_2016_flickr, beam 5)\n\n"
            "Written by `scripts/train_attention_zoo.sh` from each run's own `log.jsonl`: " + summary +
            "\n\n" + table + "\n")
PY
