#!/usr/bin/env python3
"""marian-decoder --n-best output -> the expected.jsonl of tests/data/convert (one JSON object a line).

    marian_nbest_to_jsonl.py --lines 50 --greedy greedy.nbest --beam5 beam5.nbest --out expected.jsonl

An n-best line of marian-decoder (translator/output_printer.h) is
    LINE ||| PIECES ||| F0= MODEL_SCORE ||| TOTAL
(one scorer: `F0= x`, with a space; `F0=x` when the hypothesis has no score breakdown). TOTAL is the
score Marian sorts the n-best list by: (F0 - word_penalty * len) / len ** normalize, len = generated
tokens including </s>. Both are printed by a C++ ostream at its default precision (6 significant
digits); they are parsed here as Python floats. The output keeps Marian's n-best order.
"""
import argparse
import json
import re

F0 = re.compile(r"(?:^|\s)F0=\s*(\S+)")


def read_nbest(path, lines):
    out = [[] for _ in range(lines)]
    with open(path, encoding="utf-8") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if not raw:
                continue
            fields = raw.split(" ||| ")
            if len(fields) != 4:
                raise SystemExit(f"{path}: unexpected n-best line: {raw!r}")
            idx, text, feats, total = fields
            m = F0.search(feats)
            if not m:
                raise SystemExit(f"{path}: no F0= in {raw!r}")
            out[int(idx)].append({"tokens": text.split(), "score": float(total), "model_score": float(m.group(1))})
    for i, entries in enumerate(out):
        if not entries:
            raise SystemExit(f"{path}: no hypothesis for line {i}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, required=True)
    ap.add_argument("--greedy", help="n-best file of --beam-size 1 --n-best")
    ap.add_argument("--beam5", help="n-best file of --beam-size 5 --n-best")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    greedy = read_nbest(a.greedy, a.lines) if a.greedy else None
    beam = read_nbest(a.beam5, a.lines) if a.beam5 else None
    with open(a.out, "w", encoding="utf-8") as f:
        for i in range(a.lines):
            obj = {}
            if greedy:
                if len(greedy[i]) != 1:
                    raise SystemExit(f"greedy: {len(greedy[i])} hypotheses for line {i}")
                obj["greedy"] = greedy[i][0]
            if beam:
                obj["beam5"] = beam[i]
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
