#!/usr/bin/env python3
"""Run OpenNMT-py 3.5.1's own translate.py (onmt.bin.translate.main) on torch 1.13.

Only difference from `python onmt/bin/translate.py ...`: torch 1.13 has no
torch.nn.functional.scaled_dot_product_attention, which 3.5.1 imports at module
level for its Transformer attention; a stand-in that raises is installed first
(never called by RNN models). PYTHONPATH must hold onmt3_shims (pyonmttok,
safetensors, and empty spacy/ahocorasick/rapidfuzz/fasttext stand-ins) and the
3.5.1 tree. Used to check that fixtures onmt3_* translate like fixture 1.
"""
import sys

import torch.nn.functional as F

if not hasattr(F, "scaled_dot_product_attention"):
    def _sdpa_unavailable(*args, **kwargs):
        raise NotImplementedError("scaled_dot_product_attention needs torch >= 2.0")
    F.scaled_dot_product_attention = _sdpa_unavailable

from onmt.bin.translate import main  # noqa: E402

if __name__ == "__main__":
    sys.argv[0] = "translate.py"
    main()
