"""Expected outputs of OpenNMT-py 2.3's and Joey NMT 2.3's own search code on a toy step model,
for tests/core/test_toolkit_search.cpp (decode.search_rules: opennmt | joeynmt).

The toy model is tests/core/step_models.h's HashModel, written again here: each row's state is a
hash of its source and of the tokens fed so far; a step's logits are a fixed pseudo-random function
of that hash (exact in float32), plus eos_offset + eos_slope * step on the end of sentence, so that
hypotheses end after a few steps (or, with a negative offset, run to the maximum length). Its
log-probabilities feed the toolkits' classes and functions unchanged:
  OpenNMT-py: onmt.translate.beam_search.BeamSearch and greedy_search.GreedySearch
    (random_sampling_topk 1), driven as translator.py's _translate_batch_with_strategy drives them;
  Joey NMT: joeynmt.search.beam_search and recurrent_greedy, with a stand-in for its model
    object (its decoder call returns the toy's logits and state).
Run with Debian's python3 (torch 1.13.1, the LibTorch attnmt links), the peers installed by
/work/shared/peers (PEERS_ROOT, default /work/peers):
  /usr/bin/python3 tests/data/toolkit_search/make.py   # writes tests/data/toolkit_search/expected.json
"""
import json
import os
import sys
import types

import torch

PEERS = os.environ.get("PEERS_ROOT", "/work/peers")
sys.path[:0] = [f"{PEERS}/src/{p}" for p in ("OpenNMT-py", "torchtext-0.5.0", "sacrebleu", "joeynmt", "subword-nmt")]

# Joey NMT imports torch.utils.tensorboard (absent on Debian) only to log: a no-op stand-in, as
# /work/peers/shims/joey/run_joey.py does.
_tb = types.ModuleType("torch.utils.tensorboard")
_tb.SummaryWriter = type("SummaryWriter", (), {"__init__": lambda self, *a, **k: None})
sys.modules["torch.utils.tensorboard"] = _tb

import onmt  # noqa: E402
import joeynmt  # noqa: E402
from onmt.translate.beam_search import BeamSearch, GNMTGlobalScorer  # noqa: E402
from onmt.translate.greedy_search import GreedySearch  # noqa: E402
from joeynmt.search import beam_search as joey_beam_search, recurrent_greedy  # noqa: E402

from toy import BOS, EOS, PAD, UNK, Toy, cut, hypothesis, number  # noqa: E402,F401


def scorer(alpha):
    return GNMTGlobalScorer(alpha, 0.0, "wu" if alpha > 0 else "none", "none")


def opennmt(case, toy, sources):
    """translator.py's _translate_batch_with_strategy with the toy as decoder and generator."""
    B, S, K = len(sources), max(len(s) for s in sources), case["beam_size"]
    if case["search"] == "beam":
        strategy = BeamSearch(K, batch_size=B, pad=PAD, bos=BOS, eos=EOS, unk=UNK, n_best=case["n_best"],
                              global_scorer=scorer(case["alpha"]), min_length=case["min_length"],
                              max_length=case["max_length"], return_attention=case["return_attention"],
                              block_ngram_repeat=0, exclusion_tokens=set(), stepwise_penalty=False, ratio=0.0,
                              ban_unk_token=case["ban_unk"])
    else:
        strategy = GreedySearch(pad=PAD, bos=BOS, eos=EOS, unk=UNK, batch_size=B,
                                global_scorer=scorer(case["alpha"]), min_length=case["min_length"],
                                block_ngram_repeat=0, exclusion_tokens=set(),
                                return_attention=case["return_attention"], max_length=case["max_length"],
                                sampling_temp=1.0, keep_topk=1, keep_topp=0.0, beam_size=1,
                                ban_unk_token=case["ban_unk"])
    h, lens = toy.start(sources)
    fn_map_state, _, _, _ = strategy.initialize(torch.zeros(S, B, 1), lens.clone())
    h, lens = fn_map_state(h, 0), fn_map_state(lens, 0)
    parallel_paths = strategy.parallel_paths
    for step in range(strategy.max_length):
        logits, h, attn = toy.step(strategy.current_predictions.view(-1), h, lens, step, S)
        strategy.advance(torch.log_softmax(logits, -1), attn.unsqueeze(0))
        any_finished = strategy.is_finished.any()
        if any_finished:
            strategy.update_finished()
            if strategy.done:
                break
        select = strategy.select_indices
        if parallel_paths > 1 or any_finished:
            h, lens = h.index_select(0, select), lens.index_select(0, select)
    out = []
    for b in range(B):
        hyps = []
        for score, pred, att in zip(strategy.scores[b], strategy.predictions[b], strategy.attention[b]):
            hyps.append(hypothesis(toy, sources[b], pred.tolist(), score,
                                   att if case["return_attention"] else None))
        out.append(hyps)
    return out


class JoeyDecoder:
    def __init__(self, vocab):
        self.output_size = vocab

    def _init_hidden(self, encoder_hidden):
        return encoder_hidden.view(1, -1, 1)  # [layers, batch, hidden]: the toy's hash


class JoeyModel:
    """What joeynmt.search asks of its model: the special indices and one decoder step."""
    bos_index, eos_index, pad_index, unk_index, sep_index = BOS, EOS, PAD, UNK, None
    lang_tags = []
    specials = [UNK, PAD, BOS, EOS]

    def __init__(self, toy):
        self.toy, self.decoder, self.calls = toy, JoeyDecoder(toy.V), 0

    def __call__(self, return_type, trg_input, encoder_output, encoder_hidden, src_mask, unroll_steps,
                 decoder_hidden, att_vector, trg_mask=None, **kwargs):
        assert return_type == "decode" and unroll_steps == 1
        step, self.calls = self.calls, self.calls + 1
        N, S = src_mask.size(0), src_mask.size(-1)
        h = (encoder_hidden if decoder_hidden is None else decoder_hidden).reshape(-1)
        lens = src_mask.reshape(N, S).sum(-1)
        logits, h, att = self.toy.step(trg_input.reshape(-1), h, lens, step, S)
        return logits.view(N, 1, -1), h.view(N, 1, 1), att.view(N, 1, S), None


def joey(case, toy, sources):
    B, S = len(sources), max(len(s) for s in sources)
    h0, lens = toy.start(sources)
    src_mask = (torch.arange(S).unsqueeze(0) < lens.unsqueeze(1)).unsqueeze(1)  # [B, 1, S]
    encoder_output = torch.zeros(B, S, 1)
    kwargs = dict(min_output_length=case["min_length"], generate_unk=not case["ban_unk"])
    out = [[] for _ in range(B)]
    if case["search"] == "greedy":
        # Joey's default (return_prob none) takes the argmax of the logits; with "hyp" it reports
        # each token's log-probability. Both choose the same tokens here.
        tokens, _, _ = recurrent_greedy(src_mask, case["max_length"], JoeyModel(toy), encoder_output, h0,
                                        return_prob="none", **kwargs)
        tokens_hyp, scores, att = recurrent_greedy(src_mask, case["max_length"], JoeyModel(toy), encoder_output,
                                                   h0, return_prob="hyp", **kwargs)
        assert torch.equal(tokens, tokens_hyp)
        for b in range(B):
            row = tokens[b].tolist()
            kept, finished = cut(row)
            n = len(kept) + (1 if finished else 0)
            score = 0.0
            for v in scores[b, :n].tolist():
                score += v
            out[b].append(hypothesis(toy, sources[b], row, score,
                                     att[b, :n, :lens[b]] if case["return_attention"] else None))
        return out
    n_best = case["n_best"]
    outputs, scores, _ = joey_beam_search(JoeyModel(toy), case["beam_size"], encoder_output, h0, src_mask,
                                          case["max_length"], case["alpha"], n_best=n_best, return_prob="hyp",
                                          **kwargs)
    for i in range(B * n_best):
        row = outputs[i].tolist()
        while row and row[-1] == PAD:  # padding of pad_and_stack_hyps (pad itself is never generated)
            row.pop()
        if row == [UNK] and float(scores[i, 0]) == -1.0:  # the filler of a short n-best list
            out[i // n_best].append({"tokens": [UNK], "finished": False, "score": -1.0, "filler": True})
        else:
            out[i // n_best].append(hypothesis(toy, sources[i // n_best], row, scores[i, 0]))
    return out


SOURCES = [[5, 6, 7], [8, 9], [4, 5, 6, 7, 8, 9], [7], [9, 4, 4, 6]]

# name, toolkit, search, beam, n_best, alpha, min_length, max_length, ban_unk, attention, vocab, eos offset, slope
CASES = [
    ("onmt beam 5", "opennmt", "beam", 5, 5, 0.0, 0, 20, False, False, 10, 0.0, 0.5),
    ("onmt beam 5 n_best 3 alpha 0.6", "opennmt", "beam", 5, 3, 0.6, 0, 20, False, False, 10, 0.0, 0.5),
    ("onmt beam 2 alpha 1 min_length 3", "opennmt", "beam", 2, 2, 1.0, 3, 20, False, True, 10, 0.0, 0.5),
    ("onmt beam 1", "opennmt", "beam", 1, 1, 0.0, 0, 20, False, True, 10, 0.0, 0.5),
    ("onmt beam 1 alpha 0.6 ban_unk", "opennmt", "beam", 1, 1, 0.6, 0, 20, True, False, 10, 0.0, 0.5),
    ("onmt beam 5 max_length reached", "opennmt", "beam", 5, 4, 0.0, 0, 4, False, True, 10, -3.0, 0.25),
    ("onmt beam 3 max_length, min_length, alpha", "opennmt", "beam", 3, 2, 0.8, 2, 5, True, False, 12, -1.0, 0.5),
    ("onmt beam 4 slow end", "opennmt", "beam", 4, 1, 0.6, 1, 12, False, False, 10, -2.0, 0.5),
    ("onmt beam 5 tiny vocabulary", "opennmt", "beam", 5, 5, 0.0, 1, 8, True, False, 7, 0.0, 0.5),
    ("onmt greedy", "opennmt", "greedy", 1, 1, 0.0, 0, 20, False, True, 10, 0.0, 0.5),
    ("onmt greedy alpha 0.6 min_length 2 max_length", "opennmt", "greedy", 1, 1, 0.6, 2, 4, True, False, 10, -1.0,
     0.5),
    ("joey beam 5", "joeynmt", "beam", 5, 5, 0.0, 1, 20, False, False, 10, 0.0, 0.5),
    ("joey beam 5 n_best 3 alpha 0.6", "joeynmt", "beam", 5, 3, 0.6, 1, 20, False, True, 10, 0.0, 0.5),
    ("joey beam 2 alpha 1 min_length 3", "joeynmt", "beam", 2, 2, 1.0, 3, 20, False, False, 10, 0.0, 0.5),
    ("joey beam 5 max_length reached", "joeynmt", "beam", 5, 4, 0.0, 0, 4, False, False, 10, -3.0, 0.25),
    ("joey beam 3 max_length, alpha, ban_unk", "joeynmt", "beam", 3, 3, 0.8, 2, 5, True, False, 12, -1.0, 0.5),
    ("joey beam 4 slow end", "joeynmt", "beam", 4, 2, 0.6, 1, 12, False, False, 10, -2.0, 0.5),
    ("joey beam 5 tiny vocabulary", "joeynmt", "beam", 5, 5, 0.0, 1, 8, True, False, 7, 0.0, 0.5),
    ("joey greedy", "joeynmt", "greedy", 1, 1, 0.0, 1, 20, False, True, 10, 0.0, 0.5),
    ("joey greedy min_length 0 max_length", "joeynmt", "greedy", 1, 1, 0.0, 0, 4, True, False, 10, -1.0, 0.5),
]


def main():
    cases = []
    for (name, toolkit, search, beam, n_best, alpha, min_length, max_length, ban_unk, attention, vocab, offset,
         slope) in CASES:
        case = dict(name=name, toolkit=toolkit, search=search, beam_size=beam, n_best=n_best, alpha=alpha,
                    min_length=min_length, max_length=max_length, ban_unk=ban_unk, return_attention=attention,
                    vocab=vocab, eos_offset=offset, eos_slope=slope, sources=SOURCES)
        toy = Toy(vocab, offset, slope)
        case["expected"] = (opennmt if toolkit == "opennmt" else joey)(case, toy, SOURCES)
        cases.append(case)
        print(f"{name}: {sum(len(h) for h in case['expected'])} hypotheses, "
              f"{sum(not x['finished'] for h in case['expected'] for x in h)} cut", file=sys.stderr)
    out = {"made_by": "tests/data/toolkit_search/make.py",
           "opennmt_py": onmt.__version__, "joeynmt": joeynmt.__version__, "torch": torch.__version__,
           "cases": cases}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, allow_nan=False)
        f.write("\n")


if __name__ == "__main__":
    main()
