#!/usr/bin/env python3
"""Re-save an OpenNMT-py 2.3 checkpoint (fixture onmt_brnn_lstm_general) in the
OpenNMT-py 3.x checkpoint layout, using OpenNMT-py 3.5.1's OWN code for every
step that defines the layout:

  * opt:   3.5.1's option parser (onmt.opts.train_opts) on CONFIG3 (the fixture's
           training config in 3.x option names), then the same validate/update calls
           as 3.5.1's onmt/bin/train.py + train_single._init_train
           (validate_train_opts, update_model_opts, validate_model_opts,
           validate_prepare_opts); saved as model_opt, exactly as ModelSaver does;
  * vocab: the 2.3 checkpoint's torchtext itos lists turned into pyonmttok vocabs
           the way 3.5.1's tools/convertv2_v3.py does (build_vocab_from_tokens(itos,
           maximum_size=0, minimum_frequency=1), default_id = <unk>), so that the
           embedding rows keep their meaning; data_task / decoder_start_token from opt;
           stored by 3.5.1's vocabs_to_dict;
  * model: 3.5.1's build_base_model(opt, vocabs) (generator = nn.Linear, tied to the
           decoder embedding by share_decoder_embeddings), filled with the 2.3 weights
           through 3.5.1's BaseModel.load_state_dict (generator "0.weight"/"0.bias"
           -> "weight"/"bias", the v2 fix-up of 3.5.1's load_checkpoint);
  * save:  3.5.1's ModelSaver._save (save_format pytorch) and ModelSaver._st_save
           (save_format safetensors), then 3.5.1's release_model logic
           (checkpoint["optim"] = None).

Needs PYTHONPATH = onmt3_shims : OpenNMT-py-3.5.1 tree : torchtext-0.5.0 (the
latter only to unpickle the 2.3 checkpoint's torchtext Fields).

    onmt_to_v3.py -v2model F1/model.pt -config CONFIG3.yaml -step 2000 \
                  -out_pt OUT4/model.pt -out_st_dir OUT5 [-notes NOTES.json]
"""
import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import types

import torch
import torch.nn.functional as F

# --- torch 1.13 lacks F.scaled_dot_product_attention, imported at module level by
# onmt/modules/multi_headed_attn.py (Transformer only; never called for RNN models).
if not hasattr(F, "scaled_dot_product_attention"):
    def _sdpa_unavailable(*args, **kwargs):
        raise NotImplementedError("scaled_dot_product_attention needs torch >= 2.0")
    F.scaled_dot_product_attention = _sdpa_unavailable

import onmt  # noqa: E402  (OpenNMT-py 3.5.1)
from onmt.opts import train_opts  # noqa: E402
from onmt.utils.parse import ArgumentParser  # noqa: E402
from onmt.constants import DefaultTokens  # noqa: E402
from onmt.model_builder import build_base_model  # noqa: E402
from onmt.models.model_saver import ModelSaver  # noqa: E402
from onmt.utils.optimizers import Optimizer  # noqa: E402
from onmt.inputters.inputter import vocabs_to_dict  # noqa: E402
import pyonmttok  # noqa: E402  (stub, see onmt3_shims/pyonmttok)
import safetensors.torch  # noqa: E402  (stub, see onmt3_shims/safetensors)


# --- unpickling the 2.3 checkpoint: its vocab holds onmt.inputters.text_dataset
# objects (module gone in 3.x). Ghost that module while loading, as 3.5.1's
# tools/convertv2_v3.py does (imp.load_source). (Debian's torch 1.13.1 torch.load
# ignores a custom pickle_module, so a module stand-in in sys.modules it is.)
class TextMultiField:  # 2.x onmt.inputters.text_dataset.TextMultiField (state only)
    pass


def _feature_tokenize(*args, **kwargs):  # referenced by the pickled Fields
    return None


def load_v2(path):
    ghost = types.ModuleType("onmt.inputters.text_dataset")
    ghost.TextMultiField = TextMultiField
    ghost._feature_tokenize = _feature_tokenize
    name = "onmt.inputters.text_dataset"
    saved = sys.modules.get(name)
    sys.modules[name] = ghost
    try:
        ck = torch.load(path, map_location="cpu")
    finally:
        if saved is None:
            del sys.modules[name]
        else:
            sys.modules[name] = saved
    itos = {}
    for side in ("src", "tgt"):
        mf = ck["vocab"][side]
        _name, field = mf.fields[0]
        itos[side] = list(field.vocab.itos)
    return ck, itos


def build_v3_opt(config):
    parser = ArgumentParser(description="train.py")
    train_opts(parser)
    opt, _unknown = parser.parse_known_args(["-config", config])
    # onmt/bin/train.py train()
    ArgumentParser.validate_train_opts(opt)
    ArgumentParser.update_model_opts(opt)
    ArgumentParser.validate_model_opts(opt)
    # onmt/train_single.py _init_train()
    ArgumentParser.validate_prepare_opts(opt)
    return opt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-v2model", required=True)
    ap.add_argument("-config", required=True)
    ap.add_argument("-step", type=int, required=True)
    ap.add_argument("-out_pt", required=True)
    ap.add_argument("-out_st_dir", required=True)
    ap.add_argument("-notes", default=None)
    a = ap.parse_args()
    notes = {"opennmt_py_3x_version": onmt.__version__}

    v2, itos = load_v2(a.v2model)
    opt = build_v3_opt(a.config)

    vocabs = {}
    for side in ("src", "tgt"):
        v = pyonmttok.build_vocab_from_tokens(itos[side], maximum_size=0, minimum_frequency=1)
        v.default_id = v[DefaultTokens.UNK]
        vocabs[side] = v
    vocabs["data_task"] = opt.data_task
    vocabs["decoder_start_token"] = opt.decoder_start_token

    torch.manual_seed(0)
    model = build_base_model(opt, vocabs)
    v2_keys = set(v2["model"].keys())
    v3_keys = {k for k in model.state_dict().keys() if "generator" not in k}
    notes["model_keys_identical_2x_vs_3x"] = v2_keys == v3_keys
    notes["model_keys_only_in_2x"] = sorted(v2_keys - v3_keys)
    notes["model_keys_only_in_3x"] = sorted(v3_keys - v2_keys)
    notes["generator_keys_2x"] = sorted(v2["generator"].keys())
    notes["generator_keys_3x"] = sorted(model.generator.state_dict().keys())
    # 3.5.1 load_checkpoint's "fix v2 compatibility" renames 0.weight/0.bias
    gen = {("weight" if k == "0.weight" else "bias" if k == "0.bias" else k): t
           for k, t in v2["generator"].items()}
    model.load_state_dict({"model": dict(v2["model"]), "generator": gen}, strict=True)
    model.eval()

    optim = Optimizer.from_opt(model, opt, checkpoint=None)

    with tempfile.TemporaryDirectory() as td:
        # ---- pytorch format (ModelSaver._save) -> release (optim = None)
        base = os.path.join(td, "pt", "model")
        os.makedirs(os.path.dirname(base))
        saver = ModelSaver(base, model, opt, vocabs, optim, keep_checkpoint=-1,
                           save_format="pytorch", device_id=-1)
        ckpt_path, _ = saver._save(a.step, model)
        ck = torch.load(ckpt_path, map_location="cpu")
        ck["optim"] = None  # onmt/bin/release_model.py (3.5.1), format pytorch
        os.makedirs(os.path.dirname(os.path.abspath(a.out_pt)), exist_ok=True)
        torch.save(ck, a.out_pt)
        notes["pt_top_level_keys"] = list(ck.keys())

        # ---- safetensors format (ModelSaver._st_save)
        base = os.path.join(td, "st", "model")
        os.makedirs(os.path.dirname(base))
        # the opt a 3.5.1 training run with `save_format: safetensors` would store
        opt_st = copy.deepcopy(opt)
        opt_st.save_format = "safetensors"
        saver = ModelSaver(base, model, opt_st, vocabs, optim, keep_checkpoint=-1,
                           save_format="safetensors", device_id=-1)
        try:
            saver._st_save(a.step, model)
            notes["st_save_with_reference_semantics"] = "ok"
        except RuntimeError as e:  # what the real safetensors package does with tied weights
            notes["st_save_with_reference_semantics"] = "RuntimeError: " + str(e)
            real = safetensors.torch.save_file
            safetensors.torch.save_file = lambda t, f, metadata=None: real(t, f, metadata, allow_shared=True)
            try:
                saver._st_save(a.step, model)
            finally:
                safetensors.torch.save_file = real
        st_pt = f"{base}_step_{a.step}.pt"
        st_w = f"{base}_step_{a.step}.safetensors"
        ck = torch.load(st_pt, map_location="cpu")
        ck["optim"] = None
        os.makedirs(a.out_st_dir, exist_ok=True)
        # names: model.pt + model.00.safetensors = what 3.5.1's load_test_model finds
        # (it globs "<model path without .pt>.*.safetensors"); ModelSaver itself writes
        # <save_model>_step_<N>.pt + <save_model>_step_<N>.safetensors (no shard number).
        torch.save(ck, os.path.join(a.out_st_dir, "model.pt"))
        shutil.copyfile(st_w, os.path.join(a.out_st_dir, "model.00.safetensors"))
        notes["st_pt_top_level_keys"] = list(ck.keys())
        with safetensors.safe_open(st_w, framework="pt") as f:
            notes["st_tensor_keys"] = f.keys()

    if a.notes:
        with open(a.notes, "w") as f:
            json.dump(notes, f, indent=1)
    json.dump(notes, sys.stderr, indent=1)


if __name__ == "__main__":
    main()
