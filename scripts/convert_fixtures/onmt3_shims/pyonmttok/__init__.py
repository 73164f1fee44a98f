"""Minimal pure-Python stand-in for pyonmttok's Vocab API (pyonmttok is a compiled
wheel, not in Debian). Only what OpenNMT-py 3.5.1's vocabulary code uses:
Vocab, build_vocab_from_tokens. Semantics follow OpenNMT/Tokenizer
src/Vocab.cc + bindings/python/pyonmttok/__init__.py:

* Vocab(special_tokens): the specials first, with frequency "infinite";
* add_token: new token -> next id with frequency 1, known token -> frequency + 1
  (specials stay infinite);
* resize(maximum_size, minimum_frequency): no-op when (0, 1), else a STABLE sort
  by decreasing frequency, then cut;
* build_vocab_from_tokens(tokens, maximum_size=0, minimum_frequency=1,
  special_tokens=None) = Vocab(special_tokens) + add_token(each) + resize.
* lookup of an unknown token returns default_id (set by OpenNMT-py to <unk>).

Used only to run OpenNMT-py 3.x's own vocab/saver/loader code in
scripts/convert_fixtures/onmt_to_v3.py; no tokenization is provided.
"""

_INF = float("inf")

__version__ = "0.0-attnmt-stub"


class Vocab:
    def __init__(self, special_tokens=None):
        self._ids_to_tokens = []
        self._tokens_to_ids = {}
        self._freq = []
        self._default_id = None
        for t in special_tokens or []:
            self.add_token(t)
        self._freq = [_INF for _ in self._freq]

    def add_token(self, token):
        i = self._tokens_to_ids.get(token)
        if i is None:
            self._tokens_to_ids[token] = len(self._ids_to_tokens)
            self._ids_to_tokens.append(token)
            self._freq.append(1)
        elif self._freq[i] != _INF:
            self._freq[i] += 1

    def resize(self, maximum_size=0, minimum_frequency=1):
        if maximum_size == 0 and minimum_frequency == 1:
            return
        ids = sorted(range(len(self._ids_to_tokens)), key=lambda i: -self._freq[i])  # stable
        while ids and self._freq[ids[-1]] < minimum_frequency:
            ids.pop()
        if maximum_size > 0 and len(ids) > maximum_size:
            ids = ids[:maximum_size]
        self._ids_to_tokens = [self._ids_to_tokens[i] for i in ids]
        self._freq = [self._freq[i] for i in ids]
        self._tokens_to_ids = {t: i for i, t in enumerate(self._ids_to_tokens)}

    @property
    def ids_to_tokens(self):
        return list(self._ids_to_tokens)

    @property
    def tokens_to_ids(self):
        return dict(self._tokens_to_ids)

    @property
    def counters(self):
        return list(self._freq)

    @property
    def default_id(self):
        return self._default_id if self._default_id is not None else len(self._ids_to_tokens)

    @default_id.setter
    def default_id(self, value):
        self._default_id = value

    def lookup_token(self, token):
        return self._tokens_to_ids.get(token, self.default_id)

    def lookup_index(self, index):
        return self._ids_to_tokens[index]

    def __getitem__(self, token):
        return self.lookup_token(token)

    def __call__(self, tokens):
        return [self.lookup_token(t) for t in tokens]

    def __contains__(self, token):
        return token in self._tokens_to_ids

    def __len__(self):
        return len(self._ids_to_tokens)


def build_vocab_from_tokens(tokens, maximum_size=0, minimum_frequency=1, special_tokens=None):
    vocab = Vocab(special_tokens)
    for token in tokens:
        vocab.add_token(token)
    vocab.resize(maximum_size=maximum_size, minimum_frequency=minimum_frequency)
    return vocab


def build_vocab_from_lines(*args, **kwargs):  # pragma: no cover
    raise NotImplementedError("pyonmttok stub: build_vocab_from_lines")


class Tokenizer:  # pragma: no cover
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("pyonmttok stub: no tokenizer")


class SentencePieceTokenizer(Tokenizer):  # pragma: no cover
    pass
