"""Hand-written stand-in for the `safetensors` package (python3-safetensors is not
in Debian bookworm). Writes/reads the safetensors format as specified by
huggingface/safetensors (README "Format" + safetensors/src/tensor.rs):

  8 bytes  N = little-endian u64, the byte length of the JSON header
  N bytes  UTF-8 JSON object {"__metadata__": {str: str} (optional),
           NAME: {"dtype": "F32", "shape": [...], "data_offsets": [BEGIN, END]}, ...}
           padded with spaces (0x20) so that 8 + N is a multiple of 8
  rest     the raw little-endian tensor bytes, back to back; data_offsets are
           relative to the start of this buffer.

Tensors are laid out as the reference implementation does: sorted by dtype
alignment (descending) then by name; the JSON lists them in data order, compact
separators. Only what OpenNMT-py 3.5.1 uses: safetensors.torch.save_file and
safetensors.safe_open(...).keys()/get_tensor().
"""
import json
import struct

import torch as _torch  # (a bare "torch" would be shadowed by the safetensors.torch submodule)

_DTYPES = {
    _torch.float64: ("F64", 8), _torch.float32: ("F32", 4), _torch.float16: ("F16", 2),
    _torch.bfloat16: ("BF16", 2), _torch.int64: ("I64", 8), _torch.int32: ("I32", 4),
    _torch.int16: ("I16", 2), _torch.int8: ("I8", 1), _torch.uint8: ("U8", 1),
    _torch.bool: ("BOOL", 1),
}
_BY_NAME = {v[0]: k for k, v in _DTYPES.items()}


def _serialize(tensors, metadata=None):
    items = []
    for name, t in tensors.items():
        if not isinstance(t, _torch.Tensor):
            raise ValueError(f"{name} is not a tensor")
        items.append((name, t.detach().cpu().contiguous()))
    items.sort(key=lambda kv: (-_DTYPES[kv[1].dtype][1], kv[0]))
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, off = [], 0
    for name, t in items:
        b = t.numpy().tobytes() if t.dtype != _torch.bfloat16 else t.view(_torch.int16).numpy().tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype][0], "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hj = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    hj += b" " * ((8 - (8 + len(hj)) % 8) % 8)
    return struct.pack("<Q", len(hj)) + hj + b"".join(blobs)


def _parse(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", None)
    return header, meta, memoryview(buf)[8 + n:]


class safe_open:  # noqa: N801 (same name as the real API)
    def __init__(self, filename, framework="pt", device="cpu"):
        assert framework == "pt" and device == "cpu"
        self._header, self._meta, self._data = _parse(filename)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def keys(self):
        return list(self._header.keys())

    def metadata(self):
        return self._meta

    def get_tensor(self, name):
        info = self._header[name]
        b, e = info["data_offsets"]
        dt = _BY_NAME[info["dtype"]]
        raw = bytearray(self._data[b:e])
        if dt == _torch.bfloat16:
            return _torch.frombuffer(raw, dtype=_torch.int16).view(_torch.bfloat16).reshape(info["shape"]).clone()
        return _torch.frombuffer(raw, dtype=dt).reshape(info["shape"]).clone()
