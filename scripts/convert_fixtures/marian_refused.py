#!/usr/bin/python3
"""refused/marian_*.npz: a Marian model's options (the fixture's special:model.yml) with one option
attnmt does not compute, as numpy's savez writes a Marian .npz (Marian's own cnpy writes the same
stored entries); the weights are left out (attnmt refuses these from the options, before it reads a
weight), so each file is small. Debian's python3-numpy:

    /usr/bin/python3 marian_refused.py tests/data/convert/marian_s2s/model.npz tests/data/convert/refused
"""
import os
import re
import sys

import numpy as np


def main():
    src, out = sys.argv[1], sys.argv[2]
    yml = bytes(np.load(src)["special:model.yml"].tobytes()).rstrip(b"\0").decode()

    def option(text, key, value):
        changed, n = re.subn(r"(?m)^%s: .*$" % re.escape(key), "%s: %s" % (key, value), text)
        assert n == 1, key
        return changed

    variants = {
        "marian_transformer.npz": option(yml, "type", "transformer"),
        "marian_layer_norm.npz": option(yml, "layer-normalization", "true"),
        "marian_lstm.npz": option(yml, "dec-cell", "lstm"),
    }
    for name, text in variants.items():
        path = os.path.join(out, name)
        np.savez(path, **{"special:model.yml": np.frombuffer(text.encode() + b"\0", dtype=np.int8)})
        print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
