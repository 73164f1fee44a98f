#!/usr/bin/env python3
"""refused/fairseq_*.pt: a fairseq checkpoint (the fixture's) with one option attnmt does not
compute, saved by torch.save as fairseq saves its checkpoints; the weights are left out (attnmt
refuses these from the options, before it reads a weight), so each file is small.

    fairseq_refused.py CHECKPOINT OUT_DIR     (PYTHONPATH: fairseq's source, as fairseq_fixtures.sh)
"""
import copy
import os
import sys

import torch


def main():
    src, out = sys.argv[1], sys.argv[2]
    state = torch.load(src, map_location="cpu")
    variants = {
        "fairseq_transformer.pt": lambda s: (setattr(s["cfg"]["model"], "arch", "transformer"),
                                             setattr(s["cfg"]["model"], "_name", "transformer")),
        "fairseq_adaptive_softmax.pt": lambda s: s["cfg"]["criterion"].update({"_name": "adaptive_loss"}),
        "fairseq_no_attention.pt": lambda s: setattr(s["cfg"]["model"], "decoder_attention", "0"),
    }
    for name, change in variants.items():
        s = copy.deepcopy(state)
        s["model"] = {}
        s["extra_state"] = {}
        change(s)
        torch.save(s, os.path.join(out, name))
        print(os.path.join(out, name), os.path.getsize(os.path.join(out, name)), "bytes")


if __name__ == "__main__":
    main()
