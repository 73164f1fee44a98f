#!/usr/bin/env python3
"""Translate fixture onmt3_* with OpenNMT-py 3.5.1's OWN inference code (onmt3_decode.py) and
ALL of its translate.py defaults (beam 5, length_penalty avg, alpha 1, max_length 250,
max_length_ratio 1.25, n_best 1), at batch size 1 (3.5.1's max_length_ratio limit uses the
batch's longest source; at batch 1 it is each line's own), once with n_best 1 and once with
n_best 5 (in 3.x n_best is part of the beam's end condition). What a converted 3.x model stores
as its defaults must reproduce this (tests/e2e/test_convert.cpp).

    onmt3_defaults.py FIXDIR      -> FIXDIR/expected_v351_defaults.jsonl

One JSON object per source line: {"nbest1": [{"tokens", "score"}], "nbest5": [5 x {"tokens",
"score"}]}, score = 3.5.1's pred_score = log P (eos included) / (tokens + eos + bos). PYTHONPATH:
onmt3_shims : OpenNMT-py-3.5.1 tree, as onmt3_check.py.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = os.environ.get("PY", "/usr/bin/python3")


def decode3(fixdir, args):
    cmd = [PY, str(HERE / "onmt3_decode.py"), "-model", str(fixdir / "model.pt"),
           "-src", str(fixdir / "src.txt"), "-batch_size", "1"] + args
    sys.stderr.write("+ " + " ".join(cmd) + "\n")
    p = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return [json.loads(ln)["hyps"] for ln in p.stdout.decode("utf-8").splitlines()]


def main():
    fixdir = Path(sys.argv[1]).resolve()
    one, five = decode3(fixdir, []), decode3(fixdir, ["-n_best", "5"])
    with open(fixdir / "expected_v351_defaults.jsonl", "w", encoding="utf-8") as f:
        for a, b in zip(one, five):
            f.write(json.dumps({"nbest1": a, "nbest5": b}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
