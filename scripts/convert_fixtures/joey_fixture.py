#!/usr/bin/env python3
"""Decode one Joey NMT 2.3 fixture with the toolkit's own prediction code and
write expected.jsonl + settings.json into the fixture directory.

    joey_fixture.py FIXDIR [--cli-greedy]

FIXDIR holds config.yaml (paths relative to FIXDIR), best.ckpt, src_vocab.txt,
trg_vocab.txt (and spm.model) and src.txt (the model's input lines: raw text for
the sentencepiece fixture, pieces for level "word"). Runs ($PY, PYTHONPATH=$JOEY_PYTHONPATH):
  1. joey_decode.py --beam-size 1 --n-best 1 --batch-size 1     (greedy)
  2. joey_decode.py --beam-size 5 --n-best 5 --batch-size 1
  3. joey_decode.py --beam-size 5 --n-best 1  (config batch_size 64) and greedy with batch 64
  4. `python -m joeynmt translate config.yaml < src.txt` (via the peers' run_joey.py
     launcher) in a scratch copy of FIXDIR (Joey writes translate.log into model_dir):
     the config's testing section (beam 5, n_best 1, batch 64) -> compared with 2./3.
  5. (--cli-greedy) the same with testing.beam_size 1 -> compared with 1.
"""
import argparse
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
PY = os.environ.get("PY", "/usr/bin/python3")
RUN_JOEY = Path(os.environ["PEERS_ROOT"]) / "shims" / "joey" / "run_joey.py"


def run(cmd, **kw):
    sys.stderr.write("+ " + " ".join(map(str, cmd)) + "\n")
    return subprocess.run(list(map(str, cmd)), check=True, **kw)


def driver(fixdir, beam, nbest, batch=None):
    cmd = [PY, HERE / "joey_decode.py", "config.yaml", "src.txt", "--beam-size", beam, "--n-best", nbest]
    if batch:
        cmd += ["--batch-size", batch]
    p = run(cmd, cwd=fixdir, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return [json.loads(ln) for ln in p.stdout.decode("utf-8").splitlines()]


def cli(fixdir, beam_size=None):
    with tempfile.TemporaryDirectory() as td:
        tdir = Path(td) / "fx"
        shutil.copytree(fixdir, tdir)
        if beam_size is not None:
            cfg = yaml.safe_load(open(tdir / "config.yaml"))
            cfg["testing"]["beam_size"] = beam_size
            yaml.safe_dump(cfg, open(tdir / "config.yaml", "w"), sort_keys=False, allow_unicode=True)
        with open(tdir / "src.txt", "rb") as fin:
            p = run([PY, RUN_JOEY, "translate", "config.yaml"], cwd=tdir, stdin=fin,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return p.stdout.decode("utf-8").split("\n")[:-1]


def diff(a, b):
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y] + list(range(min(len(a), len(b)), max(len(a), len(b))))


def dump_json(obj, path):
    """indent=1 JSON with lists of numbers kept on one line"""
    s = json.dumps(obj, indent=1, ensure_ascii=False)
    s = re.sub(r"\[\s*((?:-?[0-9.e+-]+|null)(?:,\s*(?:-?[0-9.e+-]+|null))*)\s*\]",
               lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", s)
    with open(path, "w", encoding="utf-8") as f:
        f.write(s + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixdir")
    ap.add_argument("--cli-greedy", action="store_true")
    a = ap.parse_args()
    fixdir = Path(a.fixdir).resolve()
    cfg = yaml.safe_load(open(fixdir / "config.yaml"))
    cfg_bs = cfg["testing"].get("batch_size", 64)

    greedy = driver(fixdir, 1, 1, 1)
    beam = driver(fixdir, 5, 5, 1)
    beam_cfgbs = driver(fixdir, 5, 1)
    greedy_cfgbs = driver(fixdir, 1, 1)
    n = len(greedy)
    with open(fixdir / "expected.jsonl", "w", encoding="utf-8") as f:
        for g, b in zip(greedy, beam):
            gh = g["hyps"][0]
            f.write(json.dumps({
                "greedy": {"tokens": gh["tokens"], "score": gh["score"], "token_scores": gh["token_scores"]},
                "beam5": [{"tokens": h["tokens"], "score": h["score"]} for h in b["hyps"]],
                "src_tokens": g["src_tokens"],
            }, ensure_ascii=False) + "\n")

    checks = {}
    b1 = [b["hyps"][0]["tokens"] for b in beam]
    d = diff([h["hyps"][0]["tokens"] for h in beam_cfgbs], b1)
    checks[f"beam5_nbest1_batch{cfg_bs}_tokens_equal_nbest5_batch1_best"] = not d
    checks[f"beam5_nbest1_batch{cfg_bs}_differing_lines"] = d
    checks[f"beam5_nbest1_batch{cfg_bs}_max_abs_score_diff"] = max(
        [abs(x["hyps"][0]["score"] - y["hyps"][0]["score"]) for x, y in zip(beam_cfgbs, beam)
         if x["hyps"][0]["tokens"] == y["hyps"][0]["tokens"]] or [None])
    d = diff([h["hyps"][0]["tokens"] for h in greedy_cfgbs], [g["hyps"][0]["tokens"] for g in greedy])
    checks[f"greedy_batch{cfg_bs}_tokens_equal_batch1"] = not d
    checks[f"greedy_batch{cfg_bs}_differing_lines"] = d
    c = cli(fixdir)
    d = diff(c, [b["hyps"][0]["detok"] for b in beam])
    checks["cli_translate_1best_equals_driver_beam5_best"] = not d
    checks["cli_translate_differing_lines"] = d
    checks["cli_translate_cmd"] = (f"run_joey.py translate config.yaml < src.txt (testing: beam_size "
                                   f"{cfg['testing']['beam_size']}, n_best {cfg['testing']['n_best']}, "
                                   f"batch_size {cfg_bs}); output = post-processed (detokenized) strings")
    if a.cli_greedy:
        c = cli(fixdir, beam_size=1)
        d = diff(c, [g["hyps"][0]["detok"] for g in greedy])
        checks["cli_translate_greedy_equals_driver_greedy"] = not d
        checks["cli_translate_greedy_differing_lines"] = d
    checks["beam_matters_lines_where_greedy_differs_from_beam_best"] = sum(
        1 for g, b in zip(greedy, beam) if g["hyps"][0]["tokens"] != b["hyps"][0]["tokens"])
    checks["distinct_beam_best_outputs"] = len({" ".join(t) for t in b1})
    def is_pad(h):  # beam_search fills missing n-best entries with (<unk>, -1.0)
        return h["tokens"] == ["<unk>"] and h["score"] == -1.0 and not h["ended_with_eos"]
    checks["greedy_hyps_without_eos_(max_length)"] = sum(1 for g in greedy if not g["hyps"][0]["ended_with_eos"])
    checks["beam5_hyps_without_eos_(max_length)"] = sum(
        1 for b in beam for h in b["hyps"] if not h["ended_with_eos"] and not is_pad(h))
    checks["beam5_nbest_padding_entries_(<unk>,-1.0)"] = sum(1 for b in beam for h in b["hyps"] if is_pad(h))
    checks["beam5_lines_by_number_of_real_hypotheses"] = {
        str(k): sum(1 for b in beam if sum(1 for h in b["hyps"] if not is_pad(h)) == k) for k in range(1, 6)}

    import torch
    import joeynmt
    from joeynmt.config import parse_test_args
    os.chdir(fixdir)  # testing.load_model is relative to the fixture dir
    t = parse_test_args(cfg["testing"], mode="translate")
    eff = {k: getattr(t, k) for k in t._fields if k not in ("load_model",)}
    settings = {
        "toolkit": "Joey NMT",
        "toolkit_version": joeynmt.__version__ if hasattr(joeynmt, "__version__") else "2.3.0",
        "toolkit_commit": "c19c6c8438263d3ad01054742bf98ab1f1fa61b3 (v2.3)",
        "torch": torch.__version__,
        "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")},
        "checkpoint": "best.ckpt",
        "config": "config.yaml",
        "input": "src.txt",
        "driver": "scripts/convert_fixtures/joey_decode.py = joeynmt.prediction.prepare(mode='translate') + "
                  "StreamDataset.set_item(line) per line + joeynmt.prediction.predict(...) "
                  "(-> joeynmt.search.search: recurrent_greedy / beam_search)",
        "config_testing_effective": eff,
        "greedy": {"beam_size": 1, "n_best": 1, "batch_size": 1, "return_prob": "hyp",
                   "max_output_length": t.max_output_length, "min_output_length": t.min_output_length,
                   "generate_unk": t.generate_unk, "repetition_penalty": t.repetition_penalty,
                   "no_repeat_ngram_size": t.no_repeat_ngram_size},
        "beam5": {"beam_size": 5, "n_best": 5, "batch_size": 1, "return_prob": "hyp",
                  "beam_alpha": t.beam_alpha, "max_output_length": t.max_output_length,
                  "min_output_length": t.min_output_length, "generate_unk": t.generate_unk,
                  "repetition_penalty": t.repetition_penalty, "no_repeat_ngram_size": t.no_repeat_ngram_size},
        "tokens": "Joey's decoded target tokens (trg_vocab.arrays_to_sentences, cut after </s>) without the "
                  "final </s>; src_tokens = Joey's tokenization of the source line (the model input is "
                  "these + </s>)",
        "score": {"beam5": "joeynmt.search.beam_search sequence score with return_prob='hyp': sum of the "
                           "log-probs of all generated tokens including </s> (beam_alpha -1: no length penalty)",
                  "greedy": "recurrent_greedy with return_prob='hyp' returns token-level log-probs "
                            "(token_scores, one per generated token incl. </s>); score = their sum"},
        "checks": checks,
    }
    dump_json(settings, fixdir / "settings.json")
    json.dump(checks, sys.stderr, indent=1)


if __name__ == "__main__":
    main()
