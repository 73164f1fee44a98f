"""attnmt: RNN encoder-decoder machine translation with pluggable attention.

    import attnmt
    tr = attnmt.Translator("model.pt", threads=2, precision="bf16")
    for hyp in tr.translate(["Ein Hund läuft."], beam_size=5, n_best=2)[0]:
        print(hyp.score, hyp.text)
    attnmt.score(hypotheses, references)["bleu"]

Translator decodes as `attnmt translate` does (the same search, batching and settings) and
releases the GIL while it works; score() gives sacreBLEU's BLEU and chrF2.
"""
from ._attnmt import Hypothesis, Translator, __version__, score

__all__ = ["Hypothesis", "Translator", "score", "__version__"]
