"""A training run's log.jsonl for the scripts: the records of src/io/train_log.h, by type.

read_log(path) -> {"start": [...], "train": [...], "valid": [...], "test": [...]}, each a list of
dicts in file order. Like attnmt's own reader (read_train_log), it skips a line that does not
parse (a run killed mid-write) and records of another type.
"""
import json

TYPES = ("start", "train", "valid", "test")


def read_log(path):
    records = {t: [] for t in TYPES}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and r.get("type") in records:
                records[r["type"]].append(r)
    return records


def finished(path):
    """Whether the run ended with its test-set record (data.test translated by best.pt)."""
    try:
        return bool(read_log(path)["test"])
    except OSError:
        return False
