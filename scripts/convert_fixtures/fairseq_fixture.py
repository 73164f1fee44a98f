#!/usr/bin/env python3
"""One fairseq fixture for tests/data/convert: the checkpoint fairseq-train wrote, the dictionaries
fairseq-preprocess wrote, and fairseq-generate's own greedy (--beam 1) and beam-5 5-best outputs
and scores of the test subset (the first 50 lines of test_2016_flickr), as expected.jsonl.

    fairseq_fixture.py --data BIN_DIR --checkpoint CKPT --out FIXTURE_DIR [--settings JSON]

fairseq-generate (fairseq_cli.generate, run as a program) writes "H-<id>\\t<score>\\t<tokens>",
its score log2-based (hypo["score"] / math.log(2)); expected.jsonl holds the natural-log score
attnmt writes (x ln 2). --batch-size 1: each sentence decoded alone, as attnmt's tests do
(--required-batch-size-multiple 1: fairseq's default 8 makes its batching lose a sentence then).
Needs PYTHONPATH with fairseq's source and the shims (fairseq_fixtures.sh sets it).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys


def generate(data, checkpoint, beam, nbest, extra=()):
    cmd = [sys.executable, "-m", "fairseq_cli.generate", data, "--path", checkpoint, "--gen-subset", "test",
           "--task", "translation", "--source-lang", "de", "--target-lang", "en", "--cpu",
           "--beam", str(beam), "--nbest", str(nbest), "--batch-size", "1", "--num-workers", "0",
           # with its default 8, batch_by_size_vec drops the longest sentence's batch at --batch-size 1
           "--required-batch-size-multiple", "1"] + list(extra)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    hyps, sources = {}, {}
    for line in out.splitlines():
        if line.startswith("H-"):
            head, score, text = line.split("\t", 2)
            hyps.setdefault(int(head[2:]), []).append(
                {"tokens": text.split(" ") if text else [], "score": float(score) * math.log(2)})
        elif line.startswith("S-"):
            head, text = line.split("\t", 1)
            sources[int(head[2:])] = text
    return hyps, sources, " ".join(cmd[1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--settings", default="{}")
    ap.add_argument("--expected", default="expected.jsonl", help="the file to write in --out")
    ap.add_argument("--extra", default="", help="more fairseq-generate options (e.g. '--lenpen 0.6'); only the expected file is written")
    a = ap.parse_args()
    extra = a.extra.split()
    os.makedirs(a.out, exist_ok=True)
    greedy, sources, greedy_cmd = generate(a.data, a.checkpoint, 1, 1, extra)
    beam, _, beam_cmd = generate(a.data, a.checkpoint, 5, 5, extra)
    n = len(sources)
    with open(os.path.join(a.out, a.expected), "w") as f:
        for i in range(n):
            f.write(json.dumps({"greedy": greedy[i][0], "beam5": beam[i]}, ensure_ascii=False) + "\n")
    if extra:
        print("%s/%s: %d lines" % (a.out, a.expected, n))
        return
    shutil.copy(a.checkpoint, os.path.join(a.out, "checkpoint.pt"))
    for side in ("de", "en"):
        shutil.copy(os.path.join(a.data, "dict.%s.txt" % side), a.out)
    settings = json.loads(a.settings)
    settings.update({"greedy": greedy_cmd, "beam5": beam_cmd, "lines": n,
                     "score": "fairseq-generate's H- score (log2) x ln 2"})
    with open(os.path.join(a.out, "settings.json"), "w") as f:
        json.dump(settings, f, indent=1, ensure_ascii=False)
    print("%s: %d lines" % (a.out, n))


if __name__ == "__main__":
    main()
