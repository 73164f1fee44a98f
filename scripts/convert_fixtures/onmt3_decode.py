#!/usr/bin/env python3
"""Decode with OpenNMT-py 3.5.1's OWN inference code (onmt.bin.translate.translate's
steps: the option checks, then InferenceEnginePY(opt).infer_file()) and print one
JSON object per source line: {"hyps": [{"tokens": [...], "score": float}, ...]}.

    onmt3_decode.py [translate.py options...]      (-output is ignored: /dev/null)

Like onmt3_translate.py it only installs a torch 1.13 stand-in for
F.scaled_dot_product_attention first (Transformer-only, never called here).
PYTHONPATH: onmt3_shims : OpenNMT-py-3.5.1 tree. Scores: 3.5.1's Translation.pred_scores
(python floats; -with_score would crash on them in 3.5.1's file writer).
"""
import json
import sys

import torch.nn.functional as F

if not hasattr(F, "scaled_dot_product_attention"):
    def _sdpa_unavailable(*args, **kwargs):
        raise NotImplementedError("scaled_dot_product_attention needs torch >= 2.0")
    F.scaled_dot_product_attention = _sdpa_unavailable

from onmt.inference_engine import InferenceEnginePY  # noqa: E402
from onmt.opts import translate_opts  # noqa: E402
from onmt.utils.misc import set_random_seed, use_gpu  # noqa: E402
from onmt.utils.parse import ArgumentParser  # noqa: E402


def main():
    parser = ArgumentParser(description="translate.py")
    translate_opts(parser)
    opt = parser.parse_args(sys.argv[1:] + ["-output", "/dev/null"])
    # onmt/bin/translate.py translate()
    ArgumentParser.validate_translate_opts(opt)
    ArgumentParser._get_all_transform_translate(opt)
    ArgumentParser._validate_transforms_opts(opt)
    ArgumentParser.validate_translate_opts_dynamic(opt)
    set_random_seed(opt.seed, use_gpu(opt))
    engine = InferenceEnginePY(opt)
    scores, preds = engine.infer_file()
    engine.terminate()
    for sc, pr in zip(scores, preds):
        hyps = [{"tokens": p.split(" ") if p else [], "score": float(s)} for s, p in zip(sc, pr)]
        sys.stdout.write(json.dumps({"hyps": hyps}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
