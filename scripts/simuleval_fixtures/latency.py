"""Recorded delays scored by SimulEval's own latency scorers (run by make.sh, which sets PYTHONPATH).

--write-log DIR   writes DIR/instances.log (the cases below, in SimulEval's log format) and config.yaml
--score DIR       scores DIR/instances.log with SimulEval's scorers on its LogInstance (what
                  `simuleval --score-only` builds), every metric per instance and per corpus, not
                  rounded, and checks the corpus figures against what SimulEval's CLI printed
                  (DIR/score_only.txt); writes DIR/expected.json.
"""
import argparse
import json
import math
from pathlib import Path

# (source words, reference, delays): a target word's delay = source words read when it was written.
CASES = [
    # wait-2-like, as long as the reference
    (6, "a man is riding a bike", [2, 3, 4, 5, 6, 6]),
    # longer than the reference: AL (reference length) and LAAL (the longer) differ
    (5, "two dogs are playing", [1, 2, 2, 3, 4, 5, 5]),
    # an empty output: no delays, left out of every latency mean
    (4, "a girl in pink", []),
    # shorter than the reference
    (8, "a group of people stand in front of a building", [3, 3, 5, 8, 8]),
    # full-sentence: everything read before the first word
    (4, "the dog runs fast now", [4, 4, 4, 4, 4]),
    # a reference with a double space: SimulEval counts reference.split(" ") (4 here)
    (3, "a  dog runs", [1, 2, 3]),
    # a first delay past the source length: AL and LAAL return it (SimulEval's guard)
    (5, "a b c", [7, 7, 7]),
    # a source over 300 words: ATD splits a chunk into tokens of 300
    (320, "w1 w2 w3 w4 w5 w6", [301, 305, 310, 320, 320]),
    # one word
    (3, "yes", [3]),
    # chunks of several words written at once, interleaved with reads
    (9, "one two three four five six seven eight", [2, 2, 2, 5, 6, 6, 9, 9]),
]


def write_log(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "instances.log", "w") as f:
        for index, (source_length, reference, delays) in enumerate(CASES):
            words = [f"t{i}" for i in range(len(delays))]
            source = " ".join(f"s{i}" for i in range(source_length))
            record = {
                "index": index,
                "prediction": " ".join(words),
                "delays": delays,
                "elapsed": [0] * len(delays),
                "prediction_length": len(words),
                "reference": reference,
                "source": source,
                "source_length": source_length,
            }
            f.write(json.dumps(record) + "\n")
    (out / "config.yaml").write_text("source_type: text\ntarget_type: text\n")


def score(out: Path, commit: str) -> None:
    from simuleval.evaluator.instance import LogInstance, TextInputInstance

    class TextInput(TextInputInstance):
        """What its ATD scorer sees in a live text-to-text run: a text-input instance (delays only)."""

        def __init__(self, delays):
            self.delays = delays
    from simuleval.evaluator.scorers.latency_scorer import (
        ALScorer, APScorer, ATDScorer, DALScorer, LAALScorer)

    def load():
        with open(out / "instances.log") as f:
            return {i: LogInstance(line.strip(), "word") for i, line in enumerate(f)}

    scorers = {
        "AL": ALScorer(use_ref_len=True),
        "AL_STACL": ALScorer(use_ref_len=False),
        "LAAL": LAALScorer(use_ref_len=True),
        "AP": APScorer(use_ref_len=True),
        "DAL": DALScorer(use_ref_len=True),
        "ATD": ATDScorer(use_ref_len=True),
    }
    corpus = {name: scorer(load()) for name, scorer in scorers.items()}
    corpus["ATD_text"] = ATDScorer()({i: TextInput(ins.delays) for i, ins in load().items()})
    instances = []
    for i, ins in load().items():
        entry = {"index": ins.index, "reference_length": ins.reference_length, "metrics": {}}
        if ins.delays:
            for name, scorer in scorers.items():
                # ATD scores a dict whose key 0 decides the instance type: one instance at a time
                entry["metrics"][name] = scorer({0: LogInstance(json.dumps(ins.info), "word")})
            entry["metrics"]["ATD_text"] = ATDScorer()({0: TextInput(ins.delays)})
        instances.append(entry)

    # The CLI's figures (3 places) must be these.
    header, values = (out / "score_only.txt").read_text().strip().split("\n")
    printed = dict(zip(header.split(), values.split()[1:]))  # values: the row's index first
    for name in ["AL", "LAAL", "AP", "DAL", "ATD"]:
        assert math.isclose(float(printed[name]), round(corpus[name], 3), abs_tol=1e-9), (name, printed, corpus)

    expected = {
        "simuleval_commit": commit,
        "latency_unit": "word",
        "corpus": corpus,
        "instances": instances,
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write-log", type=Path)
    parser.add_argument("--score", type=Path)
    parser.add_argument("--commit", default="")
    args = parser.parse_args()
    if args.write_log:
        write_log(args.write_log)
    if args.score:
        score(args.score, args.commit)


if __name__ == "__main__":
    main()
