"""Expected outputs of OpenNMT-py 3.x's own beam search (v3.5.1, onmt/translate/beam_search.py
BeamSearch with its GNMTGlobalScorer) on make.py's toy step model (toy.py), for
tests/core/test_toolkit_search.cpp (decode.search_rules: opennmt3).

The toy's log-probabilities feed 3.5.1's classes unchanged, driven as its translator.py's
translate_batch and _translate_batch_with_strategy drive them: max_length = int(min(max_length,
source length x max_length_ratio + 5)) (translate_batch; 3.5.1 takes the batch's longest source,
so each sentence is searched alone, a batch of one, which is what attnmt's per-sentence limit
computes), then advance / update_finished. The length penalty is 3.5.1's default kind, avg
(length^alpha), or none at alpha 0.

Run with Debian's python3 (torch 1.13.1), the OpenNMT-py 3.5.1 tree that
scripts/convert_fixtures/make_fixtures.sh extracts ($PEERS_ROOT/src/OpenNMT-py-3.5.1) and the
stand-ins of scripts/convert_fixtures/onmt3_shims:
  PEERS_ROOT=/work/peers /usr/bin/python3 tests/data/toolkit_search/make_onmt3.py
      # writes tests/data/toolkit_search/expected_onmt3.json
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.environ.get("PEERS_ROOT", "/work/peers")
sys.path[:0] = [os.path.join(HERE, "..", "..", "..", "scripts", "convert_fixtures", "onmt3_shims"),
                f"{PEERS}/src/OpenNMT-py-3.5.1"]
if not hasattr(F, "scaled_dot_product_attention"):  # Transformer-only, absent from torch 1.13
    F.scaled_dot_product_attention = None

import onmt  # noqa: E402
from onmt.translate.beam_search import BeamSearch, GNMTGlobalScorer  # noqa: E402

from toy import BOS, EOS, PAD, UNK, Toy, hypothesis  # noqa: E402


def search(case, toy, src):
    """One sentence: 3.5.1's translate_batch + _translate_batch_with_strategy."""
    S, K = len(src), case["beam_size"]
    max_length = int(min(case["max_length"], S * case["max_length_ratio"] + 5))
    scorer = GNMTGlobalScorer(case["alpha"], 0.0, "avg" if case["alpha"] > 0 else "none", "none")
    strategy = BeamSearch(K, batch_size=1, pad=PAD, bos=BOS, eos=EOS, unk=UNK, start=BOS, n_best=case["n_best"],
                          global_scorer=scorer, min_length=case["min_length"], max_length=max_length,
                          return_attention=case["return_attention"], block_ngram_repeat=0,
                          exclusion_tokens=set(), stepwise_penalty=False, ratio=0.0,
                          ban_unk_token=case["ban_unk"])
    h, lens = toy.start([src])
    fn_map_state, _, _ = strategy.initialize(torch.zeros(1, S, 1), lens.clone())
    h, lens = fn_map_state(h, 0), fn_map_state(lens, 0)
    for step in range(strategy.max_length):
        logits, h, attn = toy.step(strategy.current_predictions.view(-1), h, lens, step, S)
        strategy.advance(torch.log_softmax(logits, -1), attn.unsqueeze(1))  # attn [N, 1, S] in 3.x
        any_finished = any(any(row) for row in strategy.is_finished_list)
        if any_finished:
            strategy.update_finished()
            if strategy.done:
                break
        select = strategy.select_indices
        if K > 1 or any_finished:
            h, lens = h.index_select(0, select), lens.index_select(0, select)
    hyps = []
    for score, pred, att in zip(strategy.scores[0], strategy.predictions[0], strategy.attention[0]):
        hyps.append(hypothesis(toy, src, pred.tolist(), score, att if case["return_attention"] else None))
    return hyps


SOURCES = [[5, 6, 7], [8, 9], [4, 5, 6, 7, 8, 9], [7], [9, 4, 4, 6]]

# name, beam, n_best, alpha (avg), min_length, max_length, max_length_ratio, ban_unk, attention, vocab,
# eos offset, slope
CASES = [
    ("onmt3 defaults: beam 5, n_best 1, avg alpha 1, max_length 250, ratio 1.25", 5, 1, 1.0, 0, 250, 1.25, False,
     False, 10, 0.0, 0.5),
    ("onmt3 beam 5 n_best 5 avg alpha 1", 5, 5, 1.0, 0, 250, 1.25, False, True, 10, 0.0, 0.5),
    ("onmt3 beam 5 n_best 3 no penalty", 5, 3, 0.0, 0, 100, 1.25, False, False, 10, 0.0, 0.5),
    ("onmt3 beam 5 n_best 4 ratio reached", 5, 4, 1.0, 0, 250, 1.25, False, True, 10, -3.0, 0.25),
    ("onmt3 beam 3 max_length reached, min_length, ban_unk", 3, 2, 0.6, 2, 5, 10.0, True, False, 12, -1.0, 0.5),
    ("onmt3 beam 2 alpha 1 min_length 3", 2, 2, 1.0, 3, 20, 5.0, False, True, 10, 0.0, 0.5),
    ("onmt3 beam 1 avg alpha 1", 1, 1, 1.0, 0, 20, 2.0, False, True, 10, 0.0, 0.5),
    ("onmt3 beam 4 n_best 1 slow end", 4, 1, 1.0, 1, 30, 3.0, False, False, 10, -2.0, 0.5),
    ("onmt3 beam 5 tiny vocabulary", 5, 5, 1.0, 1, 8, 2.0, True, False, 7, 0.0, 0.5),
]


def main():
    cases = []
    for (name, beam, n_best, alpha, min_length, max_length, ratio, ban_unk, attention, vocab, offset,
         slope) in CASES:
        case = dict(name=name, toolkit="opennmt3", search="beam", beam_size=beam, n_best=n_best, alpha=alpha,
                    min_length=min_length, max_length=max_length, max_length_ratio=ratio, ban_unk=ban_unk,
                    return_attention=attention, vocab=vocab, eos_offset=offset, eos_slope=slope, sources=SOURCES)
        toy = Toy(vocab, offset, slope)
        case["expected"] = [search(case, toy, src) for src in SOURCES]
        cases.append(case)
        print(f"{name}: {sum(len(h) for h in case['expected'])} hypotheses, "
              f"{sum(not x['finished'] for h in case['expected'] for x in h)} cut", file=sys.stderr)
    out = {"made_by": "tests/data/toolkit_search/make_onmt3.py", "opennmt_py": onmt.__version__,
           "torch": torch.__version__, "cases": cases}
    with open(os.path.join(HERE, "expected_onmt3.json"), "w") as f:
        json.dump(out, f, indent=1, allow_nan=False)
        f.write("\n")


if __name__ == "__main__":
    main()
