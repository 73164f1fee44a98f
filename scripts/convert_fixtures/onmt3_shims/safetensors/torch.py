"""safetensors.torch stand-in (see safetensors/__init__.py).

save_file keeps the reference library's refusal of tensors that share memory
(safetensors.torch._flatten raises RuntimeError "Some tensors share memory ...")
unless allow_shared=True is passed (a stub-only switch, used by
scripts/convert_fixtures/onmt_to_v3.py to write the tied weights as two copies).
"""
from . import _serialize, safe_open


def _shared_groups(tensors):
    by_ptr = {}
    for k, v in tensors.items():
        if v.numel() == 0:
            continue
        key = (v.device, v.storage().data_ptr(), v.storage().size())
        by_ptr.setdefault(key, []).append(k)
    return [sorted(v) for v in by_ptr.values() if len(v) > 1]


def save_file(tensors, filename, metadata=None, allow_shared=False):
    failing = _shared_groups(tensors)
    if failing and not allow_shared:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and potential "
            f"differences when loading them again: {failing}.")
    data = _serialize({k: (v.clone() if failing else v) for k, v in tensors.items()}, metadata)
    with open(filename, "wb") as f:
        f.write(data)


def save(tensors, metadata=None):
    return _serialize(tensors, metadata)


def load_file(filename, device="cpu"):
    with safe_open(filename, framework="pt", device=device) as f:
        return {k: f.get_tensor(k) for k in f.keys()}
