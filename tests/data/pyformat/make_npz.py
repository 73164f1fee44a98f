#!/usr/bin/python3
"""numpy's .npz files for src/pyformat/npz.h's test (tests/base/test_pyformat.cpp), and numpy's own
reading of them as JSON: each array's dtype, shape and elements in C order. Debian's python3-numpy
(1.24.2 when these were written): /usr/bin/python3 tests/data/pyformat/make_npz.py"""
import json
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
text = "type: s2s\ndim-emb: 16\n"
arrays = {
    "decoder_W": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
    "fortran": np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5),
    "half": np.array([0.5, -2.25, 1e-3], dtype=np.float16),
    "ids": np.array([[1, -2], [3, 40000]], dtype=np.int32),
    "scalar": np.array(3.5, dtype=np.float32),
    "empty": np.zeros((0, 4), dtype=np.float32),
    # Marian keeps its options as a byte array with a trailing NUL
    "special:model.yml": np.frombuffer(text.encode() + b"\0", dtype=np.int8),
}
np.savez(os.path.join(here, "arrays.npz"), **arrays)
np.savez_compressed(os.path.join(here, "arrays_compressed.npz"), **arrays)
# An array saved big-endian: refused by name.
np.savez(os.path.join(here, "big_endian.npz"), w=np.arange(3, dtype=">f4"))
out = {}
for name, a in np.load(os.path.join(here, "arrays.npz")).items():
    out[name] = {"dtype": a.dtype.name, "shape": list(a.shape),
                 "values": [float(v) for v in np.ascontiguousarray(a).reshape(-1)]}
out["special:model.yml"]["text"] = text
with open(os.path.join(here, "arrays_npz.json"), "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
