#!/usr/bin/python3
"""Writes the files that tests/base/test_pyformat.cpp reads, and what Python reads back from them.

    /usr/bin/python3 tests/data/pyformat/make.py      (Debian's python3-torch, torch 1.13)

Every checkpoint is loaded back with torch.load (every raw pickle with pickle.load), and that
reading is written as JSON next to it, so that the C++ reader is compared against Python's, not
against itself. The JSON encodes a value as the C++ tree shows it:
  None, bool, int, float, str     as themselves (a float always with a '.', an 'e' or both)
  bytes / bytearray               {"bytes": hex}
  list, tuple                     {"list": [...]}, {"tuple": [...]}
  dict, OrderedDict               {"dict": [[key, value], ...], "attrs": {...} (OrderedDict's __dict__)}
  a class or function             {"global": "module.qualname"}
  defaultdict                     {"object": "collections.defaultdict", "args": [factory], "items": [[k, v], ...]}
  Counter                         {"object": "collections.Counter", "args": [{"dict": ...}]}
  set / frozenset                 {"object": "builtins.set", "set": [...]}  (in any order)
  functools.partial               {"object": "functools.partial", "args": [func], "state": {"tuple": [...]}}
  any other instance              {"object": "module.qualname", "attrs": {name: value}}
  a tensor                        {"tensor": dtype, "shape", "stride", "offset", "requires_grad",
                                   "parameter", "storage": the same number for tensors on one storage,
                                   "bits": float32 bit patterns (float dtypes) | "ints": the values}
"""
import argparse
import collections
import functools
import io
import json
import os
import pickle
import struct
import sys
import types
import warnings
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


# --- A fake torchtext.vocab, as OpenNMT-py <= 2 pickled its vocabularies (Vocab with itos / stoi).
def _default_unk_index():
    return 0


class Vocab:
    def __init__(self, tokens):
        self.freqs = collections.Counter(tokens)
        self.itos = ["<unk>", "<blank>"] + sorted(set(tokens))
        self.stoi = collections.defaultdict(_default_unk_index)
        self.stoi.update({t: i for i, t in enumerate(self.itos)})
        self.vectors = None


fake = types.ModuleType("torchtext.vocab")
fake.Vocab = Vocab
fake._default_unk_index = _default_unk_index
Vocab.__module__ = _default_unk_index.__module__ = "torchtext.vocab"
sys.modules["torchtext"] = types.ModuleType("torchtext")
sys.modules["torchtext.vocab"] = fake


# --- Python's reading, as JSON.
def f32_bits(values):
    return [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]


class Encoder:
    def __init__(self):
        self.storages = {}

    def tensor(self, t):
        key = t.storage().data_ptr()
        out = {
            "tensor": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "stride": list(t.stride()),
            "offset": t.storage_offset(),
            "requires_grad": t.requires_grad,
            "parameter": isinstance(t, torch.nn.Parameter),
            "storage": self.storages.setdefault(key, len(self.storages)),
        }
        flat = t.detach().reshape(-1)
        if t.dtype.is_floating_point:
            out["bits"] = f32_bits(flat.float().tolist())
        else:
            out["ints"] = [int(v) for v in flat.tolist()]
        return out

    def __call__(self, x):
        if isinstance(x, torch.Tensor):
            return self.tensor(x)
        if x is None or isinstance(x, (bool, int, str)):
            return x
        if isinstance(x, float):
            return x
        if isinstance(x, (bytes, bytearray)):
            return {"bytes": bytes(x).hex()}
        if isinstance(x, list):
            return {"list": [self(v) for v in x]}
        if isinstance(x, tuple):
            return {"tuple": [self(v) for v in x]}
        if isinstance(x, collections.defaultdict):
            return {"object": "collections.defaultdict", "args": [self(x.default_factory)],
                    "items": [[self(k), self(v)] for k, v in x.items()]}
        if isinstance(x, collections.Counter):
            return {"object": "collections.Counter", "args": [{"dict": [[self(k), self(v)] for k, v in x.items()]}]}
        if type(x) in (dict, collections.OrderedDict):
            out = {"dict": [[self(k), self(v)] for k, v in x.items()]}
            if type(x) is collections.OrderedDict and vars(x):
                out["attrs"] = {k: self(v) for k, v in vars(x).items()}
            return out
        if isinstance(x, (set, frozenset)):
            return {"object": "builtins." + type(x).__name__, "set": [self(v) for v in x]}
        if isinstance(x, functools.partial):
            return {"object": "functools.partial", "args": [self(x.func)],
                    "state": {"tuple": [self(x.func), {"tuple": [self(a) for a in x.args]},
                                        {"dict": [[k, self(v)] for k, v in x.keywords.items()]} if x.keywords else None,
                                        None]}}
        if isinstance(x, (type, types.FunctionType, types.BuiltinFunctionType)):
            return {"global": x.__module__ + "." + x.__qualname__}
        return {"object": type(x).__module__ + "." + type(x).__qualname__,
                "attrs": {k: self(v) for k, v in vars(x).items()}}


def write_json(name, value):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(value, f, indent=1, sort_keys=False)
        f.write("\n")


def same(a, b):
    """True when two readings are equal (tensors by dtype, shape, strides and values)."""
    return json.dumps(Encoder()(a)) == json.dumps(Encoder()(b))


# --- 1. A state dict of every dtype the converter meets, zip and legacy (and zip64, repacked).
def state():
    torch.manual_seed(1)
    linear = torch.nn.Linear(3, 2)
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 8
    shared = torch.linspace(-1, 1, 10)
    return {
        "linear": linear.state_dict(),  # an OrderedDict with _metadata
        "f32": torch.tensor([[0.5, -1.25, 3.0], [1e-30, 6.5e4, -0.0]]),
        "f16": torch.tensor([1.0, -2.5, 65504.0, 6e-8, 1e-5, float("inf"), float("nan"), -0.0], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -2.5, 3.0e38, 1e-40, float("-inf"), 0.1], dtype=torch.bfloat16),
        "f64": torch.tensor([0.1, 1e-50, -3.5, 1e300], dtype=torch.float64),
        "i64": torch.tensor([[0, -1, 2**62], [7, -2**63, 42]], dtype=torch.int64),
        "i32": torch.tensor([1, -2, 2**31 - 1], dtype=torch.int32),
        "u8": torch.tensor([0, 255, 7], dtype=torch.uint8),
        "flags": torch.tensor([True, False, True]),
        "transposed": base.t(),  # strides (1, 4): not contiguous
        "shared_head": shared[:4],  # the same storage as the next two
        "shared_tail": shared[6:],  # offset 6
        "shared_2d": shared[2:8].view(2, 3),  # offset 2
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
        "param": torch.nn.Parameter(torch.tensor([[1.5, -0.5]])),
        "frozen": torch.nn.Parameter(torch.tensor([3.0]), requires_grad=False),
        "step": 1234,
    }


# --- 2. A whole nn.Module saved (its class by name; in the legacy format as a persistent id).
class Tiny(torch.nn.Module):
    def __init__(self, depth=1):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(-1, 1, 6).reshape(2, 3))
        self.register_buffer("steps", torch.tensor([3 + depth]))
        self.child = Tiny(depth - 1) if depth else None


Tiny.__module__ = "onmt.tiny"
sys.modules["onmt"] = types.ModuleType("onmt")
sys.modules["onmt.tiny"] = types.ModuleType("onmt.tiny")
sys.modules["onmt.tiny"].Tiny = Tiny
# The legacy format stores each module class's source to compare at load; a class of a fake module has none.
warnings.filterwarnings("ignore", message="Couldn't retrieve source code")


def module():
    return Tiny()


# --- 3. The objects checkpoints carry: options, vocabularies, counters, a custom class.
def objects():
    tokens = "the cat sat on the mat the end".split()
    opt = argparse.Namespace(model_type="text", rnn_size=512, dropout=0.3, bridge=False, copy_attn=True,
                             layers=[2, 2], src_word_vec_size=None, learning_rate=1.0, label="Grüße ✓")
    ordered = collections.OrderedDict([("b", 1), ("a", [1, 2.5, "x"]), (3, None)])
    dd = collections.defaultdict(int, {"x": 1, "y": 2})
    shared = ["shared", "list"]
    return {
        "opt": opt,
        "ordered": ordered,
        "defaultdict": dd,
        "counter": collections.Counter("abracadabra"),
        "vocab": Vocab(tokens),
        "partial": functools.partial(int, base=2),
        "ints": [0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**31, 2**40, -2**40, 2**63 - 1, -2**63],
        "floats": [0.0, -0.0, 1.5, 1e-300, 1e300, 0.1],
        "text": ["", "ascii", "Grüße ✓ 日本語 🙂", "x" * 300],
        "bytes": b"\x00\x01\xff abc",
        "bytearray": bytearray(b"\x10\x20"),
        "empty_bytes": b"",
        "tuples": ((), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)),
        "set": {1, 2, 3},
        "frozenset": frozenset({7}),
        "nested": {"a": {"b": {"c": [[[1]]]}}, (1, "k"): "tuple key", 5: "int key", None: "none key"},
        "twice": [shared, shared],  # memo: one list, referenced twice
        "none": None,
        "true": True,
        "false": False,
        "class": Vocab,
        "function": _default_unk_index,
        "builtin_type": int,
    }


def save_zip64(src, dst):
    """Repacks a zip archive as zip64 (64-bit sizes and offsets in zip64 extra fields and a zip64
    end of central directory), as torch.save writes checkpoints beyond 4 GB."""
    z = zipfile.ZipFile(src)
    out, central = bytearray(), bytearray()
    for info in z.infolist():
        data = z.read(info.filename)
        name = info.filename.encode()
        offset = len(out)
        crc = zipfile.crc32(data)
        extra = struct.pack("<HHQQ", 1, 16, len(data), len(data))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                           len(name), len(extra)) + name + extra + data
        cextra = struct.pack("<HHQQQ", 1, 24, len(data), len(data), offset)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0, crc, 0xFFFFFFFF,
                               0xFFFFFFFF, len(name), len(cextra), 0, 0, 0, 0, 0xFFFFFFFF) + name + cextra
    cd_offset, count = len(out), len(z.infolist())
    out += central
    eocd64 = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, len(central), cd_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    with open(dst, "wb") as f:
        f.write(out)


# --- 4. Bad files.
class BadOffset:
    """Pickles as a tensor whose offset lies beyond its storage (torch.save cannot write one)."""

    def __init__(self, storage):
        self.storage = storage

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2,
                (self.storage, 1000, (2,), (1,), False, collections.OrderedDict()))


def write_bad_files():
    # data.pkl deflated instead of stored.
    src = zipfile.ZipFile(os.path.join(HERE, "state.pt"))
    with zipfile.ZipFile(os.path.join(HERE, "bad_compressed.pt"), "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            z.writestr(info.filename, src.read(info.filename))
    # A pickle with an opcode no protocol has (0xff), in a checkpoint zip.
    with zipfile.ZipFile(os.path.join(HERE, "bad_opcode.pt"), "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00(X\x01\x00\x00\x00a\xff.")
        z.writestr("archive/version", b"3\n")
    torch.save({"w": BadOffset(torch.zeros(4).storage())}, os.path.join(HERE, "bad_offset.pt"))
    try:
        torch.load(os.path.join(HERE, "bad_offset.pt"))
        raise SystemExit("bad_offset.pt loads in Python")
    except RuntimeError:
        pass


# --- 5. What torch 1.13 cannot write: _rebuild_tensor_v3 on an UntypedStorage (torch >= 2.1, for
# dtypes without a typed storage) and two dtypes on one storage key. The pickle is written with
# torch's persistent ids by hand; the expected values come from the bytes written.
class StorageRef:
    def __init__(self, storage_type, numel):
        self.storage_type, self.numel = storage_type, numel


class IdPickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, StorageRef):
            return ("storage", obj.storage_type, "0", "cpu", obj.numel)
        return None


class Rebuild:
    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def write_v3():
    def _rebuild_tensor_v3(*args):
        raise RuntimeError("a stand-in")
    _rebuild_tensor_v3.__module__, _rebuild_tensor_v3.__qualname__ = "torch._utils", "_rebuild_tensor_v3"
    torch._utils._rebuild_tensor_v3 = _rebuild_tensor_v3  # so that pickle finds it by name
    values = torch.tensor([1.0, -2.0, 0.5, 65504.0], dtype=torch.float16)
    hooks = collections.OrderedDict()
    obj = {
        "v3": Rebuild(_rebuild_tensor_v3, (StorageRef(torch.UntypedStorage, 8), 1, (3,), (1,), False, hooks, torch.float16)),
        "subclass": Rebuild(torch._tensor._rebuild_from_type_v2, (
            torch._utils._rebuild_tensor_v2, torch.Tensor,
            (StorageRef(torch.HalfStorage, 4), 2, (2,), (1,), True, hooks), {})),
    }
    buf = io.BytesIO()
    IdPickler(buf, protocol=2).dump(obj)
    for name, order in (("v3.pt", b"little"), ("bad_byteorder.pt", b"big")):
        with zipfile.ZipFile(os.path.join(HERE, name), "w", zipfile.ZIP_STORED) as z:
            z.writestr("v3/data.pkl", buf.getvalue())
            z.writestr("v3/byteorder", order)
            z.writestr("v3/data/0", values.view(torch.uint8).numpy().tobytes())
            z.writestr("v3/version", b"3\n")
    enc = Encoder()
    v3, subclass = values[1:], values[2:].clone().requires_grad_(True)
    expected = {"dict": [["v3", enc(v3)], ["subclass", enc(subclass)]]}
    expected["dict"][1][1].update(offset=2, storage=expected["dict"][0][1]["storage"])
    write_json("v3.json", expected)


# --- 6. safetensors, written by hand (Debian has no python3-safetensors): the format is an 8-byte
# little-endian header length, a JSON header, then the tensors' bytes.
def write_safetensors():
    tensors = {
        "encoder.weight": torch.tensor([[0.25, -1.0, 2.0], [4.0, 1e-20, -0.0]]),
        "half": torch.tensor([1.0, -0.5, 65504.0, 1e-7], dtype=torch.float16),
        "brain": torch.tensor([1.0, -3.0e38, 0.1], dtype=torch.bfloat16),
        "double": torch.tensor([0.1, -2.0], dtype=torch.float64),
        "ids": torch.tensor([3, -1, 2**40], dtype=torch.int64),
        "scalar": torch.tensor(7.0),
    }
    codes = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
             torch.int64: "I64"}
    header, data = {"__metadata__": {"format": "pt", "source": "make.py"}}, bytearray()
    for name, t in tensors.items():
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(HERE, "tensors.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    enc = Encoder()
    write_json("tensors.json", {"metadata": header["__metadata__"], "tensors": {k: enc(v) for k, v in tensors.items()}})


def main():
    path = lambda name: os.path.join(HERE, name)
    torch.save(state(), path("state.pt"))
    torch.save(state(), path("state_legacy.pt"), _use_new_zipfile_serialization=False)
    save_zip64(path("state.pt"), path("state_zip64.pt"))
    reading = torch.load(path("state.pt"))
    for other in ("state_legacy.pt", "state_zip64.pt"):
        assert same(torch.load(path(other)), reading), other
    assert reading["shared_head"].storage().data_ptr() == reading["shared_tail"].storage().data_ptr()
    write_json("state.json", Encoder()(reading))

    torch.save(module(), path("module.pt"))
    torch.save(module(), path("module_legacy.pt"), _use_new_zipfile_serialization=False)
    reading = torch.load(path("module.pt"))
    assert same(torch.load(path("module_legacy.pt")), reading)
    write_json("module.json", Encoder()(reading))

    torch.save(objects(), path("objects.pt"))
    reading = torch.load(path("objects.pt"))
    for protocol in (2, 3, 4, 5):
        name = "objects_p%d.pkl" % protocol
        with open(path(name), "wb") as f:
            pickle.dump(objects(), f, protocol=protocol)
        with open(path(name), "rb") as f:
            assert same(pickle.load(f), reading), name
    write_json("objects.json", Encoder()(reading))

    write_bad_files()
    write_v3()
    write_safetensors()


if __name__ == "__main__":
    main()
