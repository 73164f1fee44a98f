#!/usr/bin/env python3
"""Prepare a Joey NMT 2.3 fixture directory from a finished training run.

    joey_release.py MODEL_DIR STEP FIXDIR [--spm SPM_MODEL]

* checkpoint: MODEL_DIR/<STEP>.ckpt loaded with torch.load, the optimizer / lr
  scheduler / AMP scaler states removed (keys optimizer_state, scheduler_state,
  scaler_state, when present), everything else kept as Joey wrote it
  (model_state, train_iter_state, stats_state), torch.save'd (torch 1.13 zip
  format) as FIXDIR/best.ckpt (a real file, not Joey's symlink);
* vocabularies: MODEL_DIR/src_vocab.txt, trg_vocab.txt copied (Joey writes them
  with Vocabulary.to_file: one token per line, line i = index i, specials first);
* config.yaml: the training config Joey copied into MODEL_DIR (config.yaml), with
  the paths rewritten relative to FIXDIR: model_dir ".", testing.load_model
  "best.ckpt", src/trg voc_file "src_vocab.txt"/"trg_vocab.txt", sentencepiece
  model_file "spm.model" (copied there with --spm); data.train/dev become a
  placeholder (Joey requires one data path even for `translate`, which reads stdin).
Run with PYTHONPATH=$JOEY_PYTHONPATH (only torch and yaml are needed).
"""
import argparse
import shutil
from pathlib import Path

import torch
import yaml

STRIP = ("optimizer_state", "scheduler_state", "scaler_state")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("step", type=int)
    ap.add_argument("fixdir")
    ap.add_argument("--spm", default=None)
    a = ap.parse_args()
    md, fx = Path(a.model_dir), Path(a.fixdir)
    fx.mkdir(parents=True, exist_ok=True)

    state = torch.load(md / f"{a.step}.ckpt", map_location="cpu")
    removed = [k for k in STRIP if k in state]
    for k in removed:
        del state[k]
    torch.save(state, fx / "best.ckpt")
    print("kept keys:", list(state.keys()), "removed:", removed)

    for v in ("src_vocab.txt", "trg_vocab.txt"):
        shutil.copyfile(md / v, fx / v)

    cfg = yaml.safe_load(open(md / "config.yaml", encoding="utf-8"))
    cfg["model_dir"] = "."
    cfg["testing"]["load_model"] = "best.ckpt"
    data = cfg["data"]
    for k in ("train", "dev", "test"):
        data.pop(k, None)
    data["test"] = "src"  # placeholder: unused by `translate` (stdin) and by joey_decode.py
    for side, voc in (("src", "src_vocab.txt"), ("trg", "trg_vocab.txt")):
        data[side]["voc_file"] = voc
        tc = data[side].get("tokenizer_cfg")
        if tc and "model_file" in tc:
            tc["model_file"] = "spm.model"
    if a.spm:
        shutil.copyfile(a.spm, fx / "spm.model")
    header = ("# Joey NMT 2.3 config of this fixture: the training config (see\n"
              "# scripts/convert_fixtures/configs/%s.yaml) with paths relative to this directory.\n"
              "# Use from this directory: python -m joeynmt translate config.yaml < src.txt\n"
              "# (data.test is a placeholder: Joey needs one data path; translate reads stdin).\n"
              % cfg.get("name", fx.name))
    with open(fx / "config.yaml", "w", encoding="utf-8") as f:
        f.write(header)
        yaml.safe_dump(cfg, f, sort_keys=False, allow_unicode=True, default_flow_style=None)


if __name__ == "__main__":
    main()
