#!/usr/bin/env python3
"""Decode with OpenNMT-py 2.3's OWN translator (onmt.translate.Translator) and
print one JSON object per source line.

Run with PYTHONPATH=$ONMT_PYTHONPATH (see /work/shared/peers/scripts/env.sh).

    onmt_decode.py -model M.pt -src src.txt -mode greedy|beam [-beam_size 5]
                   [-n_best 5] [-batch_size 1] [extra translate.py options...]

Everything after the known options is passed verbatim to OpenNMT-py's own
translate option parser (onmt.opts.translate_opts), exactly as translate.py
would receive it, so the defaults are translate.py's defaults.

Output (stdout), one line per source sentence, in input order:
  {"hyps": [{"tokens": [...], "score": float}, ...n_best...]}
tokens: the output tokens without <s>/</s> as OpenNMT-py's TranslationBuilder
builds them (split of the prediction string on single spaces);
score: the translator's hypothesis score (trans.pred_scores[i].item()).
"""
import io
import json
import sys

from onmt.translate.translator import build_translator
import onmt.opts as opts
from onmt.utils.parse import ArgumentParser
from onmt.utils.misc import split_corpus


def main(argv):
    mode = None
    rest = []
    i = 0
    while i < len(argv):
        if argv[i] == "-mode":
            mode = argv[i + 1]
            i += 2
            continue
        rest.append(argv[i])
        i += 1
    assert mode in ("greedy", "beam"), "-mode greedy|beam"

    parser = ArgumentParser(description="onmt_decode.py")
    opts.config_opts(parser)
    opts.translate_opts(parser)
    opt = parser.parse_args(rest + ["-output", "/dev/null"])
    ArgumentParser.validate_translate_opts(opt)

    out = io.StringIO()
    translator = build_translator(opt, report_score=False, out_file=out)
    src_shard = next(iter(split_corpus(opt.src, 0)))  # bytes lines, as translate.py
    all_scores, all_preds = translator.translate(
        src=src_shard,
        tgt=None,
        batch_size=opt.batch_size,
        batch_type=opt.batch_type,
    )
    assert len(all_preds) == len(src_shard)
    for scores, preds in zip(all_scores, all_preds):
        hyps = []
        for s, p in zip(scores, preds):
            toks = p.split(" ") if p != "" else []
            hyps.append({"tokens": toks, "score": float(s.item())})
        sys.stdout.write(json.dumps({"hyps": hyps}, ensure_ascii=False) + "\n")
    # the translator's own file output (n_best lines per sentence), for cross-checks
    sys.stderr.write("translator_file_output_lines=%d\n" % len(out.getvalue().splitlines()))


if __name__ == "__main__":
    main(sys.argv[1:])
