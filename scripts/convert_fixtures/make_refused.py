#!/usr/bin/env python3
"""Checkpoints attnmt convert must refuse, made from the OpenNMT-py fixture onmt_brnn_lstm_general
by changing its options the way OpenNMT-py writes them (its weights dropped: the refusal comes
before they are read). Run with Debian's python3 (torch 1.13) and ONMT_PYTHONPATH (the pickled
vocabulary names torchtext and onmt classes):
    PYTHONPATH=$ONMT_PYTHONPATH /usr/bin/python3 scripts/convert_fixtures/make_refused.py
Writes tests/data/convert/refused/{transformer,copy_attn,sparsemax,context_gate,sru}.pt."""
import copy
from pathlib import Path

import torch

root = Path(__file__).resolve().parents[2] / "tests" / "data" / "convert"
base = torch.load(root / "onmt_brnn_lstm_general" / "model.pt", map_location="cpu")
changes = {
    "transformer": {"encoder_type": "transformer", "decoder_type": "transformer"},
    "copy_attn": {"copy_attn": True},
    "sparsemax": {"global_attention_function": "sparsemax"},
    "context_gate": {"context_gate": "both"},
    "sru": {"rnn_type": "SRU"},
}
(root / "refused").mkdir(exist_ok=True)
for name, opts in changes.items():
    ckpt = {"model": {}, "generator": {}, "vocab": base["vocab"], "opt": copy.deepcopy(base["opt"])}
    for key, value in opts.items():
        setattr(ckpt["opt"], key, value)
    torch.save(ckpt, root / "refused" / f"{name}.pt")
    print(name, (root / "refused" / f"{name}.pt").stat().st_size)
