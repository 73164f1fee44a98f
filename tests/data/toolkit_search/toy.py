"""The toy step model of tests/data/toolkit_search (tests/core/step_models.h's HashModel, written
again in Python) and the form of a recorded hypothesis, shared by make.py (OpenNMT-py 2.3, Joey
NMT 2.3) and make_onmt3.py (OpenNMT-py 3.5.1), which cannot import their toolkits into one process
(both are `onmt`).
"""
import math

import torch

PAD, UNK, BOS, EOS = 0, 1, 2, 3
M64, M62 = (1 << 64) - 1, (1 << 62) - 1


def mix(h, x):
    """The toy's hash step (HashModel::mix in step_models.h)."""
    z = (h * 6364136223846793005 + x * 1442695040888963407 + 1) & M64
    z ^= z >> 29
    z = (z * 0xBF58476D1CE4E5B9) & M64
    z ^= z >> 32
    return z & M62


class Toy:
    def __init__(self, vocab, eos_offset, eos_slope):
        self.V, self.eos_offset, self.eos_slope = vocab, eos_offset, eos_slope

    def start(self, sources):
        h = []
        for src in sources:
            x = len(src)
            for tok in src:
                x = mix(x, tok)
            h.append(x)
        return torch.tensor(h, dtype=torch.long), torch.tensor([len(s) for s in sources], dtype=torch.long)

    def step(self, prev, h, lens, t, S):
        """prev, h, lens [N]; returns logits [N, V] float32, the new h, attention [N, S]."""
        new_h, logits, att = [], [], []
        for p, x, n in zip(prev.tolist(), h.tolist(), lens.tolist()):
            x = mix(x, p)
            new_h.append(x)
            row = [(mix(x, 1000 + v) >> 38) * 2.0 ** -22 - 2.0 for v in range(self.V)]
            row[EOS] = row[EOS] + (self.eos_offset + self.eos_slope * t)
            logits.append(row)
            w = [float((mix(x, 5000 + s) >> 42) + 1) for s in range(n)]
            total = 0.0
            for v in w:
                total += v
            att.append([v / total for v in w] + [0.0] * (S - n))
        return (torch.tensor(logits, dtype=torch.float32), torch.tensor(new_h, dtype=torch.long),
                torch.tensor(att, dtype=torch.float32))

    def log_prob(self, src, tokens):
        """log P of tokens (eos included when there) by feeding them one at a time: float32
        log-probabilities summed as Python floats."""
        h, lens = self.start([src])
        prev, total = BOS, 0.0
        for t, tok in enumerate(tokens):
            logits, h, _ = self.step(torch.tensor([prev]), h, lens, t, len(src))
            total += float(torch.log_softmax(logits, -1)[0, tok])
            prev = tok
        return total


def cut(tokens):
    """A toolkit's output row as attnmt's Hypothesis: tokens before the first eos, and whether it had one."""
    if EOS in tokens:
        return tokens[:tokens.index(EOS)], True
    return tokens, False


def number(x):
    """A float for JSON, which has no infinities: those as the strings "-inf" and "inf"."""
    x = float(x)
    return x if math.isfinite(x) else str(x)


def hypothesis(toy, src, tokens, score, attention=None):
    tokens = [int(t) for t in tokens]
    kept, finished = cut(tokens)
    h = {"tokens": kept, "finished": finished, "score": number(score),
         "log_prob": toy.log_prob(src, kept + ([EOS] if finished else []))}
    if attention is not None:
        rows = len(kept) + (1 if finished else 0)
        h["attention"] = [[float(v) for v in row] for row in attention[:rows].tolist()]
    return h
