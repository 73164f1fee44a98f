#!/usr/bin/env python3
"""Decode with Joey NMT 2.3's OWN prediction code (joeynmt.prediction.prepare +
joeynmt.prediction.predict -> joeynmt.search.search) and print one JSON object
per source line.

Run with PYTHONPATH=$JOEY_PYTHONPATH from the directory the config's relative
paths refer to (the fixture directory).

    joey_decode.py CONFIG.yaml SRC_FILE --beam-size K --n-best N [--batch-size B]

The model, vocabularies and tokenizer are loaded exactly as `python -m joeynmt
translate CONFIG` loads them (prepare(mode="translate"): StreamDataset, the
config's tokenizer, testing.load_model). Every line of SRC_FILE is fed with
StreamDataset.set_item() as the translate CLI does for stdin input, then
predict() runs once over all lines with the `testing` section of the config,
overridden only by beam_size / n_best / batch_size given here and
return_prob="hyp" (so that Joey returns its scores).

Output (stdout), one line per source sentence, in input order:
  {"src_tokens": [...], "hyps": [{"tokens": [...], "score": float,
                                   "token_scores": [...] (greedy only)}, ...]}
tokens: Joey's decoded token list (model.trg_vocab.arrays_to_sentences, cut
after </s>) with the trailing </s> removed; score: beam search -> Joey's
sequence score (sum of log-probs incl. </s>, no length penalty when
beam_alpha <= 0); greedy -> Joey returns token-level log-probs, score is their
sum over the emitted tokens incl. </s> (token_scores lists them).
"""
import argparse
import json
import sys
import types
from pathlib import Path

import numpy as np

# Debian has no tensorboard; Joey imports SummaryWriter unconditionally (see
# /work/shared/peers/shims/joey/run_joey.py). No-op stand-in, nothing else changed.
import torch.utils  # noqa: F401


class _SummaryWriter:  # pragma: no cover
    def __init__(self, *a, **k):
        pass

    def __getattr__(self, name):
        return lambda *a, **k: None


_tb = types.ModuleType("torch.utils.tensorboard")
_tb.SummaryWriter = _SummaryWriter
sys.modules.setdefault("torch.utils.tensorboard", _tb)

from joeynmt.config import load_config, parse_global_args  # noqa: E402
from joeynmt.prediction import predict, prepare  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("src")
    ap.add_argument("--beam-size", type=int, required=True)
    ap.add_argument("--n-best", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=None)
    a = ap.parse_args()

    cfg = load_config(Path(a.config))
    args = parse_global_args(cfg, rank=0, mode="translate")
    model, _, _, test_data = prepare(args, rank=0, mode="translate")

    lines = Path(a.src).read_text(encoding="utf-8").splitlines()
    for line in lines:
        assert line.strip(), "empty source line"
        test_data.set_item(line.rstrip())
    test_args = args.test._replace(
        beam_size=a.beam_size,
        n_best=a.n_best,
        return_prob="hyp",
        **({"batch_size": a.batch_size} if a.batch_size else {}),
    )
    sys.stderr.write("joey_decode test args: %r\n" % (test_args,))
    _, _, hyps, tokens, scores, _ = predict(
        model=model,
        data=test_data,
        compute_loss=False,
        device=args.device,
        rank=0,
        n_gpu=args.n_gpu,
        normalization="none",
        num_workers=args.num_workers,
        args=test_args,
        autocast=args.autocast,
    )
    n = a.n_best
    assert len(tokens) == len(lines) * n, (len(tokens), len(lines), n)
    eos = model.trg_vocab._itos[model.eos_index]  # pylint: disable=protected-access
    for i, line in enumerate(lines):
        src_toks = test_data.get_item(idx=i, lang=test_data.src_lang, is_train=False)
        out = []
        for k in range(n):
            toks = list(tokens[i * n + k])
            ended = bool(toks) and toks[-1] == eos
            body = toks[:-1] if ended else toks
            sc = np.asarray(scores[i * n + k], dtype=np.float64).reshape(-1)
            h = {"tokens": body, "detok": hyps[i * n + k]}
            if a.beam_size > 1:
                assert sc.shape == (1,), sc.shape
                h["score"] = float(np.float32(sc[0]))
            else:
                m = len(body) + (1 if ended else 0)
                tok_sc = [float(np.float32(x)) for x in sc[:m]]
                h["token_scores"] = tok_sc
                # Joey's greedy gives float32 token log-probs; their sum in float64
                h["score"] = float(sum(tok_sc))
            h["ended_with_eos"] = ended
            out.append(h)
        sys.stdout.write(json.dumps({"src_tokens": list(src_toks), "hyps": out},
                                    ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
