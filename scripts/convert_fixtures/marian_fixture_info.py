#!/usr/bin/env python3
"""settings.json and params.txt of a Marian fixture (called by marian_fixtures.sh).

    marian_fixture_info.py --work WORK/NAME --out tests/data/convert/NAME --marian-src MARIAN_DIR/src [--options "..."]

WORK/NAME holds Marian's train.cmd/train.log, the decoder's *.cmd/*.log; the decode settings are
read back from marian-decoder's own `[config]` log lines (its effective option values).
Needs numpy (Debian's /usr/bin/python3).
"""
import argparse
import json
import os
import re

import numpy as np

CONFIG = re.compile(r"^\[[^\]]+\] \[config\] ([\w-]+): ?(.*)$")
UPDATE = re.compile(r"Ep\. (\d+) : Up\. (\d+) : Sen\. ([\d,]+) : Cost ([-\d.eE+]+) \* ([\d,]+)")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def config(log):
    out = {}
    for line in read(log).splitlines():
        m = CONFIG.match(line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--marian-src", required=True)
    ap.add_argument("--options", default=None)
    a = ap.parse_args()
    w = a.work

    train_log = read(os.path.join(w, "train.log"))
    updates = UPDATE.findall(train_log)
    epoch, up, sents, cost, labels = updates[-1]
    version = re.search(r"\[marian\] Marian (.*)", train_log)

    npz_path = os.path.join(a.out, "model.npz")
    npz = np.load(npz_path)
    model_yml = bytes(npz["special:model.yml"].astype(np.uint8)).rstrip(b"\0").decode("utf-8")
    with open(os.path.join(a.out, "params.txt"), "w", encoding="utf-8") as f:
        for k in npz.files:
            v = npz[k]
            f.write(f"{k}\t{list(v.shape)}\t{v.dtype}\n")

    dec = config(os.path.join(w, "greedy.log"))
    keys = ["beam-size", "normalize", "word-penalty", "max-length-factor", "max-length", "max-length-crop",
            "allow-unk", "allow-special", "n-best", "mini-batch", "maxi-batch", "maxi-batch-sort", "cpu-threads",
            "precision", "skip-cost", "output-approx-knn", "word-scores"]
    settings = {
        "marian_commit": read(os.path.join(a.marian_src, "COMMIT")).strip(),
        "marian_version": version.group(1).strip() if version else None,
        "intgemm_commit": read(os.path.join(a.marian_src, "INTGEMM_COMMIT")).strip(),
        "build": "scripts/convert_fixtures/marian_source.sh: CPU only, Release, -march=native (AMD EPYC, AVX-512), "
                 "OpenBLAS (Debian libopenblas0-openmp 0.3.21), g++ 12.2, marian_build.patch",
        "train": read(os.path.join(w, "train.cmd")).strip(),
        "updates": int(up),
        "epoch": int(epoch),
        "last_logged_cost": float(cost),
        "last_logged": f"Ep. {epoch} : Up. {up} : Sen. {sents} : Cost {cost} * {labels} (ce-sum: cost per target label of the last --disp-freq updates)",
        "greedy": read(os.path.join(w, "greedy.cmd")).strip(),
        "beam5": read(os.path.join(w, "beam5.cmd")).strip(),
        "decoder_config": {k: dec.get(k) for k in keys},
        "lines": 50,
        "tokens": "output pieces as marian-decoder prints them (its YAML vocabulary strings), </s> not included",
        "score": "last field of the n-best line: (F0 - word_penalty * len) / len ** normalize, len = generated tokens incl. </s>; "
                 "with the defaults (normalize 0, word-penalty 0) it equals F0",
        "model_score": "the F0= feature: sum of the natural-log softmax probabilities of all generated tokens incl. </s>",
        "digits": "printed by a C++ ostream at its default precision: 6 significant digits (no option changes it)",
        "model_npz_bytes": os.path.getsize(npz_path),
        "vocab_sizes": {l: sum(1 for line in read(os.path.join(a.out, f"vocab.{l}.yml")).splitlines() if line.strip())
                        for l in ("de", "en")},
        "model_yml": model_yml,
    }
    if a.options:
        opt = config(os.path.join(w, "options.log"))
        settings["options"] = a.options
        settings["options_beam5"] = read(os.path.join(w, "options.cmd")).strip()
        settings["options_greedy"] = read(os.path.join(w, "options_greedy.cmd")).strip()
        settings["options_decoder_config"] = {k: opt.get(k) for k in keys}
    with open(os.path.join(a.out, "settings.json"), "w", encoding="utf-8") as f:
        json.dump(settings, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
