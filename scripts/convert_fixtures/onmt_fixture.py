#!/usr/bin/env python3
"""Decode one OpenNMT-py 2.3 fixture with the toolkit's own translator and write
expected.jsonl + settings.json into the fixture directory.

    onmt_fixture.py FIXDIR [--cli-greedy] [--sampling-check]

FIXDIR must already hold model.pt (released checkpoint) and src.txt (pieces).
Runs (all with PYTHONPATH=$ONMT_PYTHONPATH, the interpreter $PY):
  1. onmt_decode.py greedy: -beam_size 1 -random_sampling_topk 1 -n_best 1 -batch_size 1
  2. onmt_decode.py beam:   -beam_size 5 -n_best 5 -batch_size 1
  3. onmt_decode.py beam:   -beam_size 5 -n_best 1 -batch_size 30   (translate.py defaults)
  4. translate.py CLI with all defaults (beam 5, n_best 1, batch 30) -> 1-best file
  5. (--cli-greedy) translate.py -beam_size 1 -random_sampling_topk 1 -> compare with 1.
  6. (--sampling-check) driver -beam_size 1 (default random_sampling_topk 0 -> BeamSearch k=1)
"""
import argparse
import json
import re
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = os.environ.get("PY", "/usr/bin/python3")
SRC = Path(os.environ["SRC"])  # $PEERS_ROOT/src (env.sh)
TRANSLATE = SRC / "OpenNMT-py" / "onmt" / "bin" / "translate.py"


def dump_json(obj, path):
    """indent=1 JSON with lists of numbers kept on one line"""
    s = json.dumps(obj, indent=1, ensure_ascii=False)
    s = re.sub(r"\[\s*((?:-?[0-9.e+-]+|null)(?:,\s*(?:-?[0-9.e+-]+|null))*)\s*\]",
               lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", s)
    with open(path, "w", encoding="utf-8") as f:
        f.write(s + "\n")


def run(cmd, **kw):
    sys.stderr.write("+ " + " ".join(map(str, cmd)) + "\n")
    return subprocess.run(list(map(str, cmd)), check=True, **kw)


def driver(fixdir, mode, args, tag):
    out = fixdir.parent / f".{fixdir.name}.{tag}.jsonl"
    with open(out, "w") as f:
        run([PY, HERE / "onmt_decode.py", "-model", fixdir / "model.pt", "-src", fixdir / "src.txt",
             "-mode", mode] + args, stdout=f, stderr=subprocess.DEVNULL)
    rows = [json.loads(line)["hyps"] for line in open(out)]
    out.unlink()
    return rows


def cli(fixdir, args, tag):
    out = fixdir.parent / f".{fixdir.name}.{tag}.txt"
    run([PY, TRANSLATE, "-model", fixdir / "model.pt", "-src", fixdir / "src.txt", "-output", out]
        + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lines = out.read_text(encoding="utf-8").split("\n")
    out.unlink()
    assert lines[-1] == ""
    return [ln.split(" ") if ln else [] for ln in lines[:-1]]


def diff_lines(a, b):
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y] + list(range(min(len(a), len(b)), max(len(a), len(b))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixdir")
    ap.add_argument("--cli-greedy", action="store_true")
    ap.add_argument("--sampling-check", action="store_true")
    a = ap.parse_args()
    fixdir = Path(a.fixdir).resolve()

    greedy_args = ["-beam_size", "1", "-random_sampling_topk", "1", "-n_best", "1", "-batch_size", "1"]
    beam_args = ["-beam_size", "5", "-n_best", "5", "-batch_size", "1"]
    greedy = driver(fixdir, "greedy", greedy_args, "greedy")
    beam = driver(fixdir, "beam", beam_args, "beam")
    beam_b30 = driver(fixdir, "beam", ["-beam_size", "5", "-n_best", "1", "-batch_size", "30"], "beam_b30")
    greedy_b30 = driver(fixdir, "greedy", ["-beam_size", "1", "-random_sampling_topk", "1", "-n_best", "1",
                                            "-batch_size", "30"], "greedy_b30")

    n = len(greedy)
    assert n == len(beam) == len(beam_b30)
    with open(fixdir / "expected.jsonl", "w", encoding="utf-8") as f:
        for g, b in zip(greedy, beam):
            assert len(g) == 1 and len(b) == 5
            f.write(json.dumps({"greedy": g[0], "beam5": b}, ensure_ascii=False) + "\n")

    b1 = [b[0]["tokens"] for b in beam]
    checks = {}
    # translate.py with ALL defaults (beam 5, n_best 1, batch_size 30): its 1-best file
    cli_default = cli(fixdir, [], "cli_default")
    d = diff_lines(cli_default, b1)
    checks["translate_py_defaults_1best_equals_driver_beam5_best"] = not d
    checks["translate_py_defaults_1best_differing_lines"] = d
    # same settings as translate.py defaults, through the driver (n_best 1, batch 30)
    d30 = diff_lines([h[0]["tokens"] for h in beam_b30], b1)
    checks["beam5_batch30_nbest1_tokens_equal_batch1_nbest5_best"] = not d30
    checks["beam5_batch30_nbest1_differing_lines"] = d30
    checks["beam5_batch30_max_abs_score_diff_vs_batch1"] = max(
        [abs(h[0]["score"] - b[0]["score"]) for h, b in zip(beam_b30, beam) if h[0]["tokens"] == b[0]["tokens"]]
        or [None])  # None: no line with equal tokens
    dg30 = diff_lines([h[0]["tokens"] for h in greedy_b30], [g[0]["tokens"] for g in greedy])
    checks["greedy_batch30_tokens_equal_batch1"] = not dg30
    checks["greedy_batch30_differing_lines"] = dg30
    if a.cli_greedy:
        cg = cli(fixdir, ["-beam_size", "1", "-random_sampling_topk", "1"], "cli_greedy")
        dg = diff_lines(cg, [g[0]["tokens"] for g in greedy])
        checks["translate_py_greedy_argmax_equals_driver_greedy"] = not dg
        checks["translate_py_greedy_argmax_differing_lines"] = dg
        checks["translate_py_greedy_cmd"] = "translate.py -model model.pt -src src.txt -beam_size 1 -random_sampling_topk 1 (batch_size 30 default)"
    if a.sampling_check:
        # translate.py -beam_size 1 with the default -random_sampling_topk 0 does NOT use GreedySearch:
        # Translator.translate_batch picks GreedySearch only if random_sampling_topk != 0 or
        # random_sampling_topp != 0, else BeamSearch (here with beam_size 1).
        bs1 = driver(fixdir, "beam", ["-beam_size", "1", "-n_best", "1", "-batch_size", "1"], "beam1")
        same_tok = [h[0]["tokens"] == g[0]["tokens"] for h, g in zip(bs1, greedy)]
        checks["beam_size_1_default_topk0_is_BeamSearch_k1"] = {
            "lines_with_tokens_different_from_GreedySearch_argmax": same_tok.count(False),
            "max_abs_score_diff_where_tokens_equal": max(
                [abs(h[0]["score"] - g[0]["score"]) for h, g, e in zip(bs1, greedy, same_tok) if e] or [0.0]),
            "note": "OpenNMT-py 2.3: -beam_size 1 alone -> BeamSearch(beam_size=1); -random_sampling_topk 1 "
                    "(used for 'greedy' here) -> GreedySearch argmax (sample_with_temperature topk==1)",
        }
    checks["beam_matters_lines_where_greedy_differs_from_beam_best"] = sum(
        1 for g, b in zip(greedy, beam) if g[0]["tokens"] != b[0]["tokens"])
    checks["distinct_beam_best_outputs"] = len({" ".join(t) for t in b1})
    checks["beam_best_hit_max_length"] = sum(1 for t in b1 if len(t) >= 100)
    write_settings(fixdir, a, greedy_args, beam_args, checks)


def effective_opts(args):
    """translate.py's own parser -> the effective values of the decode options."""
    import onmt.opts as opts
    from onmt.utils.parse import ArgumentParser
    parser = ArgumentParser()
    opts.config_opts(parser)
    opts.translate_opts(parser)
    o = parser.parse_args(["-model", "model.pt", "-src", "src.txt"] + args)
    keys = ["beam_size", "n_best", "batch_size", "batch_type", "max_length", "min_length",
            "length_penalty", "alpha", "coverage_penalty", "beta", "stepwise_penalty", "ratio",
            "block_ngram_repeat", "ignore_when_blocking", "replace_unk", "ban_unk_token",
            "random_sampling_topk", "random_sampling_topp", "random_sampling_temp", "seed",
            "tgt_prefix", "data_type", "fp32", "int8", "gpu"]
    return {k: getattr(o, k) for k in keys if hasattr(o, k)}


def write_settings(fixdir, a, greedy_args, beam_args, checks):
    import torch
    import onmt
    settings = {
        "toolkit": "OpenNMT-py",
        "toolkit_version": onmt.__version__,
        "toolkit_commit": "9311a9af8c03eed235117c92e7e9a7ae860a6553 (tag 2.3.0)",
        "torch": torch.__version__,
        "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")},
        "checkpoint": "model.pt",
        "input": "src.txt (first 50 lines of test_2016_flickr.de as spm500 pieces; translate.py input)",
        "driver": "scripts/convert_fixtures/onmt_decode.py = onmt.translate.translator.build_translator(opt)"
                  ".translate(src, batch_size) with opt from translate.py's own option parser",
        "greedy": {"driver_args": greedy_args, "effective": effective_opts(greedy_args)},
        "beam5": {"driver_args": beam_args, "effective": effective_opts(beam_args)},
        "tokens": "output tokens as OpenNMT-py's TranslationBuilder builds them (prediction cut at </s>, "
                  "no <s>/</s>), i.e. the translator's prediction string split on single spaces",
        "score": "Translation.pred_scores[i] = the search's hypothesis score: sum of the log-probs "
                 "(log_softmax of the generator) of every generated token including </s>; "
                 "length_penalty none / alpha 0 -> no normalisation",
        "checks": checks,
    }
    dump_json(settings, fixdir / "settings.json")


if __name__ == "__main__":
    main()
