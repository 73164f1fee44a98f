"""Empty stand-in for spacy (imported at module level by OpenNMT-py 3.5.1's
onmt/transforms/terminology.py, which every `import onmt` loads). Only the
`terminology` transform uses it; the fixtures never do."""


def load(*args, **kwargs):  # pragma: no cover
    raise NotImplementedError("spacy stub")
